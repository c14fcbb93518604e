// diagnostics, definition and references: data sources answered by a real language
// server. Servers are started on first use, one per (session, language, root), reused by
// the session's later calls, and stopped when the plugin shuts down (the session ends).

import { existsSync } from "node:fs";
import { readFile, realpath, stat } from "node:fs/promises";
import { dirname, extname, isAbsolute, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { probeSandbox, wrap } from "@pluggableharness/runtime/sandbox";
import {
  hiddenBy,
  hiddenMessage,
  type ResolvedPath,
  r,
  s,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { bundledTypeScriptServer, settings } from "./config.ts";
import { LanguageServer, type LspDiagnostic, ServerFailed, ServerTimeout } from "./server.ts";

const servers = new Map<string, LanguageServer>();

/** Stops every server (plugin shutdown). */
export async function stopAll(): Promise<void> {
  const all = [...servers.values()];
  servers.clear();
  await Promise.all(all.map((s) => s.stop(1_000).catch(() => s.kill())));
}

/** Synchronous last resort when the plugin process exits. */
process.once("exit", () => {
  for (const s of servers.values()) s.kill();
});

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

interface Target {
  path: string;
  root: string;
  language: string;
  /** The jail's resolution of the path, when roots are configured. */
  file?: ResolvedPath;
}

/**
 * A file's text. With roots configured it is opened once through the jail (no link
 * followed, the descriptor checked to be the file, one hard link) and read from there.
 */
async function readText(path: string, file: ResolvedPath | undefined): Promise<string> {
  if (!settings.jail || !file) return readFile(path, "utf8");
  const { handle } = await settings.jail.openForRead(file);
  try {
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/**
 * Without roots there is no jail to refuse credential stores, so the path is checked
 * here, as written and as resolved (with roots the jail does it).
 */
async function refuseHidden(requested: string, path: string): Promise<void> {
  const rules = settings.readRules;
  if (!rules) return;
  const real = await realpath(path).catch(() => path);
  const entry = hiddenBy(rules, path) ?? hiddenBy(rules, real);
  if (entry)
    throw new ToolFailure("permission_denied", hiddenMessage(rules, requested, entry), {
      details: { setting: "allow_read" },
    });
}

/** The text of a file a server pointed at: through the jail, and nothing outside the roots. */
async function locationText(path: string): Promise<string> {
  if (!settings.jail) {
    await refuseHidden(path, path);
    return readFile(path, "utf8");
  }
  return readText(path, await settings.jail.resolve(path, undefined));
}

async function target(requested: string, ctx: Pick<ToolContext, "workingDirectory">): Promise<Target> {
  if (typeof requested !== "string" || requested === "")
    throw new ToolFailure("invalid_arguments", "path is empty");
  let path: string;
  let root: string;
  let file: ResolvedPath | undefined;
  if (settings.jail) {
    file = await settings.jail.resolve(requested, ctx.workingDirectory);
    path = file.real;
    root = settings.jail.roots.filter((r) => inside(path, r)).sort((a, b) => b.length - a.length)[0]!;
  } else {
    if (!ctx.workingDirectory)
      throw new ToolFailure("invalid_arguments", "lsp needs call_context.working_directory");
    path = resolve(ctx.workingDirectory, requested);
    root = ctx.workingDirectory;
    await refuseHidden(requested, path);
  }
  const st = await stat(path).catch(() => undefined);
  if (!st) throw new ToolFailure("not_found", `${requested} does not exist`);
  if (!st.isFile()) throw new ToolFailure("invalid_arguments", `${requested} is not a file`);
  const language = settings.extensions[extname(path).toLowerCase()];
  if (!language)
    throw new ToolFailure(
      "invalid_arguments",
      `no language server is configured for ${extname(path) || "files without an extension"} (${requested}); ` +
        "add one with the lsp provider's servers and extensions",
    );
  return { path, root, language, ...(file ? { file } : {}) };
}

function serverFor(t: Target, ctx: ToolContext): LanguageServer {
  const key = `${ctx.sessionId ?? ""}\0${t.language}\0${t.root}`;
  const running = servers.get(key);
  if (running && !running.exited) return running;
  const configured = settings.servers[t.language];
  const bundled = !configured && t.language === "typescript" ? bundledTypeScriptServer() : undefined;
  const argv = configured ?? bundled?.argv;
  if (!argv) throw new ToolFailure("invalid_arguments", `no server is configured for language ${t.language}`);
  const box = confine(argv, t.root, ctx);
  const server = new LanguageServer({
    language: t.language,
    argv: box.argv,
    confined: box.confined,
    ...(bundled ? { initializationOptions: bundled.initializationOptions } : {}),
    root: t.root,
    env: process.env,
    timeoutMs: settings.timeoutMs,
  });
  servers.set(key, server);
  void ctx.kernel
    .log("info", `started the ${t.language} language server for ${t.root}`, { pid: server.child.pid ?? -1 })
    .catch(() => {});
  server.child.once("exit", () => {
    if (servers.get(key) === server) servers.delete(key);
  });
  return server;
}

let warnedUnconfined = false;

/**
 * The server's command line in the sandbox: a language server runs code the project
 * controls (the project's own TypeScript, tsserver plugins its tsconfig names, a
 * language's build scripts), so it gets what a bash command gets at most, and less:
 * nothing writable, no network, the kernel-owned paths out of reach of writes, its own
 * PID namespace (docs/security/git.md).
 */
function confine(
  argv: readonly string[],
  root: string,
  ctx: ToolContext,
): { argv: string[]; confined: boolean } {
  if (settings.sandbox === "off") return { argv: [...argv], confined: false };
  const probe = probeSandbox();
  if (!probe.ok) {
    if (settings.sandbox === "required")
      throw new ToolFailure(
        "execution_failed",
        `the lsp provider requires its sandbox (sandbox = "required"), and it cannot run here: ${probe.reason}`,
      );
    if (!warnedUnconfined) {
      warnedUnconfined = true;
      void ctx.kernel
        .log("warn", `sandbox unavailable (${probe.reason}): language servers run unconfined`)
        .catch(() => {});
    }
    return { argv: [...argv], confined: false };
  }
  // A private /tmp (servers keep logs and pipes there); the root and the server's own files
  // are bound back read-only when they live under /tmp (the sandbox binds a "protected"
  // path under a private /tmp read-only).
  const visible = [root, ...argv.filter((a) => isAbsolute(a) && existsSync(a)).map((a) => dirname(a))];
  const w = wrap(
    {
      bwrap: probe.bwrap,
      writable: [],
      protectedPaths: visible,
      network: false,
      cwd: root,
      privateTmp: true,
    },
    argv,
  );
  return { argv: [w.file, ...w.args], confined: true };
}

/** Runs `fn` against the server; a server that times out or dies is stopped and the call fails clearly. */
async function withServer<T>(t: Target, ctx: ToolContext, fn: (s: LanguageServer) => Promise<T>): Promise<T> {
  const server = serverFor(t, ctx);
  const onAbort = () => server.kill();
  try {
    return await fn(server);
  } catch (err) {
    if (err instanceof ServerTimeout) {
      server.kill();
      throw new ToolFailure("timeout", err.message, { retryable: true });
    }
    if (err instanceof ServerFailed) throw new ToolFailure("execution_failed", err.message);
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new ToolFailure(
        "not_found",
        `${(err as NodeJS.ErrnoException).path ?? "the file"} does not exist`,
      );
    throw err;
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
  }
}

const SEVERITY = ["", "error", "warning", "information", "hint"] as const;

function display(path: string, ctx: Pick<ToolContext, "workingDirectory">): string {
  const base = ctx.workingDirectory;
  if (base && inside(path, base)) return relative(base, path) || ".";
  return path;
}

interface DiagnosticsArgs {
  paths: string[];
  min_severity?: string;
}

const diagnosticItem = s.object(
  {
    line: s.integer("1-based line."),
    column: s.integer("1-based column."),
    end_line: s.integer("1-based end line."),
    end_column: s.integer("1-based end column."),
    severity: s.string("error, warning, information or hint.", ["error", "warning", "information", "hint"]),
    code: s.string("The server's code for it (e.g. 2322 for TS2322)."),
    source: s.string("What reported it (e.g. typescript)."),
    message: s.string("The message."),
  },
  ["line", "column", "end_line", "end_column", "severity", "message"],
);

export const diagnosticsTool: ToolDefinition<DiagnosticsArgs> = {
  name: "diagnostics",
  kind: "data_source",
  risk: "read_only",
  description:
    "Type errors, unresolved imports and other diagnostics a real language server (TypeScript/JavaScript built in) " +
    "reports for the given files as they are on disk now. Call it with the files an edit touched, after the edit. " +
    "The server starts on first use and stays up for the session.",
  input: s.object(
    {
      paths: s.array(
        s.string("A file path (relative to the working directory)."),
        "Files to check (1 to 50).",
      ),
      min_severity: s.string("Leave out diagnostics below this severity (default: hint, i.e. everything).", [
        "error",
        "warning",
        "information",
        "hint",
      ]),
    },
    ["paths"],
  ),
  output: s.object(
    {
      files: s.array(
        s.object(
          {
            path: s.string("The file."),
            diagnostics: s.array(diagnosticItem, "Its diagnostics, in order."),
          },
          ["path", "diagnostics"],
        ),
        "One entry per requested file.",
      ),
      errors: s.integer("Errors over all files."),
      warnings: s.integer("Warnings over all files."),
      summary: s.string("The diagnostics as compiler-style lines (path:line:column severity code: message)."),
    },
    ["files", "errors", "warnings", "summary"],
  ),
  streaming: false,
  // Reads; the provider serializes document updates per server itself.
  concurrency: { safe: true },
  defaultTimeoutMs: 120_000,
  idempotent: true,
  modelText: { field: "summary", omit: ["files"] },

  async invoke(args, ctx) {
    const paths = args.paths;
    if (!Array.isArray(paths) || paths.length === 0 || paths.length > 50)
      throw new ToolFailure("invalid_arguments", "paths must name 1 to 50 files");
    const min = SEVERITY.indexOf((args.min_severity ?? "hint") as (typeof SEVERITY)[number]);
    if (min < 1)
      throw new ToolFailure("invalid_arguments", "min_severity must be error, warning, information or hint");
    const targets = await Promise.all(paths.map((p) => target(p, ctx)));
    // Files of one server are synced together and waited for together.
    const groups = new Map<string, Target[]>();
    for (const t of targets) {
      const k = `${t.language}\0${t.root}`;
      groups.set(k, [...(groups.get(k) ?? []), t]);
    }
    const found = new Map<string, LspDiagnostic[]>();
    for (const group of groups.values()) {
      await withServer(group[0]!, ctx, async (server) => {
        const uris: string[] = [];
        for (const t of group) uris.push((await server.sync(t.path, await readText(t.path, t.file))).uri);
        const got = await server.diagnostics(uris, settings.settleMs);
        for (const [uri, items] of got) found.set(uri, items ?? []);
      });
    }
    let errors = 0;
    let warnings = 0;
    const lines: string[] = [];
    const files = targets.map((t) => {
      const shown = display(t.path, ctx);
      const items = (found.get(pathToFileURL(t.path).href) ?? [])
        .filter((d) => (d.severity ?? 1) <= min)
        .map((d) => {
          const severity = SEVERITY[d.severity ?? 1] ?? "error";
          if (severity === "error") errors++;
          if (severity === "warning") warnings++;
          const code = d.code === undefined ? undefined : String(d.code);
          const item: JsonObject = {
            line: d.range.start.line + 1,
            column: d.range.start.character + 1,
            end_line: d.range.end.line + 1,
            end_column: d.range.end.character + 1,
            severity,
            ...(code !== undefined ? { code } : {}),
            ...(d.source ? { source: d.source } : {}),
            message: d.message,
          };
          const prefix = d.source === "typescript" && code ? `TS${code}` : (code ?? "");
          lines.push(
            `${shown}:${item["line"]}:${item["column"]} ${severity}${prefix ? ` ${prefix}` : ""}: ${d.message.replaceAll("\n", " ")}`,
          );
          return item;
        });
      return { path: shown, diagnostics: items };
    });
    const summary =
      lines.length === 0
        ? `No diagnostics in ${files.length === 1 ? files[0]!.path : `${files.length} files`}.`
        : `${lines.join("\n")}\n${errors} error(s), ${warnings} warning(s).`;
    return { files, errors, warnings, summary };
  },

  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload;
    const errors = Number(p["errors"]);
    return r.group([
      r.text(`${errors} error(s), ${Number(p["warnings"])} warning(s)`, errors > 0 ? "error" : "success"),
      r.code(String(p["summary"])),
    ]);
  },
};

interface PositionArgs {
  path: string;
  line: number;
  column?: number;
  symbol?: string;
  include_declaration?: boolean;
}

const positionInput = (extra: Record<string, ReturnType<typeof s.boolean>> = {}) =>
  s.object(
    {
      path: s.string("File holding the symbol."),
      line: s.integer("1-based line of the symbol."),
      column: s.integer("1-based column within the line (or give symbol)."),
      symbol: s.string(
        "The symbol's name on that line, when the column is not known (its first occurrence).",
      ),
      ...extra,
    },
    ["path", "line"],
  );

const locationList = s.object(
  {
    locations: s.array(
      s.object(
        {
          path: s.string("File."),
          line: s.integer("1-based line."),
          column: s.integer("1-based column."),
          end_line: s.integer("1-based end line."),
          end_column: s.integer("1-based end column."),
          text: s.string("That line of the file."),
        },
        ["path", "line", "column", "end_line", "end_column", "text"],
      ),
      "Where it is.",
    ),
    summary: s.string("The locations as path:line:column lines with each line's text."),
  },
  ["locations", "summary"],
);

interface Range {
  start: { line: number; character: number };
  end: { line: number; character: number };
}
type LocationLike =
  | { uri: string; range: Range }
  | { targetUri: string; targetRange: Range; targetSelectionRange?: Range };

async function position(t: Target, args: PositionArgs): Promise<{ line: number; character: number }> {
  if (!Number.isInteger(args.line) || args.line < 1)
    throw new ToolFailure("invalid_arguments", "line must be 1 or more");
  if (args.column !== undefined) {
    if (!Number.isInteger(args.column) || args.column < 1)
      throw new ToolFailure("invalid_arguments", "column must be 1 or more");
    return { line: args.line - 1, character: args.column - 1 };
  }
  if (!args.symbol) throw new ToolFailure("invalid_arguments", "give column or symbol");
  const text = await readText(t.path, t.file).catch((err: unknown) => {
    if (err instanceof ToolFailure) throw err;
    throw new ToolFailure("not_found", `${args.path} does not exist`);
  });
  const line = text.split("\n")[args.line - 1];
  if (line === undefined) throw new ToolFailure("invalid_arguments", `${args.path} has no line ${args.line}`);
  const at = new RegExp(
    `(?<![A-Za-z0-9_$])${args.symbol.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![A-Za-z0-9_$])`,
  ).exec(line);
  if (!at) throw new ToolFailure("not_found", `${args.symbol} is not on line ${args.line} of ${args.path}`);
  return { line: args.line - 1, character: at.index };
}

async function locations(found: LocationLike | LocationLike[] | null, ctx: ToolContext): Promise<JsonObject> {
  const list = found === null ? [] : Array.isArray(found) ? found : [found];
  const cache = new Map<string, string[]>();
  const out: JsonObject[] = [];
  for (const l of list) {
    const uri = "targetUri" in l ? l.targetUri : l.uri;
    const range = "targetUri" in l ? (l.targetSelectionRange ?? l.targetRange) : l.range;
    if (!uri.startsWith("file:")) continue;
    const file = fileURLToPath(uri);
    if (!cache.has(file)) cache.set(file, (await locationText(file).catch(() => "")).split("\n"));
    out.push({
      path: display(file, ctx),
      line: range.start.line + 1,
      column: range.start.character + 1,
      end_line: range.end.line + 1,
      end_column: range.end.character + 1,
      text: (cache.get(file)![range.start.line] ?? "").trim(),
    });
  }
  const summary =
    out.length === 0
      ? "No locations found."
      : out.map((o) => `${o["path"]}:${o["line"]}:${o["column"]}: ${o["text"]}`).join("\n");
  return { locations: out, summary };
}

/**
 * Asks the language server for the locations of the symbol at a position (`method` is a
 * textDocument request answered with locations), the file synced first.
 */
async function locationQuery(
  method: "textDocument/definition" | "textDocument/references",
  args: PositionArgs,
  ctx: ToolContext,
  extra: Record<string, unknown>,
) {
  const t = await target(args.path, ctx);
  const pos = await position(t, args);
  return withServer(t, ctx, async (server) => {
    const { uri } = await server.sync(t.path, await readText(t.path, t.file));
    const found = await server.request<LocationLike | LocationLike[] | null>(method, {
      textDocument: { uri },
      position: pos,
      ...extra,
    });
    return locations(found, ctx);
  });
}

/** What the position queries (definition, references) have in common: read-only lookups
 * answering a list of locations, summarised for the model. */
const LOCATION_QUERY = {
  output: locationList,
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 120_000,
  idempotent: true,
  modelText: { field: "summary", omit: ["locations"] },
} as const;

export const definitionTool: ToolDefinition<PositionArgs> = {
  name: "definition",
  kind: "data_source",
  risk: "read_only",
  description:
    "Go to definition: where the symbol at a position is defined, as the language server resolves it " +
    "(through imports, aliases and types, unlike a text search).",
  input: positionInput(),
  ...LOCATION_QUERY,
  invoke: (args, ctx) => locationQuery("textDocument/definition", args, ctx, {}),
};

export const referencesTool: ToolDefinition<PositionArgs> = {
  name: "references",
  kind: "data_source",
  risk: "read_only",
  description:
    "Find references: every place the symbol at a position is used, as the language server resolves it " +
    "(no false hits from comments, strings or other symbols of the same name).",
  input: positionInput({ include_declaration: s.boolean("Include the declaration itself (default true).") }),
  ...LOCATION_QUERY,
  invoke: (args, ctx) =>
    locationQuery("textDocument/references", args, ctx, {
      context: { includeDeclaration: args.include_declaration !== false },
    }),
};

export const TOOLS = [diagnosticsTool, definitionTool, referencesTool];
