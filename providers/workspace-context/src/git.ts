// Git state through the real `git` binary: branch (with upstream and ahead/behind), the
// working-tree status and the most recent commits. Not a repository, or no git at all:
// undefined, and the section is left out. This runs in the kernel's process before every
// model call, on a repository the model can write: every call goes through the runtime's
// safe git (minimal environment, every program-starting key neutralised, and inside a
// read-only sandbox without network where bubblewrap works; docs/security/git.md).
import { runSafeGit, SandboxRequiredError } from "@pluggableharness/runtime/safe-git";
import type { SandboxMode } from "@pluggableharness/runtime/sandbox";

const TIMEOUT_MS = 5_000;
const MAX_BUFFER = 4 * 1024 * 1024;

export interface GitRun {
  readonly sandbox: SandboxMode;
  /** Told when git cannot run as configured: unconfined (best_effort), or not at all (required). */
  readonly warn?: (message: string) => void;
}

async function git(cwd: string, args: readonly string[], run: GitRun): Promise<string | undefined> {
  try {
    const r = await runSafeGit(args, {
      cwd,
      sandbox: run.sandbox,
      timeoutMs: TIMEOUT_MS,
      maxBuffer: MAX_BUFFER,
      config: ["core.quotepath=off"],
      onUnconfined: (reason) => run.warn?.(`sandbox unavailable (${reason}): git runs unconfined`),
    });
    return r.code === 0 ? r.stdout.toString("utf8") : undefined;
  } catch (err) {
    if (err instanceof SandboxRequiredError) {
      run.warn?.(`${err.message}; the git state is left out`);
      return undefined;
    }
    throw err;
  }
}

export interface GitOptions {
  readonly recentCommits: number;
  readonly maxStatusEntries: number;
}

export interface GitState {
  readonly text: string;
  readonly root: string;
}

/** The root of the repository containing `cwd`, or undefined (not a repository, or no git). */
export async function gitRoot(cwd: string, run: GitRun): Promise<string | undefined> {
  return (await git(cwd, ["rev-parse", "--show-toplevel"], run))?.trim() || undefined;
}

/** The state of the repository at `root` as seen from `cwd`, as text for the model. */
export async function gitState(cwd: string, root: string, o: GitOptions, run: GitRun): Promise<GitState> {
  const [status, log] = await Promise.all([
    git(cwd, ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"], run),
    o.recentCommits > 0
      ? git(cwd, ["log", `-n${o.recentCommits}`, "--no-decorate", "--format=%h %s (%an, %ar)"], run)
      : Promise.resolve(""),
  ]);
  const lines = (status ?? "").split("\n").filter((l) => l !== "");
  const head = lines[0]?.startsWith("## ") ? lines.shift()!.slice(3) : "";
  const out: string[] = [`Repository: ${root}`, `Branch: ${describeBranch(head)}`];
  if (lines.length === 0) out.push("Working tree: clean");
  else {
    const untracked = lines.filter((l) => l.startsWith("??")).length;
    const changed = lines.length - untracked;
    out.push(`Working tree: ${changed} changed, ${untracked} untracked (git status --porcelain)`);
    for (const l of lines.slice(0, o.maxStatusEntries)) out.push(`  ${l}`);
    if (lines.length > o.maxStatusEntries) out.push(`  ... ${lines.length - o.maxStatusEntries} more`);
  }
  const commits = (log ?? "").split("\n").filter((l) => l !== "");
  if (commits.length > 0) {
    out.push("Recent commits:");
    for (const c of commits) out.push(`  ${c}`);
  } else if (o.recentCommits > 0) out.push("Recent commits: none yet");
  return { text: out.join("\n"), root };
}

/** "## main...origin/main [ahead 1]" -> "main (tracking origin/main, ahead 1)". */
function describeBranch(head: string): string {
  if (head === "") return "(unknown)";
  if (head.startsWith("No commits yet on "))
    return `${head.slice("No commits yet on ".length)} (no commits yet)`;
  if (head.startsWith("HEAD (no branch)")) return "detached HEAD";
  const m = /^(.+?)(?:\.\.\.(\S+))?(?: \[(.+)\])?$/.exec(head);
  if (!m) return head;
  const extra = [m[2] ? `tracking ${m[2]}` : "", m[3] ?? ""].filter(Boolean).join(", ");
  return extra ? `${m[1]} (${extra})` : m[1]!;
}
