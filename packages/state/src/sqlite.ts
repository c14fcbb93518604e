// Connection setup shared by writers, readers and scans.

import { DatabaseSync } from "node:sqlite";

/**
 * How long a connection waits on a lock before failing. In WAL mode readers and the
 * writer do not wait on each other; the only waits left are a schema upgrade of an
 * old file by another process and WAL-index recovery after a crash, both brief.
 */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

export type Durability = "full" | "normal";

export interface ConnectOptions {
  readonly readOnly: boolean;
  readonly busyTimeoutMs?: number;
}

export function connect(path: string, options: ConnectOptions): DatabaseSync {
  return new DatabaseSync(path, {
    readOnly: options.readOnly,
    timeout: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS,
    enableForeignKeyConstraints: true,
  });
}

/** Error codes SQLite uses for a damaged or foreign file (SQLITE_CORRUPT, SQLITE_NOTADB). */
export function isCorruptionError(err: unknown): boolean {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  if (typeof code !== "number") return false;
  const primary = code & 0xff;
  return primary === 11 || primary === 26;
}

/** Runs PRAGMA integrity_check; returns [] when the file is sound, else the problems found. */
export function integrityProblems(db: DatabaseSync, maxErrors = 20): string[] {
  try {
    const rows = db.prepare(`PRAGMA integrity_check(${maxErrors})`).all() as { integrity_check: string }[];
    const messages = rows.map((r) => String(r.integrity_check));
    return messages.length === 1 && messages[0] === "ok" ? [] : messages;
  } catch (err) {
    return [`integrity_check could not run: ${(err as Error).message}`];
  }
}

export function tableNames(db: DatabaseSync): string[] {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
  return rows.map((r) => r.name);
}

export function closeQuietly(db: DatabaseSync | undefined): void {
  try {
    if (db?.isOpen) db.close();
  } catch {
    // Closing a connection on a damaged file can fail; nothing is lost by ignoring it.
  }
}
