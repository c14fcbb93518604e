// The session writer: the kernel's single write path into one session file.
//
// node:sqlite is synchronous, so each append runs to completion before any other
// JavaScript does — calls from concurrent async tasks are serialized by construction
// and receive sequence numbers in call order. transaction() refuses async callbacks,
// which is the one way an await could let unrelated appends slip into a transaction.

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync } from "node:fs";
import { resolve } from "node:path";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import { STATUS_RUNNING, sessionStatusText } from "./codes.ts";
import {
  AsyncTransactionError,
  InvalidArgumentError,
  SessionExistsError,
  SessionNotFoundError,
  StoreClosedError,
  WriterAlreadyOpenError,
} from "./errors.ts";
import { acquireSessionLock, assertSessionUnlocked, type SessionLock } from "./lock.ts";
import { type StateLogger, stderrLogger } from "./log.ts";
import {
  checkStatusTransition,
  readCostUsd,
  readLastModel,
  readMeta,
  titleFromPrompt,
  toSessionInfo,
} from "./meta.ts";
import { openSessionFile } from "./open.ts";
import { assertSessionId, newUlid, resolveSessionsDir, sessionFilePath } from "./paths.ts";
import { SessionReader } from "./reader.ts";
import { type RecoveryReport, unreadableFlagPath } from "./recover.ts";
import { createSchema, type MigrationStepResult } from "./schema.ts";
import { closeQuietly, connect, type Durability } from "./sqlite.ts";
import type {
  AppendedEvent,
  NewEvent,
  NewSession,
  SessionMeta,
  StateOptions,
  WriterOptions,
} from "./types.ts";
import { type PreparedEvent, prepareEvent } from "./validate.ts";

// One writer per file per process; the kernel is the only process that writes.
const openWriters = new Map<string, SessionWriter>();

/** True when this process holds the writer for the file at `path`. */
export function hasOpenWriter(path: string): boolean {
  return openWriters.has(resolve(path));
}

function configure(db: DatabaseSync, durability: Durability): void {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec(`PRAGMA synchronous = ${durability === "normal" ? "NORMAL" : "FULL"}`);
  db.exec("PRAGMA foreign_keys = ON");
}

/** Creates a new session file (status RUNNING) and returns its writer. */
export function createSession(init: NewSession, options: WriterOptions = {}): SessionWriter {
  const sessionId = init.sessionId ?? newUlid();
  assertSessionId(sessionId);
  if (init.parentSessionId !== undefined) {
    assertSessionId(init.parentSessionId);
    if (init.parentSessionId === sessionId)
      throw new InvalidArgumentError("a session cannot be its own parent");
  }
  if (typeof init.profile !== "string" || init.profile.length === 0) {
    throw new InvalidArgumentError("profile must be a non-empty string");
  }
  if (!Number.isSafeInteger(init.depth) || init.depth < 0) {
    throw new InvalidArgumentError("depth must be a non-negative integer");
  }
  if (init.startedAt !== undefined && Number.isNaN(init.startedAt.getTime())) {
    throw new InvalidArgumentError("startedAt must be a valid Date");
  }
  const dir = resolveSessionsDir(options.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = sessionFilePath(dir, sessionId);
  if (existsSync(unreadableFlagPath(path))) throw new SessionExistsError(sessionId, path);
  // Exclusive creation: two creators of one id cannot both succeed.
  try {
    closeSync(openSync(path, "wx", 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new SessionExistsError(sessionId, path);
    throw err;
  }
  const lock = acquireSessionLock(sessionId, path);
  let db: DatabaseSync;
  try {
    db = connect(path, { readOnly: false, busyTimeoutMs: options.busyTimeoutMs });
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    configure(db, options.durability ?? "full");
    // Schema, version stamp and the meta row commit together: a crash leaves either an
    // empty file or a complete session, never a half-made one.
    db.exec("BEGIN IMMEDIATE");
    createSchema(db);
    db.prepare(
      `INSERT INTO session_meta
         (session_id, parent_session_id, profile, status, depth, started_at, ended_at, working_directory, title)
       VALUES (?, ?, ?, ?, ?, ?, NULL, ?, NULL)`,
    ).run(
      sessionId,
      init.parentSessionId ?? null,
      init.profile,
      sessionStatusText(STATUS_RUNNING),
      init.depth,
      (init.startedAt ?? new Date()).toISOString(),
      init.workingDirectory ?? null,
    );
    db.exec("COMMIT");
  } catch (err) {
    if (db.isTransaction) db.exec("ROLLBACK");
    closeQuietly(db);
    lock.release();
    throw err;
  }
  return new SessionWriter(db, sessionId, path, [], undefined, lock);
}

/** Logs that a lock was taken over from a process that died holding it. */
function noteTakeover(lock: SessionLock, path: string, log: StateLogger): void {
  const was = lock.tookOverFrom;
  if (!was) return;
  log({
    level: "warn",
    code: "stale_lock_taken_over",
    path,
    sessionId: lock.sessionId,
    message: `session ${lock.sessionId} was left open by process ${was.pid} (since ${was.since}), which is gone; this process took it over`,
  });
}

/**
 * Opens an existing session file as its writer (to resume it, or to finish writing it
 * after a kernel restart). Runs the integrity check, salvage and migrations first.
 */
export function openSessionWriter(sessionId: string, options: WriterOptions = {}): SessionWriter {
  const path = sessionFilePath(resolveSessionsDir(options.dir), sessionId);
  if (hasOpenWriter(path)) throw new WriterAlreadyOpenError(path);
  if (!existsSync(path)) throw new SessionNotFoundError(sessionId, path);
  const log = options.log ?? stderrLogger;
  // The lock comes before anything writes (salvage, migrations, appends).
  const lock = acquireSessionLock(sessionId, path);
  let opened: ReturnType<typeof openSessionFile>;
  try {
    opened = openSessionFile(path, sessionId, "write", { log, busyTimeoutMs: options.busyTimeoutMs });
  } catch (err) {
    lock.release();
    throw err;
  }
  try {
    configure(opened.db, options.durability ?? "full");
  } catch (err) {
    closeQuietly(opened.db);
    lock.release();
    throw err;
  }
  noteTakeover(lock, path, log);
  return new SessionWriter(opened.db, sessionId, path, opened.migrations, opened.recovery, lock);
}

export class SessionWriter implements Disposable {
  readonly sessionId: string;
  readonly path: string;
  /** Upgrade steps applied when this writer opened the file. */
  readonly migrations: readonly MigrationStepResult[];
  /** Set when the file failed its integrity check on open and was salvaged. */
  readonly recovery: RecoveryReport | undefined;

  #db: DatabaseSync;
  #closed = false;
  #depth = 0;
  #savepoint = 0;
  /** A group commit is open (hold()): appends join it until commit(). */
  #held = false;
  /** The connection syncs every commit (durability "full"). */
  readonly #syncsCommits: boolean;
  /** A group was committed without a sync: the WAL holds frames not yet on stable storage. */
  #unsynced = false;
  readonly #insertEvent: StatementSync;
  readonly #insertProducer: StatementSync;
  readonly #insertCost: StatementSync;
  readonly #insertPlanItem: StatementSync;

  readonly #lock: SessionLock | undefined;

  /** Use createSession / openSessionWriter. */
  constructor(
    db: DatabaseSync,
    sessionId: string,
    path: string,
    migrations: readonly MigrationStepResult[],
    recovery: RecoveryReport | undefined,
    lock?: SessionLock,
  ) {
    const key = resolve(path);
    if (openWriters.has(key)) {
      closeQuietly(db);
      lock?.release();
      throw new WriterAlreadyOpenError(path);
    }
    this.#lock = lock;
    this.#db = db;
    this.#syncsCommits =
      Number((db.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous) >= 2;
    this.sessionId = sessionId;
    this.path = path;
    this.migrations = migrations;
    this.recovery = recovery;
    this.#insertEvent = db.prepare(
      `INSERT INTO events (id, timestamp, kind, producer_category, producer_name, producer_version, schema_version, payload)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#insertProducer = db.prepare(
      "INSERT OR IGNORE INTO producers (category, name, version, first_seen_sequence) VALUES (?, ?, ?, ?)",
    );
    this.#insertCost = db.prepare(
      `INSERT INTO cost_ledger (event_sequence, provider_name, model_id, input_tokens, output_tokens,
         cache_write_tokens, cache_read_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#insertPlanItem = db.prepare(
      `INSERT INTO plan_items (event_sequence, turn_id, tool_call_id, provider_name, tool_name, decision, decided_by)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    openWriters.set(key, this);
  }

  get closed(): boolean {
    return this.#closed;
  }

  #open(): DatabaseSync {
    if (this.#closed) throw new StoreClosedError(`session writer ${this.sessionId}`);
    return this.#db;
  }

  /**
   * Runs `fn` atomically. At top level it is one IMMEDIATE transaction; nested inside
   * another transaction() it becomes a savepoint, so a failed inner step rolls back alone.
   */
  transaction<T>(fn: () => T): T {
    const db = this.#open();
    const nested = this.#depth > 0;
    const savepoint = `sp${++this.#savepoint}`;
    db.exec(nested ? `SAVEPOINT ${savepoint}` : "BEGIN IMMEDIATE");
    this.#depth++;
    try {
      const result = fn();
      if (result !== null && typeof (result as { then?: unknown })?.then === "function") {
        // Keep the caller's promise from rejecting unobserved; the error below is the answer.
        Promise.resolve(result).catch(() => {});
        throw new AsyncTransactionError();
      }
      db.exec(nested ? `RELEASE ${savepoint}` : "COMMIT");
      // A synced commit puts the whole WAL on stable storage, earlier groups' frames too.
      if (!nested) this.#unsynced = false;
      return result;
    } catch (err) {
      if (nested) {
        db.exec(`ROLLBACK TO ${savepoint}`);
        db.exec(`RELEASE ${savepoint}`);
      } else if (db.isTransaction) {
        db.exec("ROLLBACK");
      }
      throw err;
    } finally {
      this.#depth--;
    }
  }

  /**
   * Opens a group commit: every append from now on (each still all or nothing, as a
   * savepoint) joins one transaction that commit() ends, so a burst of appends costs one
   * commit. Appends are visible to this writer at once, to other connections only once
   * committed. The group's commit does not sync to disk by itself: it survives a crash of
   * this process at once, and power loss once sync() (or any later synced commit: a status
   * change, a plain append, close) has run. No-op when a group or a transaction() is open.
   */
  hold(): void {
    const db = this.#open();
    if (this.#held || this.#depth > 0) return;
    // The level cannot change inside a transaction; it is set back once the group commits.
    if (this.#syncsCommits) db.exec("PRAGMA synchronous = NORMAL");
    try {
      db.exec("BEGIN IMMEDIATE");
    } catch (err) {
      if (this.#syncsCommits) db.exec("PRAGMA synchronous = FULL");
      throw err;
    }
    this.#held = true;
    this.#depth++;
  }

  /** True while a group commit is open. */
  get holding(): boolean {
    return this.#held;
  }

  /** True when everything committed is on stable storage (see hold()). */
  get synced(): boolean {
    return !this.#unsynced;
  }

  /**
   * Ends the open group commit, if any: what it holds is in the file when this returns
   * (sync() makes it survive power loss). On a failure the group is rolled back and the
   * error thrown.
   */
  commit(): void {
    if (!this.#held || this.#closed) return;
    this.#held = false;
    this.#depth--;
    try {
      this.#db.exec("COMMIT");
      if (this.#syncsCommits) this.#unsynced = true;
    } catch (err) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw err;
    } finally {
      if (this.#syncsCommits) this.#db.exec("PRAGMA synchronous = FULL");
    }
  }

  /**
   * Commits the open group and puts every committed frame of the WAL on stable storage,
   * as a synced commit would have: a point the file must survive power loss at (before a
   * tool runs).
   */
  sync(): void {
    this.commit();
    if (!this.#unsynced || this.#closed) return;
    let fd: number;
    try {
      fd = openSync(`${this.path}-wal`, "r+");
    } catch (err) {
      // The WAL exists while this connection is open; gone (removed behind the writer's
      // back), there is nothing of it left to sync, and a tool call must not fail for it.
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      this.#unsynced = false;
      return;
    }
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.#unsynced = false;
  }

  #write(event: PreparedEvent): AppendedEvent {
    const id = newUlid();
    const timestamp = event.timestamp ?? new Date().toISOString();
    const result = this.#insertEvent.run(
      id,
      timestamp,
      event.kindText,
      event.categoryText,
      event.name,
      event.version,
      event.schemaVersion,
      event.payload,
    );
    const sequence = Number(result.lastInsertRowid);
    // First sighting wins; later events of the same producer leave the row alone.
    this.#insertProducer.run(event.categoryText, event.name, event.version, sequence);
    for (const cost of event.costs) this.#insertCost.run(sequence, ...cost);
    for (const item of event.planItems) this.#insertPlanItem.run(sequence, ...item);
    return { id, sequence, timestamp };
  }

  /** Appends one event (with its ledger or plan rows) in one transaction. */
  append(event: NewEvent): AppendedEvent {
    this.#open();
    const prepared = prepareEvent(event);
    return this.transaction(() => this.#write(prepared));
  }

  /** Appends several events in one transaction: all of them or none. Sequences are consecutive. */
  appendBatch(events: readonly NewEvent[]): AppendedEvent[] {
    this.#open();
    const prepared = events.map(prepareEvent);
    if (prepared.length === 0) return [];
    return this.transaction(() => prepared.map((e) => this.#write(e)));
  }

  meta(): SessionMeta {
    return readMeta(this.#open(), this.path);
  }

  costUsd(): number {
    return readCostUsd(this.#open());
  }

  /** The session_meta row as the frontend protocol's SessionInfo, cost summed now. */
  info(): SessionInfo {
    const db = this.#open();
    return toSessionInfo(readMeta(db, this.path), readCostUsd(db), readLastModel(db));
  }

  /**
   * Titles the session from a prompt unless it has a title already (the first prompt
   * names it). Returns whether a title was written.
   */
  setTitleIfUnset(prompt: string): boolean {
    const title = titleFromPrompt(prompt);
    if (title === "") return false;
    const r = this.#open()
      .prepare("UPDATE session_meta SET title = ? WHERE session_id = ? AND title IS NULL")
      .run(title, this.sessionId);
    return Number(r.changes) > 0;
  }

  /**
   * Records the operator's model choice ("provider/model"; undefined clears it). Call it in
   * one transaction() with the session_setting event that says so.
   */
  setModelOverride(model: string | undefined): void {
    this.#open()
      .prepare("UPDATE session_meta SET model_override = ? WHERE session_id = ?")
      .run(model ?? null, this.sessionId);
  }

  lastSequence(): number {
    const row = this.#open().prepare("SELECT coalesce(max(sequence), 0) AS s FROM events").get() as {
      s: number;
    };
    return Number(row.s);
  }

  /**
   * Moves the session to `status`. Ending (any terminal status) stamps ended_at;
   * re-opening a completed or cancelled session to RUNNING clears it. Anything else —
   * including leaving a replay-only status — throws InvalidStatusTransitionError.
   */
  setStatus(status: SessionStatus, options: { readonly at?: Date } = {}): SessionMeta {
    const at = options.at ?? new Date();
    if (Number.isNaN(at.getTime())) throw new InvalidArgumentError("at must be a valid Date");
    // A status change is a point the file must be whole at (and the WAL checkpointed).
    this.commit();
    const meta = this.transaction(() => {
      const db = this.#db;
      const current = readMeta(db, this.path);
      checkStatusTransition(current.status, current.statusText, status);
      const endedAt = status === STATUS_RUNNING ? null : at.toISOString();
      db.prepare("UPDATE session_meta SET status = ?, ended_at = ? WHERE session_id = ?").run(
        sessionStatusText(status),
        endedAt,
        this.sessionId,
      );
      return readMeta(db, this.path);
    });
    // A run ended: everything goes into the main file, so the .sqlite alone is the whole
    // session even while the process keeps it open (or dies before closing it).
    if (status !== STATUS_RUNNING && this.#depth === 0) this.checkpoint();
    return meta;
  }

  /**
   * Copies the WAL into the main file (PASSIVE: never waits for a reader). True when
   * every frame made it; a reader holding an older snapshot can keep some back until later.
   */
  checkpoint(): boolean {
    try {
      const r = this.#open().prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as {
        busy: number;
        log: number;
        checkpointed: number;
      };
      return Number(r.busy) === 0 && Number(r.log) === Number(r.checkpointed);
    } catch {
      return false;
    }
  }

  /**
   * A reader on its own connection, sharing nothing with this writer: what a backfill
   * uses while the session keeps running. Skips the checks this writer already ran.
   */
  openReader(): SessionReader {
    this.#open();
    // A reader sees committed data only: what this writer holds goes to the file first.
    this.commit();
    const db = connect(this.path, { readOnly: true });
    return new SessionReader(db, this.sessionId, this.path, [], undefined);
  }

  /** The last connection's close removes the WAL; with readers still open, the copy is made now. */
  private checkpointOnClose(): void {
    try {
      this.#db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get();
    } catch {
      // a damaged or read-only file: closing still works
    }
  }

  close(): void {
    if (this.#closed) return;
    // What a group commit holds is kept (and synced), not rolled back by the close.
    let failed: unknown;
    try {
      this.sync();
    } catch (err) {
      failed = err;
    }
    this.#closed = true;
    openWriters.delete(resolve(this.path));
    this.checkpointOnClose();
    try {
      this.#db.close();
    } finally {
      this.#lock?.release();
    }
    if (failed !== undefined) throw failed;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** Throws SessionLockedError when another process holds the session's writer (nothing is taken). */
export function assertNoOtherWriter(sessionId: string, options: StateOptions = {}): void {
  assertSessionUnlocked(sessionId, sessionFilePath(resolveSessionsDir(options.dir), sessionId));
}

/**
 * Leaves a finished session as one self-contained file: when no process holds its writer,
 * checkpoints the WAL and closes the last connection, which removes the -wal and -shm
 * sidecars (a read-only connection closing last cannot). Best effort; never throws.
 */
export function tidySessionFile(sessionId: string, options: StateOptions = {}): void {
  let lock: SessionLock | undefined;
  try {
    const path = sessionFilePath(resolveSessionsDir(options.dir), sessionId);
    if (hasOpenWriter(path) || !existsSync(`${path}-wal`)) return;
    lock = acquireSessionLock(sessionId, path);
    const db = connect(path, { readOnly: false, busyTimeoutMs: 0 });
    try {
      db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").get();
    } finally {
      db.close();
    }
  } catch {
    // another process has it open, or it is damaged: nothing to tidy now
  } finally {
    lock?.release();
  }
}
