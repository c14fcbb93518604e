// The resources: stage, commit, branch create, switch, stash and push. Each previews
// what it would change (computed by read-only git commands, nothing written), refuses a
// change to a kernel-owned file before git runs, and runs under a per-repository lock
// (the kernel keys on the literal repo argument; the plugin on the resolved .git).
import {
  type JsonSchema,
  KeyedMutex,
  type PreviewContext,
  type RenderNodeInit,
  r,
  s,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";
import { git, type Repo, refuseOwned, repoOf, runGit } from "./git.ts";
import { checkPaths, checkRev, statusOf } from "./read.ts";

const repoLocks = new KeyedMutex();

const repoField = {
  // Defaults to the working directory; the name says the rest.
  repo: s.string(),
};

const resource = {
  kind: "resource" as const,
  streaming: false,
  concurrency: { safe: true, keyFields: ["repo"] },
  defaultTimeoutMs: 120_000,
  idempotent: false,
  modelText: { field: "output" },
};

const resultOutput = (extra: Record<string, JsonSchema> = {}, required: string[] = []) =>
  s.object({ ...extra, output: s.string("What git did, in its own words.") }, ["output", ...required]);

async function locked<T>(
  args: { repo?: string },
  ctx: ToolContext,
  fn: (repo: Repo) => Promise<T>,
): Promise<T> {
  const repo = await repoOf(args.repo, ctx);
  return repoLocks.run(repo.gitDir, () => fn(repo));
}

const lines = (t: string) => t.split("\n").filter((l) => l !== "");

function preview(title: string, body: string[], warning?: string): RenderNodeInit {
  return r.group([
    r.text(title, "bold"),
    ...(body.length > 0 ? [r.code(body.join("\n"))] : []),
    ...(warning ? [r.text(warning, "warning")] : []),
  ]);
}

async function nameStatus(
  repo: Repo,
  args: string[],
  ctx: PreviewContext,
): Promise<{ status: string; path: string }[]> {
  const res = await git(repo, ["diff", "--no-ext-diff", "--name-status", "--no-renames", ...args], ctx);
  return lines(res.stdout).map((l) => {
    const [status, ...rest] = l.split("\t");
    return { status: status!, path: rest.join("\t") };
  });
}

// ---- stage --------------------------------------------------------------------------------

interface StageArgs {
  repo?: string;
  paths?: string[];
  all?: boolean;
  unstage?: boolean;
}

async function planStage(args: StageArgs, ctx: PreviewContext) {
  const paths = checkPaths(args.paths);
  if (paths.length === 0 && !args.all)
    throw new ToolFailure("invalid_arguments", "give paths, or all = true");
  const repo = await repoOf(args.repo, ctx);
  const st = await statusOf(repo, ctx);
  const spec = paths.length > 0 ? paths : [];
  let files: { status: string; path: string }[];
  if (args.unstage) files = await nameStatus(repo, ["--cached", "--", ...spec], ctx);
  else {
    files = await nameStatus(repo, ["--", ...spec], ctx);
    const untracked =
      spec.length === 0
        ? st.entries.filter((e) => e.index === "?").map((e) => e.path)
        : lines((await git(repo, ["ls-files", "--others", "--exclude-standard", "--", ...spec], ctx)).stdout);
    for (const u of untracked) files.push({ status: "?", path: u });
  }
  return { repo, paths, files };
}

export const stageTool: ToolDefinition<StageArgs> = {
  ...resource,
  name: "git_stage",
  risk: "moderate",
  description:
    "Stage paths (or all changes) for the next commit, or unstage them. The worktree is not changed.",
  input: s.object({
    ...repoField,
    paths: s.array(s.string()),
    all: s.boolean("git add -A."),
    unstage: s.boolean(),
  }),
  output: s.object(
    {
      files: s.array(s.string(), "The files whose staged state changed."),
      output: s.string("git status --short after the change."),
    },
    ["files", "output"],
  ),
  modelText: { field: "output" },
  async preview(args, ctx) {
    const p = await planStage(args, ctx);
    if (p.files.length === 0) return r.text(`Nothing to ${args.unstage ? "unstage" : "stage"}`, "dim");
    return preview(
      `${args.unstage ? "Unstage" : "Stage"} ${p.files.length} file${p.files.length === 1 ? "" : "s"}`,
      p.files.map((f) => `${f.status}\t${f.path}`),
    );
  },
  async invoke(args, ctx) {
    return locked(args, ctx, async (repo) => {
      const p = await planStage(args, ctx);
      const spec = p.paths.length > 0 ? p.paths : ["."];
      if (args.unstage) {
        const hasHead = (await runGit(repo.cwd, ["rev-parse", "--verify", "-q", "HEAD"], ctx)).code === 0;
        await git(
          repo,
          hasHead ? ["restore", "--staged", "--", ...spec] : ["rm", "--cached", "-r", "-q", "--", ...spec],
          ctx,
          { readOnly: false },
        );
      } else await git(repo, ["add", ...(args.all ? ["-A"] : []), "--", ...spec], ctx, { readOnly: false });
      const short = await git(repo, ["status", "--short"], ctx);
      return { files: p.files.map((f) => f.path), output: short.stdout.trimEnd() || "(clean)" };
    });
  },
};

// ---- commit -------------------------------------------------------------------------------

interface CommitArgs {
  repo?: string;
  message: string;
  all?: boolean;
}

async function planCommit(args: CommitArgs, ctx: PreviewContext) {
  if (args.message.trim() === "") throw new ToolFailure("invalid_arguments", "message must not be empty");
  const repo = await repoOf(args.repo, ctx);
  const st = await statusOf(repo, ctx);
  const hasHead = (await runGit(repo.cwd, ["rev-parse", "--verify", "-q", "HEAD"], ctx)).code === 0;
  const base = hasHead ? ["HEAD"] : ["--cached"];
  // With all, tracked changes are staged by the commit itself (git commit -a).
  const statArgs = args.all && hasHead ? ["HEAD"] : ["--cached", ...(hasHead ? [] : [])];
  const stat = (
    await git(repo, ["diff", "--no-ext-diff", "--stat", ...(args.all ? base : statArgs)], ctx)
  ).stdout.trimEnd();
  const staged = st.entries.some((e) => e.index !== "." && e.index !== "?");
  const tracked = st.entries.some((e) => e.worktree !== "." && e.worktree !== "?");
  if (!staged && !(args.all && tracked))
    throw new ToolFailure(
      "invalid_arguments",
      `nothing is staged to commit${tracked ? " (there are unstaged changes: git_stage them, or set all = true)" : ""}`,
    );
  return { repo, branch: st.branch, stat };
}

export const commitTool: ToolDefinition<CommitArgs> = {
  ...resource,
  name: "git_commit",
  risk: "moderate",
  description: "Commit the staged changes (all: also unstaged changes to tracked files). Never amends.",
  input: s.object(
    {
      ...repoField,
      message: s.string(),
      all: s.boolean(),
    },
    ["message"],
  ),
  output: resultOutput(
    { commit: s.string("The new commit's hash."), branch: s.string("The branch it is on.") },
    ["commit", "branch"],
  ),
  async preview(args, ctx) {
    const p = await planCommit(args, ctx);
    return preview(`Commit on ${p.branch}: ${args.message.split("\n")[0]}`, [
      ...(args.message.includes("\n") ? [args.message.trim(), ""] : []),
      ...lines(p.stat),
    ]);
  },
  async invoke(args, ctx) {
    return locked(args, ctx, async (repo) => {
      const p = await planCommit(args, ctx);
      const res = await git(
        repo,
        ["commit", "--no-edit", ...(args.all ? ["-a"] : []), "-m", args.message],
        ctx,
        { readOnly: false },
      );
      const hash = (await git(repo, ["rev-parse", "HEAD"], ctx)).stdout.trim();
      return { commit: hash, branch: p.branch, output: res.stdout.trimEnd() };
    });
  },
};

// ---- branches -----------------------------------------------------------------------------

async function checkBranchName(repo: Repo, name: string, ctx: PreviewContext): Promise<void> {
  const r0 = await runGit(repo.cwd, ["check-ref-format", "--branch", name], ctx);
  if (r0.code !== 0 || name.startsWith("-"))
    throw new ToolFailure("invalid_arguments", `${JSON.stringify(name)} is not a valid branch name`);
}

async function revLine(repo: Repo, rev: string, ctx: PreviewContext): Promise<string> {
  const r0 = await runGit(repo.cwd, ["log", "-1", "--format=%h %s", rev, "--"], ctx);
  if (r0.code !== 0) throw new ToolFailure("not_found", `${rev} is not a revision of this repository`);
  return r0.stdout.trim();
}

async function branchExists(repo: Repo, name: string, ctx: PreviewContext): Promise<boolean> {
  return (await runGit(repo.cwd, ["rev-parse", "--verify", "-q", `refs/heads/${name}`], ctx)).code === 0;
}

export const branchCreateTool: ToolDefinition<{ repo?: string; name: string; start_point?: string }> = {
  ...resource,
  name: "git_branch_create",
  risk: "moderate",
  description: "Create a branch at start_point (default HEAD) without switching to it.",
  input: s.object(
    {
      ...repoField,
      name: s.string(),
      start_point: s.string(),
    },
    ["name"],
  ),
  output: resultOutput({ branch: s.string(), commit: s.string("Where it points.") }, ["branch", "commit"]),
  async preview(args, ctx) {
    checkRev("start_point", args.start_point);
    const repo = await repoOf(args.repo, ctx);
    await checkBranchName(repo, args.name, ctx);
    if (await branchExists(repo, args.name, ctx))
      throw new ToolFailure("invalid_arguments", `branch ${args.name} already exists`);
    return preview(
      `Create branch ${args.name} at ${await revLine(repo, args.start_point ?? "HEAD", ctx)}`,
      [],
    );
  },
  async invoke(args, ctx) {
    checkRev("start_point", args.start_point);
    return locked(args, ctx, async (repo) => {
      await checkBranchName(repo, args.name, ctx);
      if (await branchExists(repo, args.name, ctx))
        throw new ToolFailure("invalid_arguments", `branch ${args.name} already exists`);
      await git(repo, ["branch", "--", args.name, ...(args.start_point ? [args.start_point] : [])], ctx, {
        readOnly: false,
      });
      const at = (await git(repo, ["rev-parse", `refs/heads/${args.name}`], ctx)).stdout.trim();
      return { branch: args.name, commit: at, output: `Created branch ${args.name} at ${at.slice(0, 12)}` };
    });
  },
};

interface SwitchArgs {
  repo?: string;
  branch: string;
  create?: boolean;
  start_point?: string;
}

async function planSwitch(args: SwitchArgs, ctx: PreviewContext) {
  checkRev("start_point", args.start_point);
  const repo = await repoOf(args.repo, ctx);
  await checkBranchName(repo, args.branch, ctx);
  const exists = await branchExists(repo, args.branch, ctx);
  if (args.create && exists)
    throw new ToolFailure("invalid_arguments", `branch ${args.branch} already exists`);
  if (!args.create && !exists)
    throw new ToolFailure("not_found", `there is no branch ${args.branch} (set create = true to make it)`);
  const target = args.create ? (args.start_point ?? "HEAD") : `refs/heads/${args.branch}`;
  await revLine(repo, target, ctx);
  const files = await nameStatus(repo, ["HEAD", target, "--"], ctx);
  await refuseOwned(
    repo,
    files.map((f) => f.path),
    `switching to ${args.branch}`,
    ctx,
  );
  const st = await statusOf(repo, ctx);
  const local = st.entries.filter((e) => e.index !== "?");
  const clash = local.filter((e) => files.some((f) => f.path === e.path)).map((e) => e.path);
  return { repo, files, target, from: st.branch, clash };
}

export const switchTool: ToolDefinition<SwitchArgs> = {
  ...resource,
  name: "git_switch",
  risk: "moderate",
  description:
    "Switch to a branch (create: make it first, at start_point). Local changes are kept; git refuses if they would be overwritten.",
  input: s.object(
    {
      ...repoField,
      branch: s.string(),
      create: s.boolean(),
      start_point: s.string(),
    },
    ["branch"],
  ),
  output: resultOutput(
    { branch: s.string(), files_changed: s.integer("Files the switch changed in the worktree.") },
    ["branch", "files_changed"],
  ),
  async preview(args, ctx) {
    const p = await planSwitch(args, ctx);
    return preview(
      `Switch from ${p.from} to ${args.create ? "new branch " : ""}${args.branch}: ${p.files.length} file${p.files.length === 1 ? "" : "s"} change`,
      p.files.map((f) => `${f.status}\t${f.path}`),
      p.clash.length > 0
        ? `Local changes to ${p.clash.join(", ")} would be overwritten: git will refuse`
        : undefined,
    );
  },
  async invoke(args, ctx) {
    return locked(args, ctx, async (repo) => {
      const p = await planSwitch(args, ctx);
      const res = await git(
        repo,
        [
          "switch",
          "--no-guess",
          ...(args.create
            ? ["-c", args.branch, ...(args.start_point ? [args.start_point] : [])]
            : [args.branch]),
        ],
        ctx,
        { readOnly: false },
      );
      return {
        branch: args.branch,
        files_changed: p.files.length,
        output: (res.stderr || res.stdout).trim(),
      };
    });
  },
};

// ---- stash --------------------------------------------------------------------------------

interface StashArgs {
  repo?: string;
  action: "push" | "pop" | "apply" | "list";
  message?: string;
  include_untracked?: boolean;
  index?: number;
}

async function planStash(args: StashArgs, ctx: PreviewContext) {
  const repo = await repoOf(args.repo, ctx);
  const ref = `stash@{${Math.max(0, args.index ?? 0)}}`;
  if (args.action === "push") {
    const st = await statusOf(repo, ctx);
    const files = st.entries
      .filter((e) => e.index !== "?" || args.include_untracked)
      .map((e) => ({ status: e.index === "?" ? "?" : `${e.index}${e.worktree}`, path: e.path }));
    if (files.length === 0) throw new ToolFailure("invalid_arguments", "there are no local changes to stash");
    await refuseOwned(
      repo,
      files.map((f) => f.path),
      "stashing",
      ctx,
    );
    return { repo, ref, files };
  }
  const show = await runGit(repo.cwd, ["stash", "show", "--name-status", "--include-untracked", ref], ctx);
  if (show.code !== 0) throw new ToolFailure("not_found", `there is no ${ref}`);
  const files = lines(show.stdout).map((l) => {
    const [status, ...rest] = l.split("\t");
    return { status: status!, path: rest.join("\t") };
  });
  await refuseOwned(
    repo,
    files.map((f) => f.path),
    `applying ${ref}`,
    ctx,
  );
  return { repo, ref, files };
}

export const stashTool: ToolDefinition<StashArgs> = {
  ...resource,
  name: "git_stash",
  risk: "moderate",
  description: "Stash local changes (push), restore them (pop, or apply to keep the stash), or list stashes.",
  input: s.object(
    {
      ...repoField,
      action: s.string(undefined, ["push", "pop", "apply", "list"]),
      message: s.string(),
      include_untracked: s.boolean(),
      index: s.integer("0 = the latest."),
    },
    ["action"],
  ),
  output: resultOutput({ files: s.array(s.string(), "Files the stash holds or restored.") }, ["files"]),
  async preview(args, ctx) {
    if (args.action === "list") return r.text("List stashes (changes nothing)", "dim");
    const p = await planStash(args, ctx);
    const verb =
      args.action === "push"
        ? "Stash"
        : args.action === "pop"
          ? `Pop ${p.ref}, restoring`
          : `Apply ${p.ref}, restoring`;
    return preview(
      `${verb} ${p.files.length} file${p.files.length === 1 ? "" : "s"}`,
      p.files.map((f) => `${f.status}\t${f.path}`),
    );
  },
  async invoke(args, ctx) {
    return locked(args, ctx, async (repo) => {
      if (args.action === "list") {
        const res = await git(repo, ["stash", "list"], ctx);
        return { files: [], output: res.stdout.trimEnd() || "(no stashes)" };
      }
      const p = await planStash(args, ctx);
      const a =
        args.action === "push"
          ? [
              "stash",
              "push",
              ...(args.include_untracked ? ["--include-untracked"] : []),
              ...(args.message ? ["-m", args.message] : []),
            ]
          : ["stash", args.action, p.ref];
      const res = await git(repo, a, ctx, { readOnly: false });
      return { files: p.files.map((f) => f.path), output: (res.stdout || res.stderr).trimEnd() };
    });
  },
};

// ---- push ---------------------------------------------------------------------------------

interface PushArgs {
  repo?: string;
  remote?: string;
  branch?: string;
  set_upstream?: boolean;
  force_with_lease?: boolean;
}

async function planPush(args: PushArgs, ctx: PreviewContext) {
  const repo = await repoOf(args.repo, ctx);
  const st = await statusOf(repo, ctx);
  const branch = args.branch ?? st.branch;
  if (branch === "(detached)" || branch === "")
    throw new ToolFailure("invalid_arguments", "HEAD is detached: name the branch to push");
  await checkBranchName(repo, branch, ctx);
  const remote = args.remote ?? (st.upstream ? st.upstream.split("/")[0]! : "origin");
  checkRev("remote", remote);
  const url = await runGit(repo.cwd, ["remote", "get-url", remote], ctx);
  if (url.code !== 0) throw new ToolFailure("not_found", `there is no remote ${remote}`);
  const remoteRef = `refs/remotes/${remote}/${branch}`;
  const known = (await runGit(repo.cwd, ["rev-parse", "--verify", "-q", remoteRef], ctx)).code === 0;
  const log = await git(
    repo,
    [
      "log",
      "--format=%h %s",
      known ? `${remoteRef}..refs/heads/${branch}` : `refs/heads/${branch}`,
      ...(known ? [] : ["--not", `--remotes=${remote}`]),
      "--",
    ],
    ctx,
  );
  const behind = known
    ? lines((await git(repo, ["log", "--format=%h", `refs/heads/${branch}..${remoteRef}`, "--"], ctx)).stdout)
        .length
    : 0;
  return { repo, branch, remote, url: url.stdout.trim(), known, commits: lines(log.stdout), behind };
}

export const pushTool: ToolDefinition<PushArgs> = {
  ...resource,
  name: "git_push",
  risk: "critical",
  description:
    "Push a branch (default: current) to a remote (default: its upstream, else origin). Cannot be taken back.",
  input: s.object({
    ...repoField,
    remote: s.string(),
    branch: s.string(),
    set_upstream: s.boolean("git push -u."),
    force_with_lease: s.boolean("Overwrite unless someone else pushed."),
  }),
  output: resultOutput({ remote: s.string(), branch: s.string(), commits: s.integer("Commits published.") }, [
    "remote",
    "branch",
    "commits",
  ]),
  async preview(args, ctx) {
    const p = await planPush(args, ctx);
    return preview(
      `Push ${p.branch} to ${p.remote} (${p.url})${p.known ? "" : " as a new remote branch"}: ${p.commits.length} commit${p.commits.length === 1 ? "" : "s"}`,
      p.commits,
      args.force_with_lease && p.behind > 0
        ? `Force: ${p.behind} commit${p.behind === 1 ? "" : "s"} on ${p.remote}/${p.branch} will be overwritten`
        : undefined,
    );
  },
  async invoke(args, ctx) {
    return locked(args, ctx, async (repo) => {
      const p = await planPush(args, ctx);
      const res = await git(
        repo,
        [
          "push",
          "--porcelain",
          ...(args.set_upstream ? ["-u"] : []),
          ...(args.force_with_lease ? ["--force-with-lease"] : []),
          "--",
          p.remote,
          `refs/heads/${p.branch}:refs/heads/${p.branch}`,
        ],
        ctx,
        { readOnly: false, network: settings.network },
      );
      return {
        remote: p.remote,
        branch: p.branch,
        commits: p.commits.length,
        output: (res.stdout + res.stderr).trim(),
      };
    });
  },
};

export const CHANGE_TOOLS = [stageTool, commitTool, branchCreateTool, switchTool, stashTool, pushTool];
