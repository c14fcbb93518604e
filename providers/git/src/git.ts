// Running the real git binary: in the repository the call names, with an environment
// of a few allowlisted variables, configuration that keeps a repository from running
// programs of its own (fsmonitor, pager, external diff, hooks unless allowed), and, where
// bubblewrap works, inside the same sandbox `bash` commands get (runtime/sandbox.ts): the
// roots writable, the kernel-owned paths read-only, no network except for a push that
// the configuration allows, no other process visible.
import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { probeSandbox, removePlaceholders, wrap } from "@pluggableharness/runtime/sandbox";
import { type PreviewContext, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";

/** Variables git may see, copied from the plugin's own (already allowlisted) environment. */
const PASSED = [
  "PATH",
  "HOME",
  "LANG",
  "TZ",
  "USER",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_DATE",
];

function gitEnvironment(readOnly: boolean): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of PASSED) if (process.env[k] !== undefined) env[k] = process.env[k];
  Object.assign(env, {
    GIT_TERMINAL_PROMPT: "0",
    GIT_PAGER: "cat",
    PAGER: "cat",
    GIT_EDITOR: "true",
    // Parseable, untranslated messages.
    LC_ALL: "C",
    ...(readOnly ? { GIT_OPTIONAL_LOCKS: "0" } : {}),
  });
  return env;
}

/** Configuration every command runs with: nothing in the repository starts a program. */
function safetyConfig(): string[] {
  const c = [
    "core.quotePath=false",
    "core.fsmonitor=false",
    "core.pager=cat",
    "color.ui=false",
    "diff.external=",
  ];
  if (!settings.hooks) c.push("core.hooksPath=/dev/null");
  return c.flatMap((x) => ["-c", x]);
}

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
  const argv = [settings.git, ...safetyConfig(), ...args];
  let file = settings.git;
  let fileArgs = argv.slice(1);
  let placeholders: string[] = [];
  if (settings.sandbox !== "off") {
    const probe = probeSandbox();
    if (probe.ok) {
      const writable = settings.jail ? [...settings.jail.roots] : [...(opts.writable ?? [cwd])];
      const w = wrap(
        {
          bwrap: probe.bwrap,
          writable: opts.readOnly ? [] : writable,
          protectedPaths: await kernelOwned(ctx),
          network: opts.network === true,
          cwd,
          // A read needs no private /tmp (it writes nothing), and must still see a repository under /tmp.
          privateTmp: !opts.readOnly,
        },
        argv,
      );
      file = w.file;
      fileArgs = w.args;
      placeholders = w.placeholders;
    } else if (settings.sandbox === "required") {
      throw new ToolFailure(
        "execution_failed",
        `the git provider requires its sandbox (sandbox = "required"), and it cannot run here: ${probe.reason}`,
      );
    } else if (!warnedUnconfined) {
      warnedUnconfined = true;
      unconfinedNotice = `sandbox unavailable (${probe.reason}): git runs unconfined`;
      ctx.log.warn(unconfinedNotice);
    }
  }
  const max = settings.maxOutputBytes;
  try {
    return await new Promise<GitResult>((resolve, reject) => {
      execFile(
        file,
        fileArgs,
        {
          cwd,
          env: gitEnvironment(opts.readOnly),
          encoding: "buffer",
          maxBuffer: Math.max(max * 4, 16 * 1024 * 1024),
          timeout: settings.timeoutMs,
          killSignal: "SIGKILL",
          signal: ctx.signal,
        },
        (err, stdout, stderr) => {
          const e = err as (NodeJS.ErrnoException & { code?: number | string; killed?: boolean }) | null;
          if (e && typeof e.code === "string") {
            if (e.code === "ENOENT")
              return reject(
                new ToolFailure(
                  "execution_failed",
                  `git was not found (${settings.git}); install git or set git = "<path>"`,
                ),
              );
            if (e.code === "ABORT_ERR") return reject(e);
            return reject(new ToolFailure("execution_failed", `git: ${e.message}`));
          }
          if (e?.killed)
            return reject(
              new ToolFailure("timeout", `git ${args[0]} took longer than ${settings.timeoutMs} ms`),
            );
          const out = stdout as Buffer;
          const truncated = out.length > max;
          resolve({
            stdout: (truncated ? out.subarray(0, max) : out).toString("utf8"),
            stderr: (stderr as Buffer).toString("utf8"),
            code: e ? Number(e.code ?? 1) : 0,
            truncated,
          });
        },
      );
    });
  } finally {
    removePlaceholders(placeholders);
  }
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
