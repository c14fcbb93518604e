// Running the real git binary: in the repository the call names, through the runtime's
// safe git (docs/security/git.md): an environment of a few allowlisted variables, every
// configuration key that would start a program of the repository's choosing neutralised
// (fsmonitor, pager, drivers, filters, hooks unless allowed, ...), and, where bubblewrap
// works, inside the same sandbox `bash` commands get (runtime/sandbox.ts): the roots
// writable, the kernel-owned paths read-only, no network except for a push that the
// configuration allows, no other process visible.
import { stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { gitMetadataKind } from "@pluggableharness/runtime/git-metadata";
import { runSafeGit, SandboxRequiredError } from "@pluggableharness/runtime/safe-git";
import { type PreviewContext, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";

let protectedPaths: Promise<string[]> | undefined;

/** The kernel-owned paths (KernelCallbackService.ExecEnvironment); none from a kernel that does not serve it. */
export function kernelOwned(ctx: PreviewContext): Promise<string[]> {
  protectedPaths ??= (async () => {
    try {
      const k = await ctx.kernel.service();
      const r = await k.execEnvironment({ secretPatterns: [] }, { timeoutMs: 5_000 });
      return [...r.protectedPaths];
    } catch {
      return [];
    }
  })();
  return protectedPaths;
}

export interface Repo {
  /** Where git runs: the directory the call named (relative paths are taken from it). */
  cwd: string;
  /** Working tree root, absolute. */
  top: string;
  /** The .git directory, absolute. */
  gitDir: string;
}

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
  truncated: boolean;
}

let warnedUnconfined = false;
export let unconfinedNotice: string | undefined;

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Runs `git <args>` in `cwd`; never throws for a non-zero exit (the caller classifies it). */
export async function runGit(
  cwd: string,
  args: readonly string[],
  ctx: PreviewContext,
  opts: { readOnly: boolean; network?: boolean; writable?: readonly string[] } = { readOnly: true },
): Promise<GitResult> {
  const roots = settings.jail ? [...settings.jail.roots] : [...(opts.writable ?? [cwd])];
  let write: { writable: string[]; protectedPaths: string[] } | undefined;
  if (!opts.readOnly) {
    const owned = await kernelOwned(ctx);
    // With hooks off nothing of the repository's runs here, and git itself writes its
    // config (branch tracking): the git metadata stays writable. With hooks on, a hook runs
    // here, and must not plant anything for later.
    write = {
      writable: roots,
      protectedPaths: settings.hooks ? owned : owned.filter((p) => gitMetadataKind(p) === undefined),
    };
  }
  let r: Awaited<ReturnType<typeof runSafeGit>>;
  try {
    r = await runSafeGit(args, {
      cwd,
      git: settings.git,
      untrusted: roots,
      hooks: settings.hooks,
      sandbox: settings.sandbox,
      ...(write ? { write } : {}),
      network: opts.network === true,
      extraEnv: { LC_ALL: "C" },
      config: ["core.quotePath=false", "color.ui=false"],
      timeoutMs: settings.timeoutMs,
      maxBuffer: Math.max(settings.maxOutputBytes * 4, 16 * 1024 * 1024),
      signal: ctx.signal,
      onUnconfined: (reason) => {
        if (warnedUnconfined) return;
        warnedUnconfined = true;
        unconfinedNotice = `sandbox unavailable (${reason}): git runs unconfined`;
        ctx.log.warn(unconfinedNotice);
      },
    });
  } catch (err) {
    if (err instanceof SandboxRequiredError)
      throw new ToolFailure(
        "execution_failed",
        `the git provider requires its sandbox (sandbox = "required"), and it cannot run here: ${err.message}`,
      );
    throw err;
  }
  const e = r.error;
  if (e) {
    if (e.code === "ENOENT")
      throw new ToolFailure(
        "execution_failed",
        `git was not found (${settings.git}); install git or set git = "<path>"`,
      );
    if (e.code === "ABORT_ERR") throw e;
    if (e.killed)
      throw new ToolFailure("timeout", `git ${args[0]} took longer than ${settings.timeoutMs} ms`);
    throw new ToolFailure("execution_failed", `git: ${e.message}`);
  }
  const max = settings.maxOutputBytes;
  const truncated = r.stdout.length > max;
  return {
    stdout: (truncated ? r.stdout.subarray(0, max) : r.stdout).toString("utf8"),
    stderr: r.stderr.toString("utf8"),
    code: r.code ?? 1,
    truncated,
  };
}

/** The failure a non-zero git exit is, classified by its message. */
export function gitFailure(r: GitResult, what: string): ToolFailure {
  const msg = (r.stderr || r.stdout).trim().split("\n").slice(0, 12).join("\n");
  if (
    /unknown revision|bad revision|invalid object name|not a valid object name|does not exist|did not match any|pathspec .* did not match|no such path|bad object/i.test(
      msg,
    )
  )
    return new ToolFailure("not_found", `${what}: ${msg}`);
  if (/Read-only file system|Permission denied|Operation not permitted/i.test(msg))
    return new ToolFailure("permission_denied", `${what}: ${msg}`);
  if (/index\.lock|another git process/i.test(msg))
    return new ToolFailure("concurrency_conflict", `${what}: ${msg}`, { retryable: true });
  return new ToolFailure("execution_failed", `${what} failed (exit ${r.code}): ${msg}`, {
    details: { exit_code: r.code },
  });
}

/** Runs git and returns stdout, or throws the classified failure. */
export async function git(
  repo: Repo,
  args: readonly string[],
  ctx: PreviewContext,
  opts: { readOnly: boolean; network?: boolean } = { readOnly: true },
): Promise<GitResult> {
  const r = await runGit(repo.cwd, args, ctx, {
    ...opts,
    writable: [repo.top, ...(inside(repo.gitDir, repo.top) ? [] : [repo.gitDir])],
  });
  if (r.code !== 0) throw gitFailure(r, `git ${args.find((a) => !a.startsWith("-")) ?? ""}`.trim());
  return r;
}

/** The repository a call works in: its `repo` argument, else the working directory. */
export async function repoOf(repoArg: string | undefined, ctx: PreviewContext): Promise<Repo> {
  const requested = repoArg ?? ctx.workingDirectory;
  if (!requested)
    throw new ToolFailure("invalid_arguments", "no repository: give repo, or call with a working directory");
  let dir: string;
  if (settings.jail) dir = (await settings.jail.resolve(requested, ctx.workingDirectory)).real;
  else {
    if (!isAbsolute(requested) && !ctx.workingDirectory)
      throw new ToolFailure("invalid_arguments", `relative repo ${requested} needs a working directory`);
    dir = isAbsolute(requested) ? requested : join(ctx.workingDirectory!, requested);
  }
  const st = await stat(dir).catch(() => undefined);
  if (!st?.isDirectory()) throw new ToolFailure("not_found", `${requested} is not a directory`);
  const r = await runGit(dir, ["rev-parse", "--show-toplevel", "--absolute-git-dir"], ctx);
  if (r.code !== 0) throw new ToolFailure("not_found", `${requested} is not inside a git repository`);
  const [top, gitDir] = r.stdout.trim().split("\n");
  if (settings.jail && !settings.jail.roots.some((root) => inside(top!, root)))
    throw new ToolFailure("permission_denied", `the repository ${top} is not inside the configured roots`);
  return { cwd: dir, top: top!, gitDir: gitDir! };
}

/** Kernel-owned files among `files` (relative to the repository top). */
export async function ownedAmong(
  repo: Repo,
  files: readonly string[],
  ctx: PreviewContext,
): Promise<string[]> {
  const owned = await kernelOwned(ctx);
  return files.filter((f) => owned.some((p) => inside(join(repo.top, f), p)));
}

/** A change to kernel-owned files is refused before git runs (the sandbox would stop it half way). */
export async function refuseOwned(
  repo: Repo,
  files: readonly string[],
  what: string,
  ctx: PreviewContext,
): Promise<void> {
  const hit = await ownedAmong(repo, files, ctx);
  if (hit.length > 0)
    throw new ToolFailure(
      "permission_denied",
      `${what} would change ${hit.join(", ")}, which belong${hit.length === 1 ? "s" : ""} to the agent's kernel and no tool may write`,
    );
}
