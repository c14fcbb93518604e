// Where sockets live. Every socket of this user's agents — each plugin process's private
// directory `ph-<kernel pid>-XXXXXX` (its socket and the kernel's callback socket for it)
// and `agent serve`'s socket and record — sits in one private base, the agent's runtime
// directory (`$AGENT_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/agent`, else `/tmp/agent-<uid>`;
// 0700 and this user's), so a sandbox hides them all by hiding that one directory
// (hidden-paths.ts). Should that directory be unusable (someone else's, open to others, or
// too long for a socket path) the OS temp directory is used instead, as before.
//
// A plugin's directory is removed when its process exits. A kernel that is killed removes
// nothing, so the next kernel to launch a plugin removes the directories whose owning
// process is gone (its own user's only). The pid in the name is what makes that safe: a
// directory of a live kernel is never touched.
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";

// Node built-ins only: bin/agent.mjs loads this (through prelaunch.ts) before the CLI. The
// socket-path limit and name length are goplugin's (socket.ts), restated here for that reason.
const MAX_SOCKET_PATH = process.platform === "linux" ? 107 : 103;
const SOCKET_SUFFIX_LENGTH = 10;

const NAME = /^ph-(\d+)-[A-Za-z0-9]{6}$/;
const swept = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a live process of another user.
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** The agent's private runtime directory: `agent serve`'s socket and record, plugin sockets. */
export function agentRuntimeDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const explicit = env["AGENT_RUNTIME_DIR"];
  if (explicit && isAbsolute(explicit)) return explicit;
  const xdg = env["XDG_RUNTIME_DIR"];
  if (xdg && isAbsolute(xdg)) return join(xdg, "agent");
  return join("/tmp", `agent-${process.getuid?.() ?? "user"}`);
}

/** Why `dir` cannot be this user's private directory, or undefined when it can. */
export function privateDirProblem(dir: string): string | undefined {
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (uid !== undefined && st.uid !== uid) return `${dir} belongs to another user (uid ${st.uid})`;
  if ((st.mode & 0o077) !== 0) {
    return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)}); it must be 0700`;
  }
  return undefined;
}

/** The longest socket path this runtime or a plugin puts in a directory under `base`. */
function longestSocketPath(base: string): string {
  return join(longestSocketDir(base), `plugin${"x".repeat(SOCKET_SUFFIX_LENGTH)}`);
}

const bases = new Map<string, string>();

/**
 * The directory plugin socket directories are made in: the agent's runtime directory,
 * created 0700 if missing, when it is private and short enough; else the OS temp directory.
 */
export function socketBase(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const dir = agentRuntimeDir(env);
  const known = bases.get(dir);
  if (known) return known;
  let base = tmpdir();
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const fits = Buffer.byteLength(longestSocketPath(dir)) <= MAX_SOCKET_PATH;
    if (fits && privateDirProblem(dir) === undefined) base = dir;
  } catch {
    // unusable: the temp directory it is
  }
  bases.set(dir, base);
  return base;
}

/** The bases socketBase() has chosen in this process (for the sandboxes to hide). */
export function socketBasesInUse(): string[] {
  return [...new Set(bases.values())];
}

/** Removes socket directories under `base` left by kernels that died; once per base per process. */
export function sweepStaleSocketDirs(base: string = socketBase()): string[] {
  if (swept.has(base)) return [];
  swept.add(base);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return removed;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const pid = Number(NAME.exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    const dir = join(base, name);
    try {
      if (uid !== undefined && statSync(dir).uid !== uid) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // raced with another sweeper, or not ours to remove
    }
  }
  return removed;
}

/** The longest path makeSocketDir can return under `base`, for the socket-path length check. */
export function longestSocketDir(base: string = socketBase()): string {
  return join(base, `ph-${process.pid}-XXXXXX`);
}

/** A fresh private (0700) directory for one plugin process's sockets. */
export function makeSocketDir(base: string = socketBase()): string {
  sweepStaleSocketDirs(base);
  // Directories earlier versions left in the temp directory.
  if (base !== tmpdir()) sweepStaleSocketDirs(tmpdir());
  return mkdtempSync(join(base, `ph-${process.pid}-`));
}
