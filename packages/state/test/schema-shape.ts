// Reads a session file's schema as data (columns, indexes, foreign keys), so tests can
// compare a file against the spec's layout and a migrated file against a fresh one.

import { DatabaseSync } from "node:sqlite";

export interface Shape {
  tables: Record<string, { columns: string[]; indexes: string[]; foreignKeys: string[] }>;
  autoincrement: string[];
  userVersion: number;
}

export function shapeOf(path: string): Shape {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const names = (
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    const tables: Shape["tables"] = {};
    for (const name of names) {
      const columns = (
        db.prepare(`PRAGMA table_info("${name}")`).all() as {
          name: string;
          type: string;
          notnull: number;
          dflt_value: string | null;
          pk: number;
        }[]
      ).map(
        (c) =>
          `${c.name} ${c.type}${c.notnull ? " NOT NULL" : ""}${c.dflt_value === null ? "" : ` DEFAULT ${c.dflt_value}`}${c.pk ? ` PK${c.pk}` : ""}`,
      );
      const indexes = (
        db.prepare(`PRAGMA index_list("${name}")`).all() as { name: string; unique: number; origin: string }[]
      )
        .map((ix) => {
          const cols = (db.prepare(`PRAGMA index_info("${ix.name}")`).all() as { name: string }[]).map(
            (c) => c.name,
          );
          const label = ix.origin === "c" ? ix.name : ix.origin;
          return `${label}${ix.unique ? " UNIQUE" : ""} (${cols.join(", ")})`;
        })
        .sort();
      const foreignKeys = (
        db.prepare(`PRAGMA foreign_key_list("${name}")`).all() as {
          from: string;
          table: string;
          to: string;
        }[]
      ).map((fk) => `${fk.from} -> ${fk.table}(${fk.to})`);
      tables[name] = { columns, indexes, foreignKeys };
    }
    const autoincrement = (
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%' ORDER BY name",
        )
        .all() as { name: string }[]
    ).map((r) => r.name);
    const userVersion = (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version;
    return { tables, autoincrement, userVersion };
  } finally {
    db.close();
  }
}

/**
 * The state-backend spec's five tables, as shapeOf renders them, plus the nullable
 * session_meta columns of schema 3 (working_directory, title; docs/decisions/cli-and-tui.md,
 * "Terminal experience") and 4 (model_override; docs/decisions/sessions-and-state.md).
 */
export const SPEC_SHAPE: Shape["tables"] = {
  events: {
    columns: [
      "sequence INTEGER PK1",
      "id TEXT NOT NULL",
      "timestamp TEXT NOT NULL",
      "kind TEXT NOT NULL",
      "producer_category TEXT NOT NULL",
      "producer_name TEXT NOT NULL",
      "producer_version TEXT NOT NULL",
      "schema_version TEXT NOT NULL",
      "payload BLOB NOT NULL",
    ],
    indexes: [
      "idx_events_kind (kind)",
      "idx_events_producer (producer_category, producer_name, producer_version)",
      "u UNIQUE (id)",
    ],
    foreignKeys: [],
  },
  session_meta: {
    columns: [
      "session_id TEXT PK1",
      "parent_session_id TEXT",
      "profile TEXT NOT NULL",
      "status TEXT NOT NULL",
      "depth INTEGER NOT NULL",
      "started_at TEXT NOT NULL",
      "ended_at TEXT",
      "working_directory TEXT",
      "title TEXT",
      "model_override TEXT",
    ],
    indexes: ["pk UNIQUE (session_id)"],
    foreignKeys: [],
  },
  cost_ledger: {
    columns: [
      "sequence INTEGER PK1",
      "event_sequence INTEGER NOT NULL",
      "provider_name TEXT NOT NULL",
      "model_id TEXT NOT NULL",
      "input_tokens INTEGER NOT NULL",
      "output_tokens INTEGER NOT NULL",
      "cache_write_tokens INTEGER NOT NULL DEFAULT 0",
      "cache_read_tokens INTEGER NOT NULL DEFAULT 0",
      "cost_usd REAL NOT NULL",
    ],
    indexes: [],
    foreignKeys: ["event_sequence -> events(sequence)"],
  },
  plan_items: {
    columns: [
      "sequence INTEGER PK1",
      "event_sequence INTEGER NOT NULL",
      "turn_id TEXT NOT NULL",
      "tool_call_id TEXT NOT NULL",
      "provider_name TEXT NOT NULL",
      "tool_name TEXT NOT NULL",
      "decision TEXT NOT NULL",
      "decided_by TEXT NOT NULL",
    ],
    indexes: [],
    foreignKeys: ["event_sequence -> events(sequence)"],
  },
  producers: {
    columns: [
      "category TEXT NOT NULL PK1",
      "name TEXT NOT NULL PK2",
      "version TEXT NOT NULL PK3",
      "first_seen_sequence INTEGER NOT NULL",
    ],
    indexes: ["pk UNIQUE (category, name, version)"],
    foreignKeys: ["first_seen_sequence -> events(sequence)"],
  },
};
