// glob: files whose path (relative to the search directory) matches a pattern.
import { lstat } from "node:fs/promises";
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { compileGlob } from "./glob.ts";
import { namer, searchTarget, walkSearchPath } from "./state.ts";

const DEFAULT_LIMIT = 200;
const MAX_LIMIT = 2000;

interface GlobArgs {
  pattern: string;
  path?: string;
  sort?: "path" | "modified";
  limit?: number;
  include_ignored?: boolean;
}

export const globTool: ToolDefinition<GlobArgs> = {
  name: "glob",
  kind: "data_source",
  risk: "read_only",
  description:
    'Find files by glob pattern (e.g. "src/**/*.ts") relative to path. Skips .gitignored files unless include_ignored.',
  input: s.object(
    {
      pattern: s.string(),
      path: s.string(),
      sort: s.string(undefined, ["path", "modified"]),
      limit: s.integer(`Default ${DEFAULT_LIMIT}.`),
      include_ignored: s.boolean(),
    },
    ["pattern"],
  ),
  output: s.object(
    {
      files: s.array(
        s.string(),
        "Matching files, relative to the working directory when inside it, else absolute.",
      ),
      total: s.integer("Matching files found (may exceed the returned count)."),
      truncated: s.boolean("More files matched than were returned."),
    },
    ["files", "total", "truncated"],
  ),
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 60_000,
  idempotent: true,
  async invoke(args, ctx) {
    if (args.pattern === "") throw new ToolFailure("invalid_arguments", "pattern is empty");
    if (args.pattern.startsWith("/")) {
      throw new ToolFailure("invalid_arguments", "pattern must be relative; put the directory in path");
    }
    const limit = args.limit ?? DEFAULT_LIMIT;
    if (limit < 1 || limit > MAX_LIMIT)
      throw new ToolFailure("invalid_arguments", `limit must be 1..${MAX_LIMIT}`);
    const target = await searchTarget(args.path, ctx.workingDirectory);
    const st = await lstat(target.real);
    if (!st.isDirectory()) throw new ToolFailure("invalid_arguments", `${args.path} is not a directory`);
    const re = compileGlob(args.pattern);
    const { entries } = await walkSearchPath(target, args.include_ignored === true, ctx.signal);
    const prefix = target.relative ? `${target.relative}/` : "";
    const matched = entries.filter((e) => re.test(e.rel.slice(prefix.length)));
    let ordered = matched;
    if (args.sort === "modified") {
      const times = await Promise.all(
        matched.map((e) =>
          lstat(e.abs).then(
            (x) => x.mtimeMs,
            () => 0,
          ),
        ),
      );
      ordered = matched
        .map((e, i) => ({ e, t: times[i]! }))
        .sort((a, b) => b.t - a.t || (a.e.rel < b.e.rel ? -1 : 1))
        .map((x) => x.e);
    }
    const name = await namer(ctx.workingDirectory);
    return {
      files: ordered.slice(0, limit).map((e) => name(e.abs)),
      total: matched.length,
      truncated: matched.length > limit,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const files = (input.payload["files"] ?? []) as string[];
    const total = Number(input.payload["total"] ?? files.length);
    return r.collapsible(`${total} file${total === 1 ? "" : "s"} matched`, [
      r.list(files.map((f) => r.text(f, "code"))),
    ]);
  },
};
