// The session's shell state: the working directory and exported variables one `bash` call
// leaves for the next. Each command still runs in a fresh shell (its own process group and
// sandbox, so a command that exits the shell or hangs takes nothing else with it); the
// shell writes its state on exit through an EXIT trap, and the next call starts there.
// docs/decisions/tools.md, "Shell, diagnostics, checkpoints".
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, isAbsolute, join, relative, sep } from "node:path";
import { socketBase } from "@pluggableharness/runtime/socket-dirs";

export interface ShellState {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Variables the shell sets for itself, or the prelude uses: never carried over. */
const TRANSIENT = new Set(["PWD", "SHLVL", "_", "BASH_ENV", "PH_SHELL_CMD"]);

/**
 * Variables that make a later program load or run code of their choosing: the dynamic
 * loader's (LD_*, GLIBC_TUNABLES, GCONV_PATH…), the shells' startup hooks and exported
 * functions, and the interpreters' preload options and module paths. A command may set
 * them for itself, but they are not kept for the next call: whatever one call exports
 * here would otherwise act on every later command, including ones approved without a
 * look at what an earlier call planted. The next call gets the value the user's own
 * environment has (if any) instead. docs/security/sandbox-privileges.md.
 */
const CODE_LOADING = new Set([
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PS4",
  "PROMPT_COMMAND",
  "GLIBC_TUNABLES",
  "GCONV_PATH",
  "LOCPATH",
  "NLSPATH",
  "HOSTALIASES",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_REPL_EXTERNAL_MODULE",
  "PYTHONSTARTUP",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONUSERBASE",
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  "PERL5DB",
  "RUBYOPT",
  "RUBYLIB",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "GIT_SSH",
  "GIT_SSH_COMMAND",
  "GIT_EXTERNAL_DIFF",
  "GIT_EXEC_PATH",
  "GIT_ASKPASS",
  "SSH_ASKPASS",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
  "GIT_CONFIG_GLOBAL",
  "GIT_CONFIG_SYSTEM",
  "GIT_PROXY_COMMAND",
  "GIT_TEMPLATE_DIR",
  // more interpreters' startup code, preload options and module paths
  "PYTHONWARNINGS", // a warning category names a module, which is imported
  "PYTHONBREAKPOINT",
  "PHPRC",
  "PHP_INI_SCAN_DIR",
  "MAVEN_OPTS",
  "GRADLE_OPTS",
  "SBT_OPTS",
  "DOTNET_STARTUP_HOOKS",
  "ZDOTDIR",
  // libraries that load plugins (shared objects) named by the environment
  "OPENSSL_CONF",
  "OPENSSL_ENGINES",
  "OPENSSL_MODULES",
  "GTK_MODULES",
  "GTK_PATH",
  "GIO_MODULE_DIR",
  "QT_PLUGIN_PATH",
  // less runs these on every file it opens (git's and man's pager)
  "LESSOPEN",
  "LESSCLOSE",
]);
const CODE_LOADING_PREFIXES = [
  "LD_",
  "BASH_FUNC_",
  "MALLOC_",
  "GIT_CONFIG_KEY_",
  "GIT_CONFIG_VALUE_",
  // Lua's LUA_INIT runs code; LUA_PATH/LUA_CPATH choose what `require` loads (each also _5_x)
  "LUA_INIT",
  "LUA_PATH",
  "LUA_CPATH",
  // .NET profilers are shared objects the runtime loads
  "CORECLR_",
  "COR_PROFILER",
  // npm reads its whole configuration from these (script-shell, node-options, …), either case
  "NPM_CONFIG_",
  "npm_config_",
];

/** Whether `name` is never carried from one call to the next (see CODE_LOADING). */
export function loadsCode(name: string): boolean {
  return CODE_LOADING.has(name) || CODE_LOADING_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * Puts back, in a kept environment, the user's own value of every code-loading variable
 * (removing those the user does not have). Returns the names it changed.
 */
export function scrubKept(kept: NodeJS.ProcessEnv, base: Readonly<NodeJS.ProcessEnv>): string[] {
  const changed: string[] = [];
  for (const name of new Set([...Object.keys(kept), ...Object.keys(base)])) {
    if (!loadsCode(name) || kept[name] === base[name]) continue;
    changed.push(name);
    if (base[name] === undefined) delete kept[name];
    else kept[name] = base[name];
  }
  return changed;
}

/**
 * The environment every process before the command's shell starts with: the sandbox
 * launcher (bwrap), the egress forwarder and `script` see nothing a command set, so no
 * variable can act on them before the sandbox exists.
 */
export const LAUNCHER_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
};

const SH_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function shQuote(v: string): string {
  return `'${v.replaceAll("'", "'\\''")}'`;
}

/**
 * A POSIX sh script that turns LAUNCHER_ENV into `env`: sourced by the step right before
 * the command's shell (see launch.ts), so the command's variables apply inside the
 * sandbox only. Names sh cannot export (bash's exported functions, names with dots) are
 * left out.
 */
export function envScript(env: Readonly<NodeJS.ProcessEnv>): string {
  const lines: string[] = [];
  for (const name of Object.keys(LAUNCHER_ENV)) if (env[name] === undefined) lines.push(`unset ${name}`);
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !SH_NAME.test(name)) continue;
    lines.push(`export ${name}=${shQuote(value)}`);
  }
  return `${lines.join("\n")}\n`;
}
const END = "PH_SHELL_STATE_END";

/** State per (session, working directory of the call). */
const states = new Map<string, ShellState>();

export function stateKey(sessionId: string | undefined, workingDirectory: string): string | undefined {
  return sessionId ? `${sessionId}\0${workingDirectory}` : undefined;
}

export function getState(key: string | undefined): ShellState | undefined {
  return key ? states.get(key) : undefined;
}

export function setState(key: string | undefined, state: ShellState): void {
  if (key) states.set(key, state);
}

/** For tests and plugin shutdown. */
export function forgetStates(): void {
  states.clear();
}

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** Whether `cwd` lies inside one of `allowed` and is still a directory. */
export function usableCwd(cwd: string, allowed: readonly string[]): boolean {
  if (!allowed.some((d) => inside(cwd, d))) return false;
  try {
    return statSync(cwd).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The script the shell runs before the command (bash: through BASH_ENV, so the command
 * line itself is run unchanged): an EXIT trap that writes the physical working directory
 * and the exported environment, NUL-separated, with an end marker so a half-written file
 * (the shell killed while writing) is recognised and ignored.
 */
export function prelude(stateFile: string): string {
  const q = `'${stateFile.replaceAll("'", "'\\''")}'`;
  return [
    "unset BASH_ENV PH_SHELL_CMD",
    `__ph_save_state() { { builtin printf '%s\\0' "$(builtin pwd -P)"; /usr/bin/env -0 2>/dev/null || env -0; builtin printf '${END}\\0'; } > ${q} 2>/dev/null; }`,
    "trap __ph_save_state EXIT",
    "",
  ].join("\n");
}

/**
 * A scratch directory for one call's state file (bound writable into the sandbox). It sits
 * in the agent's private runtime directory, which every sandbox hides, so the command sees
 * only its own directory there and nothing of TMPDIR (socketBase falls back to the temp
 * directory where the runtime directory cannot be used).
 */
export function stateDir(): { dir: string; file: string; prelude: string; remove(): void } {
  const dir = mkdtempSync(join(socketBase(), "ph-shell-"));
  const file = join(dir, "state");
  const preludeFile = join(dir, "prelude.sh");
  writeFileSync(preludeFile, prelude(file));
  return {
    dir,
    file,
    prelude: preludeFile,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The state the shell wrote, or undefined if it wrote none (killed, `exec`ed) or only part of it. */
export function readState(file: string): ShellState | undefined {
  let raw: string;
  try {
    raw = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  const parts = raw.split("\0");
  // cwd, K=V..., END, "" (after the last NUL)
  if (parts.length < 3 || parts.at(-1) !== "" || parts.at(-2) !== END) return undefined;
  const cwd = parts[0]!;
  if (!isAbsolute(cwd)) return undefined;
  const env: NodeJS.ProcessEnv = {};
  for (const kv of parts.slice(1, -2)) {
    const eq = kv.indexOf("=");
    if (eq <= 0) continue;
    const k = kv.slice(0, eq);
    if (TRANSIENT.has(k)) continue;
    env[k] = kv.slice(eq + 1);
  }
  return { cwd, env };
}

/** Whether the shell is bash (BASH_ENV works); other shells get the prelude prepended. */
export function isBash(shell: string): boolean {
  return basename(shell).startsWith("bash");
}
