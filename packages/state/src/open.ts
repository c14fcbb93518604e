// The one path every session file is opened through: flag check, schema version check,
// integrity check (salvaging on failure), then step-by-step migration — all before
// anything else touches the file.

import { existsSync, readFileSync } from "node:fs";
import type { DatabaseSync } from "node:sqlite";
import {
  NotASessionFileError,
  SchemaTooNewError,
  SessionNotFoundError,
  SessionUnreadableError,
} from "./errors.ts";
import { type StateLogger, stderrLogger } from "./log.ts";
import {
  type RecoveryReport,
  salvageSessionFile,
  type UnreadableFlag,
  unreadableFlagPath,
} from "./recover.ts";
import { CURRENT_SCHEMA_VERSION, type MigrationStepResult, migrate, readUserVersion } from "./schema.ts";
import { closeQuietly, connect, integrityProblems, isCorruptionError, tableNames } from "./sqlite.ts";

export interface OpenFileOptions {
  readonly log?: StateLogger;
  readonly busyTimeoutMs?: number;
  /** Run PRAGMA integrity_check (and salvage on failure). On for every real open; scans may skip it. */
  readonly integrityCheck?: boolean;
}

export interface OpenedFile {
  readonly db: DatabaseSync;
  readonly recovery?: RecoveryReport;
  readonly migrations: readonly MigrationStepResult[];
}

export function readUnreadableFlag(path: string): UnreadableFlag | undefined {
  const flagPath = unreadableFlagPath(path);
  if (!existsSync(flagPath)) return undefined;
  try {
    return JSON.parse(readFileSync(flagPath, "utf8")) as UnreadableFlag;
  } catch {
    return { sessionId: "", reason: "flagged unreadable", integrityErrors: [], flaggedAt: "" };
  }
}

function ensureSessionShape(db: DatabaseSync, path: string, sessionId: string, version: number): void {
  if (version === 0) {
    const tables = tableNames(db);
    throw new NotASessionFileError(
      path,
      tables.length === 0
        ? "the file is empty (its creation never committed)"
        : "it carries no schema version and tables this kernel did not create",
    );
  }
  const row = db.prepare("SELECT session_id FROM session_meta").all() as { session_id: string }[];
  if (row.length !== 1 || row[0]?.session_id !== sessionId) {
    throw new NotASessionFileError(
      path,
      `session_meta does not hold exactly one row for session ${sessionId}`,
    );
  }
}

/**
 * Opens a session file for reading ("read", a read-only connection) or as its writer
 * ("write"). A file of an older schema version is upgraded in place first — even for a
 * reader, through a short-lived writable connection — and a newer one is refused.
 */
export function openSessionFile(
  path: string,
  sessionId: string,
  mode: "read" | "write",
  options: OpenFileOptions = {},
): OpenedFile {
  const log = options.log ?? stderrLogger;
  const flag = readUnreadableFlag(path);
  if (flag !== undefined)
    throw new SessionUnreadableError(path, `flagged unreadable earlier: ${flag.reason}`);
  if (!existsSync(path)) throw new SessionNotFoundError(sessionId, path);

  let recovery: RecoveryReport | undefined;
  for (let attempt = 0; ; attempt++) {
    let db: DatabaseSync | undefined;
    let problems: string[];
    let version = 0;
    try {
      db = connect(path, { readOnly: mode === "read", busyTimeoutMs: options.busyTimeoutMs });
      version = readUserVersion(db);
      if (version > CURRENT_SCHEMA_VERSION)
        throw new SchemaTooNewError(path, version, CURRENT_SCHEMA_VERSION);
      problems = options.integrityCheck === false ? [] : integrityProblems(db);
    } catch (err) {
      closeQuietly(db);
      if (!isCorruptionError(err)) throw err;
      problems = [(err as Error).message];
      db = undefined;
    }
    if (problems.length > 0) {
      closeQuietly(db);
      if (attempt > 0) throw new SessionUnreadableError(path, `still unsound after salvage: ${problems[0]}`);
      log({
        level: "error",
        code: "integrity_check_failed",
        path,
        sessionId,
        message: `session file ${path} failed PRAGMA integrity_check: ${problems[0]}; attempting salvage`,
      });
      recovery = salvageSessionFile({
        path,
        sessionId,
        integrityErrors: problems,
        log,
        busyTimeoutMs: options.busyTimeoutMs,
      });
      continue;
    }
    if (db === undefined) throw new Error("unreachable: no connection without integrity problems");
    try {
      let migrations: MigrationStepResult[] = [];
      if (version !== 0 && version < CURRENT_SCHEMA_VERSION) {
        if (mode === "write") {
          migrations = migrate(db);
        } else {
          const upgrader = connect(path, { readOnly: false, busyTimeoutMs: options.busyTimeoutMs });
          try {
            migrations = migrate(upgrader);
          } finally {
            closeQuietly(upgrader);
          }
        }
        if (migrations.length > 0) {
          log({
            level: "info",
            code: "session_migrated",
            path,
            sessionId,
            message: `session file ${path} upgraded from schema ${version} to ${CURRENT_SCHEMA_VERSION}`,
          });
        }
        version = readUserVersion(db);
      }
      ensureSessionShape(db, path, sessionId, version);
      return recovery === undefined ? { db, migrations } : { db, migrations, recovery };
    } catch (err) {
      closeQuietly(db);
      throw err;
    }
  }
}
