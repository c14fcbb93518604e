// The data sources: status, diff, log, show, blame. Read-only (no optional locks, no
// writable directory in the sandbox), safe to run side by side.
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { git, repoOf } from "./git.ts";

const repoField = {
  // Defaults to the working directory; the name says the rest.
  repo: s.string(),
};

function textResult(stdout: string, truncated: boolean, extra: Record<string, unknown> = {}) {
  return {
    ...extra,
    output: truncated ? `${stdout}\n[output cut at the configured max_output_bytes]` : stdout,
    truncated,
  };
}

const textOutput = (fields: Record<string, ReturnType<typeof s.string>> = {}) =>
  s.object(
    {
      ...fields,
      output: s.string("git's output."),
      truncated: s.boolean("The output was longer than max_output_bytes and is cut."),
    },
    ["output", "truncated"],
  );

function checkRev(name: string, v: string | undefined): void {
  // A revision never starts with "-": it would be read as an option.
  if (v !== undefined && (v === "" || v.startsWith("-") || v.includes("\0")))
    throw new ToolFailure("invalid_arguments", `${name} must be a revision, not ${JSON.stringify(v)}`);
}

function checkPaths(paths: readonly string[] | undefined): string[] {
  for (const p of paths ?? [])
    if (p === "" || p.includes("\0"))
      throw new ToolFailure("invalid_arguments", "paths must be non-empty strings");
  return [...(paths ?? [])];
}

const common = {
  kind: "data_source" as const,
  risk: "read_only" as const,
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 60_000,
  idempotent: true,
  modelText: { field: "output" },
};

interface StatusEntry {
  path: string;
  from?: string;
  index: string;
  worktree: string;
}

/** `git status --porcelain=v2 --branch -z`, parsed. */
function parseStatus(out: string) {
  const fields = out.split("\0");
  const entries: StatusEntry[] = [];
  let branch = "";
  let upstream = "";
  let ahead = 0;
  let behind = 0;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (f.startsWith("# branch.head ")) branch = f.slice(14);
    else if (f.startsWith("# branch.upstream ")) upstream = f.slice(18);
    else if (f.startsWith("# branch.ab ")) {
      const m = /\+(\d+) -(\d+)/.exec(f);
      ahead = Number(m?.[1] ?? 0);
      behind = Number(m?.[2] ?? 0);
    } else if (f.startsWith("1 ")) {
      const p = f.split(" ");
      entries.push({ path: p.slice(8).join(" "), index: p[1]![0]!, worktree: p[1]![1]! });
    } else if (f.startsWith("2 ")) {
      const p = f.split(" ");
      entries.push({ path: p.slice(9).join(" "), from: fields[++i]!, index: p[1]![0]!, worktree: p[1]![1]! });
    } else if (f.startsWith("u ")) {
      const p = f.split(" ");
      entries.push({ path: p.slice(10).join(" "), index: "U", worktree: "U" });
    } else if (f.startsWith("? ")) entries.push({ path: f.slice(2), index: "?", worktree: "?" });
  }
  return { branch, upstream, ahead, behind, entries };
}

export async function statusOf(repo: Awaited<ReturnType<typeof repoOf>>, ctx: Parameters<typeof git>[2]) {
  const res = await git(repo, ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"], ctx);
  return parseStatus(res.stdout);
}

export const statusTool: ToolDefinition<{ repo?: string }> = {
  ...common,
  name: "git_status",
  description: "Current branch, upstream ahead/behind, and changed, staged, untracked or conflicted files.",
  input: s.object(repoField),
  output: s.object(
    {
      branch: s.string("Current branch ('(detached)' when HEAD is detached)."),
      upstream: s.string("Upstream branch, empty when none."),
      ahead: s.integer("Commits ahead of upstream."),
      behind: s.integer("Commits behind upstream."),
      files: s.array(
        s.object(
          {
            path: s.string(),
            from: s.string("Old name of a rename."),
            index: s.string("Staged status letter (. = unchanged, ? = untracked)."),
            worktree: s.string("Unstaged status letter."),
          },
          ["path", "index", "worktree"],
        ),
      ),
      clean: s.boolean("Nothing to commit and no untracked files."),
      output: s.string("The status in git status --short form, with a branch line."),
      truncated: s.boolean("Always false."),
    },
    ["branch", "upstream", "ahead", "behind", "files", "clean", "output", "truncated"],
  ),
  modelText: { field: "output", omit: ["files"] },
  async invoke(args, ctx) {
    const repo = await repoOf(args.repo, ctx);
    const st = await statusOf(repo, ctx);
    const line = `## ${st.branch}${st.upstream ? `...${st.upstream}` : ""}${st.ahead || st.behind ? ` [ahead ${st.ahead}, behind ${st.behind}]` : ""}`;
    const rows = st.entries.map(
      (e) =>
        `${e.index === "." ? " " : e.index}${e.worktree === "." ? " " : e.worktree} ${e.from ? `${e.from} -> ` : ""}${e.path}`,
    );
    return {
      branch: st.branch,
      upstream: st.upstream,
      ahead: st.ahead,
      behind: st.behind,
      files: st.entries.map((e) => ({ ...e })),
      clean: st.entries.length === 0,
      output: [line, ...rows].join("\n"),
      truncated: false,
    };
  },
};

interface DiffArgs {
  repo?: string;
  staged?: boolean;
  from?: string;
  to?: string;
  paths?: string[];
  stat?: boolean;
  context_lines?: number;
}

export const diffTool: ToolDefinition<DiffArgs> = {
  ...common,
  name: "git_diff",
  description:
    "Unified diff: worktree against index (default), staged (index against HEAD), or from/to revisions (from alone: against the worktree).",
  input: s.object({
    ...repoField,
    staged: s.boolean(),
    from: s.string(),
    to: s.string(),
    paths: s.array(s.string()),
    stat: s.boolean("Summary instead of the patch."),
    context_lines: s.integer(),
  }),
  output: textOutput(),
  async invoke(args, ctx) {
    checkRev("from", args.from);
    checkRev("to", args.to);
    if (args.to !== undefined && args.from === undefined)
      throw new ToolFailure("invalid_arguments", "to needs from");
    if (args.staged && args.to !== undefined)
      throw new ToolFailure(
        "invalid_arguments",
        "staged compares the index with one revision: give from, not to",
      );
    const repo = await repoOf(args.repo, ctx);
    const a = ["diff", "--no-ext-diff", "--no-textconv", "--no-color"];
    if (args.context_lines !== undefined) a.push(`-U${Math.max(0, Math.min(100, args.context_lines))}`);
    if (args.stat) a.push("--stat");
    if (args.staged) a.push("--cached");
    if (args.from !== undefined) a.push(args.from);
    if (args.to !== undefined) a.push(args.to);
    a.push("--", ...checkPaths(args.paths));
    const res = await git(repo, a, ctx);
    return textResult(res.stdout, res.truncated);
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    return r.code(String(input.payload["output"] ?? ""), "diff");
  },
};

export const logTool: ToolDefinition<{
  repo?: string;
  ref?: string;
  max_count?: number;
  paths?: string[];
  author?: string;
  since?: string;
  grep?: string;
}> = {
  ...common,
  name: "git_log",
  description: "Commit history of ref (default HEAD), newest first, with optional filters.",
  input: s.object({
    ...repoField,
    ref: s.string("Revision or range."),
    max_count: s.integer("Default 20."),
    paths: s.array(s.string()),
    author: s.string(),
    since: s.string("e.g. '2 weeks ago'."),
    grep: s.string("Message pattern."),
  }),
  output: textOutput(),
  async invoke(args, ctx) {
    checkRev("ref", args.ref);
    const repo = await repoOf(args.repo, ctx);
    const n = Math.max(1, Math.min(500, args.max_count ?? 20));
    const a = [
      "log",
      "--no-color",
      `--max-count=${n}`,
      "--date=iso-strict",
      "--format=%h %ad %an <%ae>%n    %s",
    ];
    if (args.author) a.push(`--author=${args.author}`);
    if (args.since) a.push(`--since=${args.since}`);
    if (args.grep) a.push(`--grep=${args.grep}`);
    a.push(args.ref ?? "HEAD", "--", ...checkPaths(args.paths));
    const res = await git(repo, a, ctx);
    return textResult(res.stdout, res.truncated);
  },
};

export const showTool: ToolDefinition<{ repo?: string; rev?: string; path?: string; stat?: boolean }> = {
  ...common,
  name: "git_show",
  description: "A commit's message and patch, or with path a file's content at rev.",
  input: s.object({
    ...repoField,
    rev: s.string(),
    path: s.string(),
    stat: s.boolean("Summary instead of the patch."),
  }),
  output: textOutput(),
  async invoke(args, ctx) {
    checkRev("rev", args.rev);
    const repo = await repoOf(args.repo, ctx);
    const rev = args.rev ?? "HEAD";
    const a = args.path
      ? ["show", "--no-textconv", `${rev}:${args.path.replace(/^\.\//, "")}`]
      : ["show", "--no-ext-diff", "--no-textconv", "--no-color", ...(args.stat ? ["--stat"] : []), rev, "--"];
    const res = await git(repo, a, ctx);
    return textResult(res.stdout, res.truncated);
  },
};

export const blameTool: ToolDefinition<{
  repo?: string;
  path: string;
  rev?: string;
  start_line?: number;
  end_line?: number;
}> = {
  ...common,
  name: "git_blame",
  description: "Who last changed each line of a file.",
  input: s.object(
    {
      ...repoField,
      path: s.string(),
      rev: s.string(),
      start_line: s.integer(),
      end_line: s.integer(),
    },
    ["path"],
  ),
  output: textOutput(),
  async invoke(args, ctx) {
    checkRev("rev", args.rev);
    const repo = await repoOf(args.repo, ctx);
    const a = ["blame", "--date=short"];
    if (args.start_line !== undefined || args.end_line !== undefined) {
      const start = Math.max(1, args.start_line ?? 1);
      a.push(`-L${start},${args.end_line !== undefined ? Math.max(start, args.end_line) : ""}`);
    }
    if (args.rev) a.push(args.rev);
    a.push("--", checkPaths([args.path])[0]!);
    const res = await git(repo, a, ctx);
    return textResult(res.stdout, res.truncated);
  },
};

export const READ_TOOLS = [statusTool, diffTool, logTool, showTool, blameTool];
export { checkPaths, checkRev };
