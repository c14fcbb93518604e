// A task's fresh checkout: a clone of a git target at its ref, or a copy of a local
// directory, at a path derived from the task alone (the session file records its working
// directory, so a worker resuming the task must recreate it at the same place). The
// changes the agent makes are measured against a tree recorded at checkout time, through
// a scratch index, so the agent's own git state (its index, its commits) is left alone.
import { execFile } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Target } from "./types.ts";

const run = promisify(execFile);

const GIT_ENV = {
  GIT_TERMINAL_PROMPT: "0",
  GIT_AUTHOR_NAME: "agent fleet",
  GIT_AUTHOR_EMAIL: "fleet@localhost",
  GIT_COMMITTER_NAME: "agent fleet",
  GIT_COMMITTER_EMAIL: "fleet@localhost",
};

async function git(cwd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await run("git", args, {
      cwd,
      env: { ...process.env, ...GIT_ENV, ...env },
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`git ${args[0]}: ${(e.stderr || e.message).trim().split("\n").slice(-3).join(" ")}`);
  }
}

/** Where task `taskId` of `batchId` is checked out under `workRoot`. */
export function checkoutDir(workRoot: string, batchId: string, taskId: string): string {
  return join(workRoot, batchId, taskId);
}

/**
 * Creates the checkout (replacing whatever an earlier attempt left) and returns the tree
 * the task's changes are measured against.
 */
export async function prepareCheckout(dir: string, target: Target): Promise<string> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, ".."), { recursive: true });
  if (target.kind === "git" || target.ref !== undefined) {
    await git(join(dir, ".."), ["clone", "--quiet", "--no-hardlinks", "--", target.location, dir]);
    if (target.ref !== undefined) await git(dir, ["checkout", "--quiet", "--detach", target.ref]);
  } else {
    if (!existsSync(target.location)) throw new Error(`target ${target.location} does not exist`);
    cpSync(target.location, dir, { recursive: true, verbatimSymlinks: true });
    if (!existsSync(join(dir, ".git"))) await git(dir, ["init", "--quiet", "--template="]);
  }
  return snapshotTree(dir);
}

/** The tree of everything in the checkout now (untracked files included, ignored ones not). */
async function snapshotTree(dir: string): Promise<string> {
  const index = join(dir, ".git", "fleet-index");
  try {
    // Seeded from the real index, whose stat cache spares rehashing unchanged files.
    if (existsSync(join(dir, ".git", "index"))) copyFileSync(join(dir, ".git", "index"), index);
    await git(dir, ["add", "--all", "--", "."], { GIT_INDEX_FILE: index });
    return (await git(dir, ["write-tree"], { GIT_INDEX_FILE: index })).trim();
  } finally {
    rmSync(index, { force: true });
  }
}

/** The checkout's changes since `baseTree`, as a binary patch `git apply` takes. */
export async function workDiff(dir: string, baseTree: string): Promise<string> {
  const tree = await snapshotTree(dir);
  if (tree === baseTree) return "";
  return git(dir, ["diff", "--binary", "--no-color", "--no-ext-diff", baseTree, tree]);
}

/** Replays an earlier attempt's changes onto a fresh checkout of the same base. */
export async function applyWorkDiff(dir: string, diff: string): Promise<void> {
  if (diff === "") return;
  const patch = join(dir, ".git", "fleet-resume.patch");
  writeFileSync(patch, diff);
  try {
    await git(dir, ["apply", "--binary", "--whitespace=nowarn", patch]);
  } finally {
    rmSync(patch, { force: true });
  }
}
