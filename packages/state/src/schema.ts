// The session file schema and its migrations.
//
// Version history (PRAGMA user_version):
//   1  the first released layout: events, session_meta, cost_ledger without the cache
//      token columns, plan_items; no producers table and no producer index on events.
//      test/fixtures/session-v1.sql is a frozen copy of a file of that version.
//   2  the five-table layout of the state-backend spec: cost_ledger gains
//      cache_write_tokens/cache_read_tokens, the producers manifest exists (backfilled
//      from events on upgrade), events gains idx_events_producer.
//   3  session_meta gains working_directory and title (both nullable: a file
//      written before them has neither, and lists with "-"), so `--continue` can pick the
//      latest session of a directory and `sessions list` can say what a session was about.
//   4  (current) session_meta gains model_override: the operator's /model choice as
//      "provider/model" (NULL: none), kept with the session_setting event that set it so
//      `sessions list` reads it from the one row.
//
// A fresh file is created at the current version directly from CURRENT_SCHEMA; older
// files are brought forward one step at a time, each step in its own transaction that
// also bumps user_version, so an interrupted upgrade resumes where it stopped.

import type { DatabaseSync } from "node:sqlite";

export const CURRENT_SCHEMA_VERSION = 4;
/** Oldest version a migration path exists from. */
export const OLDEST_SUPPORTED_VERSION = 1;

const EVENTS = `CREATE TABLE events (
  sequence          INTEGER PRIMARY KEY AUTOINCREMENT,
  id                TEXT NOT NULL UNIQUE,
  timestamp         TEXT NOT NULL,
  kind              TEXT NOT NULL,
  producer_category TEXT NOT NULL,
  producer_name     TEXT NOT NULL,
  producer_version  TEXT NOT NULL,
  schema_version    TEXT NOT NULL,
  payload           BLOB NOT NULL
)`;

const SESSION_META = `CREATE TABLE session_meta (
  session_id         TEXT PRIMARY KEY,
  parent_session_id  TEXT,
  profile            TEXT NOT NULL,
  status             TEXT NOT NULL,
  depth              INTEGER NOT NULL,
  started_at         TEXT NOT NULL,
  ended_at           TEXT,
  working_directory  TEXT,
  title              TEXT,
  model_override     TEXT
)`;

const COST_LEDGER = (name: string) => `CREATE TABLE ${name} (
  sequence           INTEGER PRIMARY KEY AUTOINCREMENT,
  event_sequence     INTEGER NOT NULL REFERENCES events(sequence),
  provider_name      TEXT NOT NULL,
  model_id           TEXT NOT NULL,
  input_tokens       INTEGER NOT NULL,
  output_tokens      INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
  cost_usd           REAL NOT NULL
)`;

const PLAN_ITEMS = `CREATE TABLE plan_items (
  sequence         INTEGER PRIMARY KEY AUTOINCREMENT,
  event_sequence   INTEGER NOT NULL REFERENCES events(sequence),
  turn_id          TEXT NOT NULL,
  tool_call_id     TEXT NOT NULL,
  provider_name    TEXT NOT NULL,
  tool_name        TEXT NOT NULL,
  decision         TEXT NOT NULL,
  decided_by       TEXT NOT NULL
)`;

const PRODUCERS = `CREATE TABLE producers (
  category             TEXT NOT NULL,
  name                 TEXT NOT NULL,
  version              TEXT NOT NULL,
  first_seen_sequence  INTEGER NOT NULL REFERENCES events(sequence),
  PRIMARY KEY (category, name, version)
)`;

const IDX_EVENTS_KIND = "CREATE INDEX idx_events_kind ON events(kind)";
const IDX_EVENTS_PRODUCER =
  "CREATE INDEX idx_events_producer ON events(producer_category, producer_name, producer_version)";

/** DDL of a fresh file at CURRENT_SCHEMA_VERSION: the spec's five tables and two indexes. */
export const CURRENT_SCHEMA: readonly string[] = [
  EVENTS,
  IDX_EVENTS_KIND,
  IDX_EVENTS_PRODUCER,
  SESSION_META,
  COST_LEDGER("cost_ledger"),
  PLAN_ITEMS,
  PRODUCERS,
];

/** The tables a session file holds, in the order salvage copies them (parents first). */
export const SESSION_TABLES = ["session_meta", "events", "cost_ledger", "plan_items", "producers"] as const;
export type SessionTable = (typeof SESSION_TABLES)[number];

export interface Migration {
  /** Version the step starts from; it leaves the file at from + 1. */
  readonly from: number;
  readonly description: string;
  /** Runs inside a transaction with foreign key enforcement off. */
  up(db: DatabaseSync): void;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    from: 1,
    description:
      "add cost_ledger cache token columns, create and backfill the producers manifest, index events by producer",
    up(db) {
      // Rebuild cost_ledger rather than ALTER ... ADD COLUMN so the columns land in the
      // same order as in a fresh file; keep its AUTOINCREMENT high-water mark.
      const seq = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'cost_ledger'").get() as
        | { seq: number }
        | undefined;
      db.exec(COST_LEDGER("cost_ledger_v2"));
      db.exec(`INSERT INTO cost_ledger_v2
          (sequence, event_sequence, provider_name, model_id, input_tokens, output_tokens, cost_usd)
        SELECT sequence, event_sequence, provider_name, model_id, input_tokens, output_tokens, cost_usd
        FROM cost_ledger ORDER BY sequence`);
      db.exec("DROP TABLE cost_ledger");
      db.exec("ALTER TABLE cost_ledger_v2 RENAME TO cost_ledger");
      if (seq !== undefined) {
        db.prepare("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'cost_ledger'").run(seq.seq);
      }
      db.exec(PRODUCERS);
      db.exec(`INSERT INTO producers (category, name, version, first_seen_sequence)
        SELECT producer_category, producer_name, producer_version, min(sequence)
        FROM events GROUP BY producer_category, producer_name, producer_version`);
      db.exec(IDX_EVENTS_PRODUCER);
    },
  },
  {
    from: 2,
    description: "add session_meta.working_directory and session_meta.title",
    up(db) {
      // Appended columns land last, where a fresh file has them; NULL means "not recorded".
      db.exec("ALTER TABLE session_meta ADD COLUMN working_directory TEXT");
      db.exec("ALTER TABLE session_meta ADD COLUMN title TEXT");
    },
  },
  {
    from: 3,
    description: "add session_meta.model_override",
    up(db) {
      db.exec("ALTER TABLE session_meta ADD COLUMN model_override TEXT");
    },
  },
];

export function readUserVersion(db: DatabaseSync): number {
  const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
  return row.user_version;
}

/** Creates the current schema in an empty database and stamps its version (inside the caller's transaction). */
export function createSchema(db: DatabaseSync): void {
  for (const ddl of CURRENT_SCHEMA) db.exec(ddl);
  db.exec(`PRAGMA user_version = ${CURRENT_SCHEMA_VERSION}`);
}

export interface MigrationStepResult {
  readonly from: number;
  readonly to: number;
  readonly description: string;
}

/**
 * Applies every step from the file's version up to the current one. Each step runs in
 * its own IMMEDIATE transaction and re-reads user_version under the write lock, so two
 * processes upgrading the same file at once cannot apply a step twice.
 */
export function migrate(db: DatabaseSync): MigrationStepResult[] {
  const applied: MigrationStepResult[] = [];
  db.exec("PRAGMA foreign_keys = OFF");
  try {
    for (;;) {
      db.exec("BEGIN IMMEDIATE");
      try {
        const version = readUserVersion(db);
        if (version >= CURRENT_SCHEMA_VERSION) {
          db.exec("COMMIT");
          return applied;
        }
        const step = MIGRATIONS.find((m) => m.from === version);
        if (step === undefined) throw new Error(`no migration step from schema version ${version}`);
        step.up(db);
        db.exec(`PRAGMA user_version = ${version + 1}`);
        db.exec("COMMIT");
        applied.push({ from: version, to: version + 1, description: step.description });
      } catch (err) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw err;
      }
    }
  } finally {
    db.exec("PRAGMA foreign_keys = ON");
  }
}
