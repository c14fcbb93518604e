// Starting one command the way every exec operation does: in the session's shell state
// (working directory and exported variables), in the sandbox where it runs, through the
// egress proxy when hosts are allowed, optionally on a pseudo-terminal (util-linux
// `script`), with stdin from the call or kept open for later writes.
//
// Everything before the command's shell — the group leader, bwrap, the egress forwarder,
// `script` — starts with LAUNCHER_ENV, nothing of the command's; the command's variables
// are applied by a last sh step that sources a script from the call's state directory
// and execs the shell (envScript). Credential stores are hidden (tool-kit credentials.ts).
import { accessSync, constants as constants_fs, existsSync, writeFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { maskPlan, readRulesFrom, type ToolContext, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";
import { FORWARDER, startEgress } from "./egress.ts";
import { RunningCommand } from "./process.ts";
import { probeSandbox, removePlaceholders, type Wrapped, wrap } from "./sandbox.ts";
import {
  envScript,
  getState,
  isBash,
  LAUNCHER_ENV,
  readState,
  type ShellState,
  scrubKept,
  setState,
  shQuote,
  stateDir,
  stateKey,
  usableCwd,
} from "./shell-state.ts";

/** Where the egress forwarder listens inside the sandbox (its own network namespace). */
const EGRESS_PORT = 3128;

/** Variables the plugin runtime sets for the plugin itself; commands do not inherit them. */
function ownEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("PLUGIN_") || k === "PLUGGABLEHARNESS_PLUGIN" || k.startsWith("NODE_")) continue;
    env[k] = v;
  }
  return env;
}

interface ExecEnv {
  variables: NodeJS.ProcessEnv;
  protectedPaths: string[];
  /** The kernel's directories to hide from commands (its temp and runtime directories). */
  hiddenPaths: string[];
}

let execEnv: Promise<ExecEnv> | undefined;

/**
 * The user's environment with secrets withheld and the kernel-owned paths, from the
 * kernel (ExecEnvironment). A kernel that does not serve it leaves the plugin's own,
 * allowlisted environment and no protected paths.
 */
function commandEnvironment(ctx: ToolContext): Promise<ExecEnv> {
  execEnv ??= (async () => {
    try {
      const k = await ctx.kernel.service();
      const r = await k.execEnvironment({ secretPatterns: settings.secretPatterns }, { timeoutMs: 5_000 });
      return {
        variables: { ...r.variables },
        protectedPaths: [...r.protectedPaths],
        hiddenPaths: [...r.hiddenPaths],
      };
    } catch {
      return { variables: ownEnvironment(), protectedPaths: [], hiddenPaths: [] };
    }
  })();
  return execEnv;
}

/** For tests: ask the kernel again. */
export function forgetEnvironment(): void {
  execEnv = undefined;
}

let warnedUnconfined = false;

/** How the command will run: in the sandbox, or unconfined (with the notice to give once). */
function sandboxFor(
  cwd: string,
  writableRoots: readonly string[],
  env: ExecEnv,
  argv: readonly string[],
  extraWritable: readonly string[],
): { wrapped?: Wrapped; notice?: string } {
  if (settings.sandbox === "off") return {};
  const probe = probeSandbox();
  if (!probe.ok) {
    if (settings.sandbox === "required") {
      throw new ToolFailure(
        "execution_failed",
        `the exec provider requires its sandbox (sandbox = "required"), and it cannot run here: ${probe.reason}`,
      );
    }
    if (warnedUnconfined) return {};
    warnedUnconfined = true;
    return {
      notice: `[sandbox unavailable: ${probe.reason}. Commands run unconfined; set sandbox = "required" in the exec provider block to refuse them, or "off" to silence this]\n`,
    };
  }
  // The user's credential stores, from the user's HOME and variables (not the plugin's).
  const { rules } = readRulesFrom(
    { deny_read: settings.denyRead, allow_read: settings.allowRead },
    { home: env.variables["HOME"], env: env.variables, setting: "allow_read in the exec provider block" },
  );
  return {
    wrapped: wrap(
      {
        bwrap: probe.bwrap,
        writable: [...writableRoots, ...extraWritable],
        protectedPaths: env.protectedPaths,
        hidden: env.hiddenPaths,
        network: settings.network,
        cwd,
        // The command's leader is spawned detached (a new session, no terminal): staying in
        // its group lets every group signal reach the sandbox's init (see SandboxSpec).
        newSession: false,
        readMasks: maskPlan(rules),
      },
      argv,
    ),
  };
}

async function workingDirectory(cwd: string | undefined): Promise<string> {
  if (!cwd) throw new ToolFailure("invalid_arguments", "exec operations need call_context.working_directory");
  const jail = settings.jail;
  const dir = jail ? (await jail.resolve(cwd, undefined)).real : cwd;
  const st = await stat(dir).catch(() => undefined);
  if (!st) throw new ToolFailure("not_found", `working directory ${cwd} does not exist`);
  if (!st.isDirectory())
    throw new ToolFailure("invalid_arguments", `working directory ${cwd} is not a directory`);
  return dir;
}

function findScript(): string | undefined {
  for (const dir of [...(process.env["PATH"] ?? "").split(delimiter), "/usr/bin", "/bin"]) {
    if (!dir) continue;
    const p = join(dir, "script");
    if (existsSync(p)) return p;
  }
  return undefined;
}

export interface LaunchOptions {
  command: string;
  /** Run on a pseudo-terminal (util-linux `script`): stdout and stderr arrive merged. */
  pty?: boolean;
  /** "pipe": stdin stays open for writes; text: written, then closed; absent: closed. */
  stdin?: { text: string } | "pipe";
  /** Record the state the shell leaves (foreground `bash` only). */
  keepState: boolean;
  /** Output passed on before the rest is dropped. */
  maxOutputBytes: number;
}

export interface Launched {
  cmd: RunningCommand;
  /** Working directory the command started in. */
  cwd: string;
  /** Notices to pass on before the command's output (sandbox unavailable, cwd reset). */
  notices: string[];
  /** After the command is done: records the state it left; returns a notice if it had to be reset. */
  finish(): string | undefined;
}

export async function launch(opts: LaunchOptions, ctx: ToolContext): Promise<Launched> {
  if (opts.command.trim() === "") throw new ToolFailure("invalid_arguments", "command is empty");
  const base = await workingDirectory(ctx.workingDirectory);
  const allowed = settings.jail ? settings.jail.roots : [base];
  const env = await commandEnvironment(ctx);
  const key = stateKey(ctx.sessionId, base);
  const notices: string[] = [];
  const saved: ShellState | undefined = getState(key);
  let cwd = base;
  let variables = env.variables;
  if (saved) {
    variables = saved.env;
    if (usableCwd(saved.cwd, allowed)) cwd = saved.cwd;
    else notices.push(`[working directory ${saved.cwd} is gone; back in ${base}]\n`);
  }
  let script: string | undefined;
  if (opts.pty) {
    script = findScript();
    if (!script)
      throw new ToolFailure(
        "execution_failed",
        "pty needs util-linux `script`, which is not installed (Debian/Ubuntu: apt-get install util-linux)",
      );
  }
  const state = stateDir();
  try {
    const bash = isBash(settings.shell);
    // bash runs the prelude through BASH_ENV and the command line untouched; another shell
    // gets the prelude in front of the command.
    const line = bash ? opts.command : `. '${state.prelude}'\n${opts.command}`;
    const extraEnv: NodeJS.ProcessEnv = bash ? { BASH_ENV: state.prelude } : {};
    // The last step before the shell: apply the command's variables, then become the shell.
    const envFile = join(state.dir, "env.sh");
    const enter = ["/bin/sh", "-c", '. "$0" && exec "$@"', envFile];
    let shellArgv: string[];
    if (script) {
      // `script` runs its -c string with /bin/sh (no SHELL in its environment); the command
      // line reaches the inner shell through the sourced variables, so no quoting can go wrong.
      extraEnv["PH_SHELL_CMD"] = line;
      // Not `script` itself as the group leader: the leader's watchdog would be its child, and
      // script waits for every child before it exits. A plain sh in between stays the parent.
      shellArgv = [
        "/bin/sh",
        "-c",
        '"$@"; exit $?',
        "agent-pty",
        script,
        "-qefc",
        `. ${shQuote(envFile)} && exec ${shQuote(settings.shell)} -c "$PH_SHELL_CMD"`,
        "/dev/null",
      ];
    } else shellArgv = [...enter, settings.shell, "-c", line];

    // Hosts on the allowlist are reached through a proxy the sandbox can talk to.
    const egress =
      !settings.network && settings.allowedHosts.length > 0 && settings.sandbox !== "off" && probeSandbox().ok
        ? await startEgress(settings.allowedHosts)
        : undefined;
    const argv = egress
      ? [
          process.execPath,
          "--input-type=module",
          "-e",
          FORWARDER,
          egress.socket,
          String(EGRESS_PORT),
          ...shellArgv,
        ]
      : shellArgv;
    let box: ReturnType<typeof sandboxFor>;
    try {
      box = sandboxFor(cwd, allowed, env, argv, [state.dir, ...(egress ? [egress.dir] : [])]);
    } catch (err) {
      egress?.close();
      throw err;
    }
    if (box.wrapped) {
      // Inside the sandbox a missing shell would be bwrap's error; say it the same way as outside.
      try {
        accessSync(settings.shell, constants_fs.X_OK);
      } catch (err) {
        egress?.close();
        throw new ToolFailure(
          "execution_failed",
          `cannot start ${settings.shell}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
    }
    if (box.notice) {
      notices.unshift(box.notice);
      void ctx.kernel.log("warn", box.notice.trim()).catch(() => {});
    }
    const baseEnv = box.wrapped ? { ...variables, TMPDIR: "/tmp" } : variables;
    // What a proxy-aware tool looks for; the user's own proxy settings would bypass ours.
    const proxyEnv: NodeJS.ProcessEnv = {};
    if (egress) {
      const proxy = `http://127.0.0.1:${EGRESS_PORT}`;
      for (const k of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"])
        proxyEnv[k] = proxy;
      proxyEnv["NO_PROXY"] = proxyEnv["no_proxy"] = "";
      proxyEnv["NODE_USE_ENV_PROXY"] = "1";
    }
    writeFileSync(envFile, envScript({ ...baseEnv, ...proxyEnv, ...extraEnv }), { mode: 0o600 });
    const cmd = new RunningCommand({
      shell: settings.shell,
      command: line,
      cwd,
      env: { ...LAUNCHER_ENV },
      maxOutputBytes: opts.maxOutputBytes,
      killGraceMs: settings.killGraceMs,
      argv: shellArgv,
      stdin: opts.stdin === undefined ? "ignore" : "pipe",
      ...(box.wrapped ? { wrapper: box.wrapped } : {}),
    });
    if (typeof opts.stdin === "object") {
      cmd.writeStdin(opts.stdin.text);
      cmd.endStdin();
    }
    if (box.wrapped && box.wrapped.placeholders.length > 0) {
      const placeholders = box.wrapped.placeholders;
      void cmd.done.then(() => removePlaceholders(placeholders));
    }
    if (egress) void cmd.done.then(() => egress.close());
    let finished = false;
    return {
      cmd,
      cwd,
      notices,
      finish() {
        if (finished) return undefined;
        finished = true;
        try {
          if (!opts.keepState) return undefined;
          const left = readState(state.file);
          // Killed, or `exec`ed into another program: the state it had is unknown; keep the last one.
          if (!left) return undefined;
          // The sandbox's own TMPDIR is not the user's.
          if (box.wrapped && left.env["TMPDIR"] === "/tmp" && variables["TMPDIR"] !== "/tmp") {
            if (variables["TMPDIR"] === undefined) delete left.env["TMPDIR"];
            else left.env["TMPDIR"] = variables["TMPDIR"];
          }
          // No loader or startup variable is kept for the next call (sandboxed or not).
          scrubKept(left.env, env.variables);
          if (usableCwd(left.cwd, allowed)) {
            setState(key, left);
            return undefined;
          }
          setState(key, { cwd: base, env: left.env });
          return `[working directory ${left.cwd} is outside the project; the next command starts in ${base}]\n`;
        } finally {
          state.remove();
        }
      },
    };
  } catch (err) {
    state.remove();
    throw err;
  }
}

/** Where a command of this session would start now (for previews): the kept directory, else the call's. */
export async function plannedCwd(ctx: {
  workingDirectory: string | undefined;
  sessionId: string | undefined;
}) {
  try {
    const base = await workingDirectory(ctx.workingDirectory);
    const saved = getState(stateKey(ctx.sessionId, base));
    const allowed = settings.jail ? settings.jail.roots : [base];
    return saved && usableCwd(saved.cwd, allowed) ? saved.cwd : base;
  } catch {
    return ctx.workingDirectory ?? "(no working directory)";
  }
}
