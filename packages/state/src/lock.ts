// One writer per session file, across processes. The kernel holds an exclusive SQLite
// lock on a sidecar database (`<id>.sqlite.lock`, empty, rollback journal kept in memory)
// for as long as its writer is open. SQLite's unix VFS takes that lock with fcntl(), so
// the operating system drops it the moment the process dies, SIGKILL included: a lock is
// never stale, and the next process simply gets it. No native addon is needed (node:sqlite
// does the locking), the session file itself stays in WAL mode for concurrent readers,
// and nothing here ever opens the lock file outside SQLite (closing any other descriptor
// on it would release the process's fcntl locks).
//
// Who holds the lock is written to `<id>.sqlite.owner` (JSON: pid, since, host) after it
// is taken, so a refused process can say who it is waiting for. A holder killed before it
// removed its owner file leaves it behind; the next holder overwrites it.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { DatabaseSync } from "node:sqlite";
import { type LockHolder, SessionLockedError } from "./errors.ts";

export const LOCK_SUFFIX = ".lock";
export const OWNER_SUFFIX = ".owner";

const SQLITE_BUSY = 5;

function isBusy(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  return typeof code === "number" && (code & 0xff) === SQLITE_BUSY;
}

/** The owner file's contents, when there is a readable one. */
export function readLockHolder(sessionFile: string): LockHolder | undefined {
  try {
    const v = JSON.parse(readFileSync(`${sessionFile}${OWNER_SUFFIX}`, "utf8")) as Partial<LockHolder>;
    if (typeof v.pid !== "number" || typeof v.since !== "string") return undefined;
    return { pid: v.pid, since: v.since, host: typeof v.host === "string" ? v.host : "" };
  } catch {
    return undefined;
  }
}

/** A held writer lock; release() gives it up (the process ending does too). */
export class SessionLock {
  readonly sessionId: string;
  readonly holder: LockHolder;
  /** The holder this lock replaced, when its process had died without releasing. */
  readonly tookOverFrom: LockHolder | undefined;
  readonly #file: string;
  #db: DatabaseSync | undefined;

  constructor(sessionId: string, file: string, db: DatabaseSync, holder: LockHolder, previous?: LockHolder) {
    this.sessionId = sessionId;
    this.#file = file;
    this.#db = db;
    this.holder = holder;
    this.tookOverFrom = previous;
  }

  get held(): boolean {
    return this.#db !== undefined;
  }

  /** Removes the owner file (while still holding the lock), then unlocks. Idempotent. */
  release(options: { removeLockFile?: boolean } = {}): void {
    const db = this.#db;
    if (!db) return;
    this.#db = undefined;
    const owner = readLockHolder(this.#file);
    if (owner?.pid === this.holder.pid && owner.since === this.holder.since)
      rmSync(`${this.#file}${OWNER_SUFFIX}`, { force: true });
    // Only a holder unlinks the lock file (pruning a session), so no one can be holding
    // another copy of it.
    if (options.removeLockFile) rmSync(`${this.#file}${LOCK_SUFFIX}`, { force: true });
    db.close();
  }
}

/**
 * Takes the writer lock of the session file at `sessionFile`, or throws
 * SessionLockedError naming the process that holds it. Never waits.
 */
export function acquireSessionLock(sessionId: string, sessionFile: string): SessionLock {
  const db = new DatabaseSync(`${sessionFile}${LOCK_SUFFIX}`, { timeout: 0 });
  try {
    db.exec("PRAGMA journal_mode = MEMORY");
    db.exec("PRAGMA locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
  } catch (err) {
    db.close();
    if (isBusy(err)) throw new SessionLockedError(sessionId, readLockHolder(sessionFile));
    throw err;
  }
  const previous = readLockHolder(sessionFile);
  const holder: LockHolder = { pid: process.pid, since: new Date().toISOString(), host: hostname() };
  try {
    const tmp = `${sessionFile}${OWNER_SUFFIX}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(holder)}\n`, { mode: 0o600 });
    renameSync(tmp, `${sessionFile}${OWNER_SUFFIX}`);
  } catch {
    // The lock is what counts; the owner file only names the holder in a refusal.
  }
  return new SessionLock(sessionId, sessionFile, db, holder, previous);
}

/**
 * Throws SessionLockedError when another process holds the session's writer lock; takes
 * nothing. A quick refusal before expensive start-up; the writer still takes the lock.
 */
export function assertSessionUnlocked(sessionId: string, sessionFile: string): void {
  if (!existsSync(`${sessionFile}${LOCK_SUFFIX}`)) return;
  const db = new DatabaseSync(`${sessionFile}${LOCK_SUFFIX}`, { timeout: 0 });
  try {
    db.exec("PRAGMA journal_mode = MEMORY");
    db.exec("BEGIN EXCLUSIVE");
    db.exec("ROLLBACK");
  } catch (err) {
    if (isBusy(err)) throw new SessionLockedError(sessionId, readLockHolder(sessionFile));
    throw err;
  } finally {
    db.close();
  }
}
