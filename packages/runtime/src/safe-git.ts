// Running git on a repository the model may have written to (docs/security/git.md). A
// repository's configuration can make git start programs of its own choosing (an
// fsmonitor, a filter or diff driver, a pager, a hook, an ssh command, ...), and the
// project and its .git are writable from the bash sandbox. So every git call of the
// kernel and of first-party plugins goes through here:
//
//   - a minimal environment: locale, HOME, identity, a PATH without relative entries or
//     directories the project controls; no secret, no GIT_* variable of the caller's
//     (GIT_DIR, GIT_CONFIG_*, GIT_SSH*, GIT_EXEC_PATH...), no system configuration;
//   - every key that names a program neutralised: read the effective configuration with
//     its origin (`git config --list --show-origin --show-scope`, which runs nothing) and
//     override, on the command line, each such key whose value comes from the repository
//     or from any file inside a directory the project controls, with the user's own
//     global value where there is one, else with a value that starts nothing; the keys the
//     kernel never needs (fsmonitor, pager, editor, external diff, hooks unless allowed)
//     are overridden whatever their origin;
//   - where bubblewrap works, inside the sandbox (runtime/sandbox.ts): a read-only call
//     with nothing writable and no network, a mutating one with what its caller allows.

import { execFile } from "node:child_process";
import { existsSync, realpathSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join, relative, resolve, sep } from "node:path";
import { repositoryTop } from "@pluggableharness/config/git-paths";
import { probeSandbox, removePlaceholders, type SandboxMode, wrap } from "./sandbox.ts";

/** The caller's variables git may see: locale, time zone, home (for the global config) and identity. */
const PASSED_ENV = [
  "HOME",
  "USER",
  "LOGNAME",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "LC_MESSAGES",
  "TZ",
  "XDG_CONFIG_HOME",
  "GIT_AUTHOR_NAME",
  "GIT_AUTHOR_EMAIL",
  "GIT_AUTHOR_DATE",
  "GIT_COMMITTER_NAME",
  "GIT_COMMITTER_EMAIL",
  "GIT_COMMITTER_DATE",
];

/** Protocols git may use: the ext:: and fd:: transports run or wire up programs; remote helpers (`vcs`) too. */
const ALLOWED_PROTOCOLS = "file:git:http:https:ssh";

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Whether `path` (or where it leads through links) lies in one of `dirs`. */
export function insideAny(path: string, dirs: readonly string[]): boolean {
  const r = real(path);
  return dirs.some((d) => inside(path, d) || inside(r, d) || inside(path, real(d)) || inside(r, real(d)));
}

/**
 * The top of the working tree containing `dir`, found the way git finds it (the nearest
 * ancestor holding a `.git` directory or file), without running git. Undefined outside one.
 */
export const findRepositoryTop: (dir: string) => string | undefined = repositoryTop;

/** PATH without relative entries or entries inside a directory the project controls. */
export function safePath(path: string | undefined, untrusted: readonly string[]): string {
  const kept: string[] = [];
  for (const entry of (path ?? "").split(delimiter)) {
    if (!entry || !isAbsolute(entry) || insideAny(entry, untrusted) || kept.includes(entry)) continue;
    kept.push(entry);
  }
  return kept.length > 0 ? kept.join(delimiter) : "/usr/local/bin:/usr/bin:/bin";
}

/** The environment git runs with: see the file comment. */
export function gitEnvironment(
  source: NodeJS.ProcessEnv,
  untrusted: readonly string[],
  o: { readOnly: boolean; extra?: Readonly<Record<string, string>> },
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of PASSED_ENV) if (source[k] !== undefined) env[k] = source[k];
  Object.assign(env, {
    PATH: safePath(source["PATH"], untrusted),
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    // Empty, not unset: git then neither runs core.askPass nor falls back to SSH_ASKPASS.
    GIT_ASKPASS: "",
    GIT_EDITOR: ":",
    GIT_SEQUENCE_EDITOR: ":",
    GIT_PAGER: "cat",
    PAGER: "cat",
    // Empty, not unset: git then ignores core.gitProxy.
    GIT_PROXY_COMMAND: "",
    GIT_ALLOW_PROTOCOL: ALLOWED_PROTOCOLS,
    ...(o.readOnly ? { GIT_OPTIONAL_LOCKS: "0" } : {}),
    ...o.extra,
  });
  return env;
}

/** The executable for `git`: an absolute path as configured, else the first match on the safe PATH. */
export function resolveGit(git: string, path: string): string | undefined {
  if (isAbsolute(git)) return git;
  if (git.includes("/")) return undefined; // relative to a directory the model controls
  for (const dir of path.split(delimiter)) {
    const p = join(dir, git);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      // not there
    }
  }
  return undefined;
}

export interface ConfigEntry {
  /** system, global, local, worktree or command. */
  readonly scope: string;
  /** Where git read it: `file:<path>` (relative paths are relative to the working directory), `blob:...`, ... */
  readonly origin: string;
  /** As git prints it: section and name in lower case, the subsection as written. */
  readonly key: string;
  /** Null for a key written without `=`. */
  readonly value: string | null;
}

/** Parses `git config --list --show-scope --show-origin -z`. */
export function parseConfigList(out: string): ConfigEntry[] {
  const fields = out.split("\0");
  const entries: ConfigEntry[] = [];
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const [scope, origin, kv] = [fields[i]!, fields[i + 1]!, fields[i + 2]!];
    const nl = kv.indexOf("\n");
    entries.push({
      scope,
      origin,
      key: nl < 0 ? kv : kv.slice(0, nl),
      value: nl < 0 ? null : kv.slice(nl + 1),
    });
  }
  return entries;
}

/** Section, subsection ("" when none) and variable name of a key. */
export function splitKey(key: string): { section: string; sub: string; name: string } {
  const first = key.indexOf(".");
  const last = key.lastIndexOf(".");
  if (first < 0) return { section: key.toLowerCase(), sub: "", name: "" };
  return {
    section: key.slice(0, first).toLowerCase(),
    sub: first === last ? "" : key.slice(first + 1, last),
    name: key.slice(last + 1).toLowerCase(),
  };
}

/**
 * What a key that names a program is overridden with when its value is not the user's own:
 * a value that starts nothing (an empty command makes git fail that one operation with
 * "cannot run", which is the point), or git's built-in default program. Undefined: not such a key.
 */
export function neutralValue(key: string): string | undefined {
  const { section, sub, name } = splitKey(key);
  const s = `${section}.${name}`;
  if (sub === "") {
    switch (s) {
      case "core.sshcommand":
        return "ssh";
      case "gpg.program":
        return "gpg";
      case "gpg.format":
        return "openpgp";
      case "init.templatedir":
        return "";
      case "sendemail.sendmailcmd":
      case "sendemail.tocmd":
      case "sendemail.cccmd":
      case "sendemail.headercmd":
      case "sendemail.smtpserver":
      // add -p pipes its diffs through this one.
      case "interactive.difffilter":
        return "";
    }
    // pager.<command> has no subsection: pager.log, pager.status...
    if (section === "pager") return "false";
    return undefined;
  }
  switch (s) {
    case "filter.clean":
    case "filter.smudge":
    case "filter.process":
    case "diff.command":
    case "diff.textconv":
    case "merge.driver":
    case "difftool.cmd":
    case "difftool.path":
    case "mergetool.cmd":
    case "mergetool.path":
    case "browser.cmd":
    case "browser.path":
    case "man.cmd":
    case "man.path":
    case "guitool.cmd":
    // git archive --format=<x> pipes the tar stream through it; empty: archive fails, nothing runs.
    case "tar.command":
      return "";
    case "submodule.update":
      return "checkout";
    case "gpg.program":
      return sub.toLowerCase() === "x509" ? "gpgsm" : sub.toLowerCase() === "ssh" ? "ssh-keygen" : "gpg";
    case "gpg.defaultkeycommand":
      return "";
  }
  return undefined;
}

/** Overrides applied to every call whatever the configuration says: what the kernel never needs git to start. */
export function fixedOverrides(hooks: boolean): Array<[string, string]> {
  return [
    ["core.fsmonitor", "false"],
    ["core.pager", "cat"],
    ["core.editor", ":"],
    ["sequence.editor", ":"],
    ["core.askPass", ""],
    ["diff.external", ""],
    ["core.alternateRefsCommand", ""],
    ["log.showSignature", "false"],
    // A mistyped subcommand is never run as its nearest match (an alias may be a shell command).
    ["help.autoCorrect", "0"],
    // No recursion into submodules (their own configuration) and no background jobs.
    ["submodule.recurse", "false"],
    ["fetch.recurseSubmodules", "false"],
    ["push.recurseSubmodules", "no"],
    ["gc.auto", "0"],
    ["maintenance.auto", "false"],
    ...(hooks ? [] : ([["core.hooksPath", "/dev/null"]] as Array<[string, string]>)),
  ];
}

/** Whether an entry is the user's own: global configuration read from a file outside every untrusted directory. */
export function trustedEntry(e: ConfigEntry, untrusted: readonly string[]): boolean {
  if (e.scope !== "global" && e.scope !== "system") return false;
  if (!e.origin.startsWith("file:")) return false;
  const file = e.origin.slice("file:".length);
  return isAbsolute(file) && !insideAny(file, untrusted);
}

export class UnsafeConfigError extends Error {}

/**
 * The `-c` overrides for a configuration: the fixed ones, then, for each key naming a
 * program whose effective value is not trusted, the last trusted value of that key or the
 * neutral one. Credential helpers are a list: an untrusted one empties it, and the trusted
 * ones are added back in order. Configured hooks (`hook.<name>.*`, git 2.54+) are switched
 * off by name unless hooks are allowed.
 */
export function configOverrides(
  entries: readonly ConfigEntry[],
  o: { untrusted: readonly string[]; hooks: boolean },
): Array<[string, string]> {
  const out = fixedOverrides(o.hooks);
  const fixed = new Set(out.map(([k]) => normalKey(k)));
  const last = new Map<string, { entry: ConfigEntry; trusted: boolean }>();
  const lastTrusted = new Map<string, ConfigEntry>();
  const helpers: Array<{ entry: ConfigEntry; trusted: boolean }> = [];
  const hookNames = new Set<string>();
  for (const e of entries) {
    const t = trustedEntry(e, o.untrusted);
    const { section, name, sub } = splitKey(e.key);
    if (section === "credential" && name === "helper") {
      helpers.push({ entry: e, trusted: t });
      continue;
    }
    if (section === "hook" && sub !== "") hookNames.add(sub);
    const k = normalKey(e.key);
    last.set(k, { entry: e, trusted: t });
    if (t) lastTrusted.set(k, e);
  }
  const required = new Set<string>();
  for (const [k, { entry, trusted }] of last) {
    if (trusted || fixed.has(k)) continue;
    const neutral = neutralValue(entry.key);
    if (neutral === undefined) continue;
    const keep = lastTrusted.get(k);
    out.push([entry.key, keep ? (keep.value ?? "") : neutral]);
    const { section, sub } = splitKey(entry.key);
    if (section === "filter" && !keep) required.add(sub);
  }
  // A filter whose command was emptied must not be required, or every file it covers fails.
  for (const sub of required) out.push([`filter.${sub}.required`, "false"]);
  if (helpers.some((h) => !h.trusted)) {
    out.push(["credential.helper", ""]);
    for (const h of helpers) if (h.trusted) out.push([h.entry.key, h.entry.value ?? ""]);
  }
  if (!o.hooks) for (const name of hookNames) out.push([`hook.${name}.enabled`, "false"]);
  for (const [k] of out)
    if (k.includes("=") || k.includes("\n"))
      // `-c key=value` cannot say a key holding "=": refuse rather than leave it in force.
      throw new UnsafeConfigError(
        `the repository's configuration has a key git cannot be told to override (${JSON.stringify(k)}); ` +
          "remove it (git config --unset) to let the agent run git here",
      );
  return out;
}

function normalKey(key: string): string {
  const { section, sub, name } = splitKey(key);
  return sub === "" ? `${section}.${name}` : `${section}.${sub}.${name}`;
}

/**
 * Whether the repository (or the project) names the program git starts for a local
 * remote (`remote.<name>.uploadpack` / `receivepack`). These cannot be overridden with
 * `-c`: git keeps the first value it reads and only complains about the rest.
 */
export function remoteProgramsPlanted(
  entries: readonly ConfigEntry[],
  untrusted: readonly string[],
): boolean {
  return entries.some((e) => {
    const { section, sub, name } = splitKey(e.key);
    return (
      section === "remote" &&
      sub !== "" &&
      (name === "uploadpack" || name === "receivepack") &&
      !trustedEntry(e, untrusted)
    );
  });
}

/**
 * Options after the subcommand: no diff driver or textconv filter for what shows diffs,
 * and, when the repository names its own upload-pack or receive-pack, git's own for the
 * commands that talk to a remote (the option beats the configuration).
 */
export function subcommandGuards(args: readonly string[], remotePrograms = false): string[] {
  const sub = args[0];
  if (sub === "diff" || sub === "show" || sub === "log") return ["--no-ext-diff", "--no-textconv"];
  if (sub === "blame" || sub === "grep") return ["--no-textconv"];
  if (remotePrograms && (sub === "fetch" || sub === "pull" || sub === "ls-remote"))
    return ["--upload-pack=git-upload-pack"];
  if (remotePrograms && sub === "push") return ["--receive-pack=git-receive-pack"];
  return [];
}

/** Subcommands subcommandGuards makes safe against a planted upload-pack or receive-pack. */
const REMOTE_GUARDED = new Set(["fetch", "pull", "ls-remote", "push"]);

export interface SafeGitOptions {
  /** Where git runs. */
  readonly cwd: string;
  /** The git executable: a name looked up on the safe PATH, or an absolute path (default "git"). */
  readonly git?: string;
  /**
   * Directories the project (and so the model) may write: the roots. Configuration read
   * from files there is not trusted and PATH entries there are dropped. The working
   * directory and the repository's top are always added.
   */
  readonly untrusted?: readonly string[];
  /** Let the repository's hooks run (the git provider's `hooks = true`). Default false. */
  readonly hooks?: boolean;
  /** The OS sandbox: "required", "best_effort" (default) or "off". */
  readonly sandbox?: SandboxMode;
  /**
   * A call that changes the repository: the directories it may write in the sandbox and
   * the paths kept read-only there. Without it the call is read-only (nothing writable).
   */
  readonly write?: { readonly writable: readonly string[]; readonly protectedPaths: readonly string[] };
  /** Keep the network in the sandbox (a push the configuration allows). Default false. */
  readonly network?: boolean;
  /** Where the passed variables come from (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Variables the caller adds (e.g. LC_ALL=C for parseable messages). */
  readonly extraEnv?: Readonly<Record<string, string>>;
  /** More `-c` settings of the caller's own; the safety overrides come after them and win. */
  readonly config?: readonly string[];
  readonly timeoutMs?: number;
  readonly maxBuffer?: number;
  readonly signal?: AbortSignal;
  /** Told once per call that bubblewrap cannot run here and git runs unconfined (best_effort). */
  readonly onUnconfined?: (reason: string) => void;
}

export interface SafeGitResult {
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  /** Exit status (null when killed or not started). */
  readonly code: number | null;
  /** Set when git could not run or was stopped: ENOENT, a timeout (killed), an abort. */
  readonly error?: NodeJS.ErrnoException & { killed?: boolean };
  /** Whether it ran in the sandbox. */
  readonly confined: boolean;
}

export class SandboxRequiredError extends Error {}

/** A failure to start: the shape execFile reports. */
function startError(message: string, code: string): SafeGitResult {
  const error = Object.assign(new Error(message), { code }) as NodeJS.ErrnoException;
  return { stdout: Buffer.alloc(0), stderr: Buffer.from(message), code: null, error, confined: false };
}

/** The global configuration files git reads for this environment (those that exist). */
function globalConfigFiles(env: NodeJS.ProcessEnv): string[] {
  const home = env["HOME"];
  const xdg = env["XDG_CONFIG_HOME"] || (home ? join(home, ".config") : undefined);
  return [home ? join(home, ".gitconfig") : "", xdg ? join(xdg, "git", "config") : ""].filter(
    (f) => f !== "" && isAbsolute(f) && existsSync(f),
  );
}

interface Prepared {
  readonly file: string;
  readonly env: NodeJS.ProcessEnv;
  readonly untrusted: string[];
}

function prepare(o: SafeGitOptions): Prepared | SafeGitResult {
  const top = findRepositoryTop(o.cwd);
  const untrusted = [...(o.untrusted ?? []), o.cwd, ...(top ? [top] : [])].map((d) => resolve(d));
  const env = gitEnvironment(o.env ?? process.env, untrusted, {
    readOnly: o.write === undefined,
    ...(o.extraEnv ? { extra: o.extraEnv } : {}),
  });
  const git = o.git ?? "git";
  const file = resolveGit(git, env["PATH"]!);
  if (!file)
    return startError(
      `git was not found (${git}) on PATH outside the project${git.includes("/") && !isAbsolute(git) ? "; give an absolute path" : ""}`,
      "ENOENT",
    );
  return { file, env, untrusted };
}

function execute(
  file: string,
  args: readonly string[],
  o: SafeGitOptions,
  env: NodeJS.ProcessEnv,
  confined: boolean,
): Promise<SafeGitResult> {
  return new Promise((done) => {
    execFile(
      file,
      [...args],
      {
        cwd: o.cwd,
        env,
        encoding: "buffer",
        maxBuffer: o.maxBuffer ?? 16 * 1024 * 1024,
        timeout: o.timeoutMs ?? 60_000,
        killSignal: "SIGKILL",
        ...(o.signal ? { signal: o.signal } : {}),
      },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { killed?: boolean }) | null;
        const failedToRun = e && (typeof e.code === "string" || e.killed);
        done({
          stdout: stdout as Buffer,
          stderr: stderr as Buffer,
          code: !e ? 0 : failedToRun ? null : Number(e.code ?? 1),
          ...(failedToRun ? { error: e } : {}),
          confined,
        });
      },
    );
  });
}

/**
 * The overrides for `cwd`'s configuration as it is now. Reading the configuration runs no
 * program (git config reads files only), so it runs outside the sandbox.
 */
async function overridesFor(
  p: Prepared,
  o: SafeGitOptions,
): Promise<{ overrides: Array<[string, string]>; remotePrograms: boolean } | SafeGitResult> {
  const listed = await execute(
    p.file,
    ["config", "--list", "--show-origin", "--show-scope", "-z"],
    { ...o, maxBuffer: 4 * 1024 * 1024 },
    p.env,
    false,
  );
  if (listed.error || listed.code !== 0) return listed;
  const entries = parseConfigList(listed.stdout.toString("utf8"));
  try {
    return {
      overrides: configOverrides(entries, { untrusted: p.untrusted, hooks: o.hooks === true }),
      remotePrograms: remoteProgramsPlanted(entries, p.untrusted),
    };
  } catch (err) {
    if (err instanceof UnsafeConfigError) return startError(err.message, "EUNSAFECONFIG");
    throw err;
  }
}

/**
 * Runs `git <args>` safely (see the file comment). Never throws for a failing git: the
 * result says what happened. Throws SandboxRequiredError when `sandbox` is "required" and
 * bubblewrap cannot run here.
 */
export async function runSafeGit(args: readonly string[], o: SafeGitOptions): Promise<SafeGitResult> {
  const p = prepare(o);
  if (!("file" in p)) return p;
  const listed = await overridesFor(p, o);
  if (!("overrides" in listed)) return listed;
  const argv = [
    p.file,
    "--no-pager",
    ...(o.config ?? []).flatMap((c) => ["-c", c]),
    ...listed.overrides.flatMap(([k, v]) => ["-c", `${k}=${v}`]),
    ...(args.length > 0
      ? [args[0]!, ...subcommandGuards(args, listed.remotePrograms), ...args.slice(1)]
      : []),
  ];
  // Any other command reaching a local remote would start the planted program: no file transport then.
  const env =
    listed.remotePrograms && !REMOTE_GUARDED.has(args[0] ?? "")
      ? { ...p.env, GIT_ALLOW_PROTOCOL: ALLOWED_PROTOCOLS.replace("file:", "") }
      : p.env;
  const mode = o.sandbox ?? "best_effort";
  if (mode !== "off") {
    const probe = probeSandbox();
    if (probe.ok) {
      const w = wrap(
        {
          bwrap: probe.bwrap,
          writable: o.write ? [...o.write.writable] : [],
          // The user's global configuration (identity, credential helpers) stays readable
          // under the private /tmp a write gets, and read-only.
          protectedPaths: o.write ? [...o.write.protectedPaths, ...globalConfigFiles(p.env)] : [],
          network: o.network === true,
          cwd: o.cwd,
          // A read writes nothing, and must still see a repository under /tmp.
          privateTmp: o.write !== undefined,
        },
        argv,
      );
      try {
        return await execute(w.file, w.args, o, env, true);
      } finally {
        removePlaceholders(w.placeholders);
      }
    }
    if (mode === "required")
      throw new SandboxRequiredError(`git must run in the sandbox (sandbox = "required"): ${probe.reason}`);
    o.onUnconfined?.(probe.reason);
  }
  return execute(argv[0]!, argv.slice(1), o, env, false);
}

/** For tests and `agent doctor`: the overrides a call in `cwd` would run with now. */
export async function safeGitOverrides(o: SafeGitOptions): Promise<Array<[string, string]> | SafeGitResult> {
  const p = prepare(o);
  if (!("file" in p)) return p;
  const r = await overridesFor(p, o);
  return "overrides" in r ? r.overrides : r;
}
