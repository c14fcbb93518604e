// Where `agent serve` listens and how other commands find it. Every served kernel has a
// record (JSON, 0600) next to its unix socket (0600) in one private runtime directory
// (0700, owned by this user; anything else is refused rather than used; the plugins'
// socket directories live there too, and every sandbox hides it): the record says which
// process serves which project, where its endpoint is, and the token every client must
// present, on the socket and on loopback TCP alike. Reading the record is what makes a
// client this user's own. Nothing here loads the kernel, so `sessions list` stays fast.
import { createHash } from "node:crypto";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { agentRuntimeDir } from "@pluggableharness/runtime/socket-dirs";
import { EXIT } from "../exit-codes.ts";
import { CliError } from "../io.ts";

/** What a served kernel publishes about itself. */
export interface ServerRecord {
  readonly version: 1;
  readonly pid: number;
  /** The project whose agent.hcl the kernel loaded. */
  readonly projectDir: string;
  /** The unix socket (always present). */
  readonly socket: string;
  /** The random token every call must carry, on the socket and on TCP. */
  readonly token: string;
  /** Loopback TCP, when asked for (its token is `token`). */
  readonly tcp?: { readonly host: string; readonly port: number; readonly token: string };
  /** The web UI's base address and its token, when it runs. */
  readonly web?: { readonly url: string; readonly token: string };
  readonly startedAt: string;
}

/** The private directory sockets and records live in (the plugins' socket directories too). */
export function runtimeDir(env: NodeJS.ProcessEnv): string {
  return agentRuntimeDir(env);
}

/**
 * Creates the runtime directory 0700, or checks an existing one: a directory that is a
 * symlink, owned by someone else or open to group/others could let another user
 * impersonate a server or read its token, so it is refused.
 */
export function ensurePrivateDir(dir: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory()) throw new CliError(`agent: ${dir} is not a directory`, EXIT.ERROR);
  if (uid !== undefined && st.uid !== uid) {
    throw new CliError(
      `agent: ${dir} belongs to another user (uid ${st.uid}); refusing to use it`,
      EXIT.ERROR,
    );
  }
  if ((st.mode & 0o077) !== 0) {
    throw new CliError(
      `agent: ${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)}); it must be 0700 (chmod 700 ${dir})`,
      EXIT.ERROR,
    );
  }
  return dir;
}

/** One server per project: its files are named by a hash of the project directory. */
export function projectKey(projectDir: string): string {
  return createHash("sha256").update(projectDir).digest("hex").slice(0, 16);
}

export function socketPath(dir: string, projectDir: string): string {
  return join(dir, `serve-${projectKey(projectDir)}.sock`);
}

function recordPath(dir: string, projectDir: string): string {
  return join(dir, `serve-${projectKey(projectDir)}.json`);
}

export function writeRecord(dir: string, record: ServerRecord): void {
  const path = recordPath(dir, record.projectDir);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

export function removeRecord(dir: string, record: ServerRecord): void {
  try {
    const current = JSON.parse(readFileSync(recordPath(dir, record.projectDir), "utf8")) as ServerRecord;
    // A newer server of the same project may have replaced it: leave that one alone.
    if (current.pid !== record.pid) return;
  } catch {
    return;
  }
  rmSync(recordPath(dir, record.projectDir), { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The records of servers whose process is alive (records of dead ones are removed). */
export function liveServers(env: NodeJS.ProcessEnv): ServerRecord[] {
  const dir = runtimeDir(env);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: ServerRecord[] = [];
  for (const name of names) {
    if (!/^serve-[0-9a-f]{16}\.json$/.test(name)) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      // Only this user's own private records are believed.
      if (!st.isFile() || (process.getuid && st.uid !== process.getuid()) || (st.mode & 0o077) !== 0)
        continue;
      const record = JSON.parse(readFileSync(path, "utf8")) as ServerRecord;
      if (record.version !== 1 || typeof record.pid !== "number" || typeof record.token !== "string")
        continue;
      if (!alive(record.pid)) {
        rmSync(path, { force: true });
        rmSync(record.socket, { force: true });
        continue;
      }
      found.push(record);
    } catch {
      // a record being replaced or damaged: skip it
    }
  }
  return found;
}

/** The live server of `projectDir`, if any. */
export function serverOf(env: NodeJS.ProcessEnv, projectDir: string): ServerRecord | undefined {
  return liveServers(env).find((r) => r.projectDir === projectDir);
}
