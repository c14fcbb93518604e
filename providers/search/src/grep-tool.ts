// grep: lines matching a regular expression, in files under a directory.
import { closeSync, readSync } from "node:fs";
import { stat } from "node:fs/promises";
import type { JsonObject } from "@bufbuild/protobuf";
import { type Jail, r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { fileFilter } from "./glob.ts";
import { namer, searchTarget, settings, walkSearchPath } from "./state.ts";
import type { Entry } from "./walk.ts";

const DEFAULT_MAX_RESULTS = 100;
const MAX_RESULTS = 2000;
const MAX_CONTEXT = 10;
const MAX_LINE_CHARS = 500;
/** Longest stretch of synchronous file reading before yielding to the event loop. */
const SLICE_MS = 10;

/**
 * The file's bytes, or undefined when it cannot be read or is larger than `max`. Opened
 * once through the jail (no link followed, the descriptor checked to be `path`, one hard
 * link), read from that descriptor; `strict` throws the jail's refusal instead.
 */
function readSmallFile(jail: Jail, path: string, max: number, strict = false): Buffer | undefined {
  let fd: number;
  let size: number;
  try {
    const opened = jail.openForReadSync(path);
    fd = opened.fd;
    size = opened.stat.size;
    if (!opened.stat.isFile()) {
      closeSync(fd);
      return undefined;
    }
  } catch (err) {
    if (strict && err instanceof ToolFailure) throw err;
    return undefined;
  }
  try {
    if (size > max) return undefined;
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

type Mode = "content" | "files_with_matches" | "count";

interface GrepArgs {
  pattern: string;
  path?: string;
  glob?: string;
  case_insensitive?: boolean;
  literal?: boolean;
  context_lines?: number;
  output_mode?: Mode;
  max_results?: number;
  include_ignored?: boolean;
}

interface Match {
  path: string;
  line: number;
  text: string;
  before?: string[];
  after?: string[];
}

/** The results as grep prints them (context lines with "-", groups apart by "--"). */
export function grepText(
  mode: Mode,
  matches: readonly Match[],
  files: readonly { path: string; count: number }[],
): string {
  if (mode === "files_with_matches") return files.map((f) => f.path).join("\n");
  if (mode === "count") return files.map((f) => `${f.path}:${f.count}`).join("\n");
  const withContext = matches.some((m) => (m.before?.length ?? 0) + (m.after?.length ?? 0) > 0);
  const groups = matches.map((m) => {
    const lines = (m.before ?? []).map((t, i, all) => `${m.path}-${m.line - all.length + i}-${t}`);
    lines.push(`${m.path}:${m.line}:${m.text}`);
    for (const [i, t] of (m.after ?? []).entries()) lines.push(`${m.path}-${m.line + i + 1}-${t}`);
    return lines.join("\n");
  });
  return groups.join(withContext ? "\n--\n" : "\n");
}

function clip(line: string): string {
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
}

function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

export const grepTool: ToolDefinition<GrepArgs> = {
  name: "grep",
  kind: "data_source",
  risk: "read_only",
  description:
    "Search file contents with a JavaScript regular expression (literal: plain text). output_mode: content (matching lines, numbered; the default), files_with_matches or count. Skips .gitignored and binary files unless include_ignored.",
  input: s.object(
    {
      pattern: s.string(),
      path: s.string(),
      glob: s.string('File filter, e.g. "*.ts".'),
      case_insensitive: s.boolean(),
      literal: s.boolean(),
      context_lines: s.integer(`Lines around each match (at most ${MAX_CONTEXT}).`),
      output_mode: s.string(undefined, ["content", "files_with_matches", "count"]),
      max_results: s.integer(`Default ${DEFAULT_MAX_RESULTS}.`),
      include_ignored: s.boolean(),
    },
    ["pattern"],
  ),
  output: s.object(
    {
      mode: s.string("The output mode used.", ["content", "files_with_matches", "count"]),
      matches: s.array(
        s.object(
          {
            path: s.string(),
            line: s.integer("1-based line number."),
            text: s.string("The matching line (long lines shortened)."),
            before: s.array(s.string(), "Context lines before."),
            after: s.array(s.string(), "Context lines after."),
          },
          ["path", "line", "text"],
        ),
        "content mode: matching lines in file order.",
      ),
      files: s.array(
        s.object({ path: s.string(), count: s.integer("Matching lines in the file.") }, ["path", "count"]),
        "files_with_matches and count modes: files with at least one match.",
      ),
      total_matches: s.integer("Matching lines found in the files searched."),
      files_searched: s.integer("Files whose content was searched."),
      truncated: s.boolean("More results existed than were returned; the search stopped early."),
      output: s.string(
        "The results as grep prints them: 'path:line:text' per match (context lines 'path-line-text', " +
          "groups apart by '--'), 'path' per file, or 'path:count'.",
      ),
    },
    ["mode", "total_matches", "files_searched", "truncated", "output"],
  ),
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 60_000,
  idempotent: true,
  // The model reads grep's own text; the structured lists stay in the payload for frontends.
  modelText: { field: "output", omit: ["matches", "files"] },

  async invoke(args, ctx) {
    const mode: Mode = args.output_mode ?? "content";
    const maxResults = args.max_results ?? DEFAULT_MAX_RESULTS;
    const context = args.context_lines ?? 0;
    if (args.pattern === "") throw new ToolFailure("invalid_arguments", "pattern is empty");
    if (maxResults < 1 || maxResults > MAX_RESULTS) {
      throw new ToolFailure("invalid_arguments", `max_results must be 1..${MAX_RESULTS}`);
    }
    if (context < 0 || context > MAX_CONTEXT)
      throw new ToolFailure("invalid_arguments", `context_lines must be 0..${MAX_CONTEXT}`);
    let re: RegExp;
    try {
      re = new RegExp(
        args.literal ? escapeRegExp(args.pattern) : args.pattern,
        args.case_insensitive ? "i" : "",
      );
    } catch (err) {
      throw new ToolFailure("invalid_arguments", `invalid regular expression: ${(err as Error).message}`);
    }
    // Whole-file pre-check: a file without a match anywhere is not split into lines.
    const anywhere = new RegExp(re.source, `${re.flags}m`);
    const target = await searchTarget(args.path, ctx.workingDirectory);
    const { maxFileBytes } = settings();
    let files: Entry[];
    let walkCapped = false;
    if ((await stat(target.real)).isDirectory()) {
      const w = await walkSearchPath(target, args.include_ignored === true, ctx.signal);
      walkCapped = w.capped;
      const prefix = target.relative ? `${target.relative}/` : "";
      const keep = args.glob ? fileFilter(args.glob) : () => true;
      files = w.entries.filter((e) => e.kind === "file" && keep(e.rel.slice(prefix.length)));
    } else {
      // A file named on its own: a refusal (several hard links, a link swapped in) is the answer.
      readSmallFile(settings().jail, target.real, 0, true);
      files = [{ rel: target.relative, abs: target.real, kind: "file" }];
    }
    const name = await namer(ctx.workingDirectory);

    const perFile: (Match[] | number | undefined)[] = new Array(files.length);
    let searched = 0;
    let totalMatches = 0;
    const searchOne = (i: number): number => {
      const f = files[i]!;
      const data = readSmallFile(settings().jail, f.abs, maxFileBytes);
      if (!data) return 0;
      if (data.subarray(0, 8192).includes(0)) return 0; // binary
      searched++;
      const text = data.toString("utf8");
      if (!anywhere.test(text)) return 0;
      const lines = text.split("\n");
      const found: Match[] = [];
      let count = 0;
      for (let n = 0; n < lines.length; n++) {
        const line = lines[n]!.endsWith("\r") ? lines[n]!.slice(0, -1) : lines[n]!;
        if (!re.test(line)) continue;
        count++;
        if (mode === "content") {
          found.push({
            path: name(f.abs),
            line: n + 1,
            text: clip(line),
            ...(context > 0
              ? {
                  before: lines.slice(Math.max(0, n - context), n).map(clip),
                  after: lines.slice(n + 1, n + 1 + context).map(clip),
                }
              : {}),
          });
        }
      }
      if (count === 0) return 0;
      totalMatches += count;
      perFile[i] = mode === "content" ? found : count;
      return mode === "content" ? found.length : 1;
    };
    // Files in order; once those searched hold more results than can be returned,
    // later files cannot change the answer (except in count mode). Reads are
    // synchronous (ten times faster than the thread pool for small files) in slices,
    // yielding between slices so other calls and cancellation are served.
    let stopAt = files.length;
    let results = 0;
    let sliceStart = performance.now();
    for (let i = 0; i < files.length; i++) {
      if (performance.now() - sliceStart > SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        if (ctx.signal.aborted) break;
        sliceStart = performance.now();
      }
      results += searchOne(i);
      if (mode !== "count" && results > maxResults) {
        stopAt = i + 1;
        break;
      }
    }

    const matches: Match[] = [];
    const fileCounts: { path: string; count: number }[] = [];
    let truncated = walkCapped || stopAt < files.length;
    for (let i = 0; i < Math.min(files.length, stopAt); i++) {
      const v = perFile[i];
      if (v === undefined) continue;
      if (typeof v === "number") {
        if (fileCounts.length >= maxResults && mode === "files_with_matches") {
          truncated = true;
          break;
        }
        fileCounts.push({ path: name(files[i]!.abs), count: v });
      } else {
        for (const m of v) {
          if (matches.length >= maxResults) {
            truncated = true;
            break;
          }
          matches.push(m);
        }
        fileCounts.push({ path: name(files[i]!.abs), count: v.length });
      }
    }
    if (mode === "count" && fileCounts.length > maxResults) {
      fileCounts.length = maxResults;
      truncated = true;
    }
    return {
      mode,
      ...(mode === "content" ? { matches: matches as unknown as JsonObject[] } : { files: fileCounts }),
      total_matches: totalMatches,
      files_searched: searched,
      truncated,
      output: grepText(mode, matches, fileCounts),
    };
  },

  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload;
    const matches = (p["matches"] ?? []) as unknown as Match[];
    const files = (p["files"] ?? []) as { path: string; count: number }[];
    const title = `${p["total_matches"]} matches in ${p["files_searched"]} files searched${p["truncated"] ? " (truncated)" : ""}`;
    if (p["mode"] === "content") {
      return r.collapsible(title, [r.code(matches.map((m) => `${m.path}:${m.line}: ${m.text}`).join("\n"))]);
    }
    return r.collapsible(title, [
      r.table(
        ["file", "matches"],
        files.map((f) => [f.path, String(f.count)]),
      ),
    ]);
  },
};
