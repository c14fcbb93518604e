// Salvage of a session file that failed PRAGMA integrity_check.
//
// node:sqlite has no `.recover`, so salvage reads what SQLite still can: every table
// is walked in rowid order; when a damaged page makes the walk fail, the rows after it
// are probed one rowid at a time (a point lookup descends the b-tree on its own path
// and usually steps around the bad page) until a readable row lets the ordered walk
// resume. Rows that fail to read, fail type checks or fail to insert are counted as
// lost. The producers manifest is rebuilt from the salvaged events rather than copied.
//
// The damaged original is renamed to `<id>.sqlite.corrupt` (never deleted) only once a
// sound replacement has been built beside it; if nothing usable can be read, the
// original stays untouched and a `<id>.sqlite.unreadable` flag is written instead.

import { existsSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { DatabaseSync, SQLOutputValue } from "node:sqlite";
import { SessionUnreadableError } from "./errors.ts";
import type { StateLogger } from "./log.ts";
import { CORRUPT_SUFFIX, UNREADABLE_SUFFIX } from "./paths.ts";
import type { RecoveryReport, TableSalvage } from "./recovery-report.ts";
import { createSchema, readUserVersion, SESSION_TABLES, type SessionTable } from "./schema.ts";
import { closeQuietly, connect, integrityProblems } from "./sqlite.ts";

export type { RecoveryReport, TableSalvage } from "./recovery-report.ts";

export interface UnreadableFlag {
  readonly sessionId: string;
  readonly reason: string;
  readonly integrityErrors: readonly string[];
  readonly flaggedAt: string;
}

type Row = Record<string, SQLOutputValue>;

// Column → expected JS type after reading; anything else means the row is garbage.
const COLUMN_TYPES: Record<SessionTable, Record<string, "int" | "text" | "text?" | "real" | "blob">> = {
  session_meta: {
    session_id: "text",
    parent_session_id: "text?",
    profile: "text",
    status: "text",
    depth: "int",
    started_at: "text",
    ended_at: "text?",
    model_override: "text?",
  },
  events: {
    sequence: "int",
    id: "text",
    timestamp: "text",
    kind: "text",
    producer_category: "text",
    producer_name: "text",
    producer_version: "text",
    schema_version: "text",
    payload: "blob",
  },
  cost_ledger: {
    sequence: "int",
    event_sequence: "int",
    provider_name: "text",
    model_id: "text",
    input_tokens: "int",
    output_tokens: "int",
    cache_write_tokens: "int",
    cache_read_tokens: "int",
    cost_usd: "real",
  },
  plan_items: {
    sequence: "int",
    event_sequence: "int",
    turn_id: "text",
    tool_call_id: "text",
    provider_name: "text",
    tool_name: "text",
    decision: "text",
    decided_by: "text",
  },
  producers: { category: "text", name: "text", version: "text", first_seen_sequence: "int" },
};

function typeOk(value: SQLOutputValue, want: "int" | "text" | "text?" | "real" | "blob"): boolean {
  switch (want) {
    case "int":
      return typeof value === "number" ? Number.isInteger(value) : typeof value === "bigint";
    case "real":
      return typeof value === "number" && Number.isFinite(value);
    case "text":
      return typeof value === "string";
    case "text?":
      return value === null || typeof value === "string";
    case "blob":
      return value instanceof Uint8Array;
  }
}

/** Reads the first value of a one-row query, or undefined when the file will not answer it. */
function tryScalar(db: DatabaseSync, sql: string, ...params: (string | number)[]): number | undefined {
  try {
    const row = db.prepare(sql).get(...params) as Row | undefined;
    const value = row === undefined ? undefined : Object.values(row)[0];
    return typeof value === "number" ? value : typeof value === "bigint" ? Number(value) : undefined;
  } catch {
    return undefined;
  }
}

// When the highest rowid cannot be learnt, give up after this many unreadable rowids in a row.
const BLIND_PROBE_LIMIT = 10_000;

/**
 * Yields every readable row of `table` in rowid order, stepping around unreadable pages.
 * `onLost` is called once per rowid that exists (or may exist) but cannot be read.
 */
function* salvageRows(
  db: DatabaseSync,
  table: string,
  columns: readonly string[],
  onLost: () => void,
): Generator<Row & { __rowid: number }> {
  const cols = columns.map((c) => `"${c}"`).join(", ");
  const upper =
    tryScalar(db, `SELECT max(rowid) FROM "${table}"`) ??
    tryScalar(db, "SELECT seq FROM sqlite_sequence WHERE name = ?", table);
  let cursor = 0;
  for (;;) {
    try {
      const scan = db.prepare(
        `SELECT rowid AS __rowid, ${cols} FROM "${table}" WHERE rowid > ? ORDER BY rowid`,
      );
      for (const row of scan.iterate(cursor)) {
        const rowid = Number(row.__rowid);
        cursor = rowid;
        yield row as Row & { __rowid: number };
      }
      return;
    } catch {
      // The ordered walk hit a damaged page somewhere after `cursor`: probe rowid by rowid.
    }
    let point: ReturnType<DatabaseSync["prepare"]>;
    try {
      point = db.prepare(`SELECT rowid AS __rowid, ${cols} FROM "${table}" WHERE rowid = ?`);
    } catch {
      return;
    }
    let probe = cursor + 1;
    let misses = 0;
    let resumed = false;
    while (upper === undefined ? misses < BLIND_PROBE_LIMIT : probe <= upper) {
      try {
        const row = point.get(probe) as (Row & { __rowid: number }) | undefined;
        if (row !== undefined) {
          cursor = probe;
          yield row;
          resumed = true;
          break;
        }
        misses++; // a gap: no such rowid
      } catch {
        misses++;
        onLost();
      }
      probe++;
    }
    if (!resumed) return;
  }
}

function columnsOf(db: DatabaseSync, table: string): Set<string> {
  try {
    const rows = db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[];
    return new Set(rows.map((r) => r.name));
  } catch {
    return new Set();
  }
}

export function unreadableFlagPath(path: string): string {
  return `${path}${UNREADABLE_SUFFIX}`;
}

/** `<path>.corrupt`, or `<path>.corrupt.2`, `.3`, ... when earlier salvages left one there. */
export function nextCorruptPath(path: string): string {
  let candidate = `${path}${CORRUPT_SUFFIX}`;
  for (let n = 2; existsSync(candidate); n++) candidate = `${path}${CORRUPT_SUFFIX}.${n}`;
  return candidate;
}

function moveWithSidecars(from: string, to: string): void {
  renameSync(from, to);
  for (const side of ["-wal", "-shm", "-journal"]) {
    if (existsSync(from + side)) renameSync(from + side, to + side);
  }
}

function removeWithSidecars(path: string): void {
  for (const side of ["", "-wal", "-shm", "-journal"]) rmSync(path + side, { force: true });
}

export interface SalvageInput {
  readonly path: string;
  readonly sessionId: string;
  readonly integrityErrors: readonly string[];
  readonly log: StateLogger;
  readonly busyTimeoutMs?: number;
}

class SalvageFailed extends Error {}

/**
 * Builds a sound replacement for a damaged session file. On success the replacement
 * takes the original name, the original becomes `.corrupt`, and the report is logged at
 * error level. On failure the file is flagged unreadable and SessionUnreadableError is thrown.
 */
export function salvageSessionFile(input: SalvageInput): RecoveryReport {
  const { path, sessionId, integrityErrors, log } = input;
  const tmp = `${path}.salvage`;
  removeWithSidecars(tmp); // leftovers of an interrupted salvage are ours to discard
  let src: DatabaseSync | undefined;
  let dst: DatabaseSync | undefined;
  try {
    try {
      src = connect(path, { readOnly: true, busyTimeoutMs: input.busyTimeoutMs });
      // Lets SQLite read table contents even when an index or view definition is damaged.
      src.exec("PRAGMA writable_schema = ON");
      readUserVersion(src);
    } catch (err) {
      throw new SalvageFailed(`SQLite cannot read the file at all (${(err as Error).message})`);
    }
    dst = connect(tmp, { readOnly: false, busyTimeoutMs: input.busyTimeoutMs });
    dst.exec("PRAGMA journal_mode = DELETE");
    dst.exec("PRAGMA foreign_keys = OFF");
    dst.exec("BEGIN IMMEDIATE");
    createSchema(dst);

    const tables = {} as Record<SessionTable, TableSalvage>;
    for (const table of SESSION_TABLES) {
      if (table === "producers") continue; // rebuilt below
      const want = COLUMN_TYPES[table];
      const present = columnsOf(src, table);
      // An older file may lack columns added since; they take their defaults.
      const columns = Object.keys(want).filter((c) => present.has(c));
      let recovered = 0;
      let lost = 0;
      if (columns.length > 0) {
        const insert = dst.prepare(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        );
        for (const row of salvageRows(src, table, columns, () => lost++)) {
          if (!columns.every((c) => typeOk(row[c] ?? null, want[c] ?? "text"))) {
            lost++;
            continue;
          }
          if (table === "session_meta" && row.session_id !== sessionId) {
            lost++;
            continue;
          }
          try {
            insert.run(...columns.map((c) => row[c] ?? null));
            recovered++;
          } catch {
            lost++;
          }
        }
      }
      tables[table] = { recovered, lost };
    }
    if (tables.session_meta.recovered !== 1) {
      throw new SalvageFailed("the session_meta row could not be read");
    }

    dst.exec(`INSERT OR IGNORE INTO producers (category, name, version, first_seen_sequence)
      SELECT producer_category, producer_name, producer_version, sequence FROM events ORDER BY sequence`);
    const producerCount = tryScalar(dst, "SELECT count(*) FROM producers") ?? 0;
    tables.producers = { recovered: producerCount, lost: 0 };

    // Never hand out a sequence number again that the damaged file had already used.
    for (const table of ["events", "cost_ledger", "plan_items"] as const) {
      const old = tryScalar(src, "SELECT seq FROM sqlite_sequence WHERE name = ?", table) ?? 0;
      const now = tryScalar(dst, `SELECT max(sequence) FROM ${table}`) ?? 0;
      const high = Math.max(old, now);
      if (high === 0) continue;
      dst.prepare("DELETE FROM sqlite_sequence WHERE name = ?").run(table);
      dst.prepare("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)").run(table, high);
    }
    const orphanedRows =
      tryScalar(
        dst,
        `SELECT (SELECT count(*) FROM cost_ledger WHERE event_sequence NOT IN (SELECT sequence FROM events))
              + (SELECT count(*) FROM plan_items WHERE event_sequence NOT IN (SELECT sequence FROM events))`,
      ) ?? 0;
    dst.exec("COMMIT");
    const problems = integrityProblems(dst);
    if (problems.length > 0) throw new SalvageFailed(`the rebuilt file is itself unsound: ${problems[0]}`);
    dst.exec("PRAGMA journal_mode = WAL");
    closeQuietly(dst);
    closeQuietly(src);
    dst = undefined;
    src = undefined;

    const corruptPath = nextCorruptPath(path);
    moveWithSidecars(path, corruptPath);
    renameSync(tmp, path);
    const report: RecoveryReport = {
      sessionId,
      path,
      corruptPath,
      integrityErrors,
      tables,
      orphanedRows,
      recoveredAt: new Date().toISOString(),
    };
    log({
      level: "error",
      code: "session_recovered",
      path,
      sessionId,
      recovery: report,
      message:
        `session file ${path} failed its integrity check and was rebuilt from what could be read ` +
        `(events: ${tables.events.recovered} recovered, ${tables.events.lost} lost); ` +
        `the damaged original is kept at ${corruptPath}; this session's history may be incomplete`,
    });
    return report;
  } catch (err) {
    closeQuietly(dst);
    closeQuietly(src);
    removeWithSidecars(tmp);
    const reason = err instanceof SalvageFailed ? err.message : `salvage failed: ${(err as Error).message}`;
    flagUnreadable(path, { sessionId, reason, integrityErrors, flaggedAt: new Date().toISOString() });
    log({
      level: "error",
      code: "session_unreadable",
      path,
      sessionId,
      message: `session file ${path} failed its integrity check and could not be salvaged (${reason}); it is flagged unreadable and left untouched`,
    });
    throw new SessionUnreadableError(path, reason, { cause: err });
  }
}

export function flagUnreadable(path: string, flag: UnreadableFlag): void {
  writeFileSync(unreadableFlagPath(path), `${JSON.stringify(flag, null, 2)}\n`, { mode: 0o600 });
}
