// Records in SQLite (node:sqlite, no native addon): one database per root —
// `memory.sqlite` in the global directory and in the project's .agent/memory/ — each with
// an FTS5 index over title and content (porter stemming) kept in step inside the same
// transaction as every write. WAL and a busy timeout let two sessions share a file.
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type ScopeName, type StoredRecord, terms } from "./record.ts";
import type { MemoryStore, Roots } from "./store.ts";

const FILE = "memory.sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  scope TEXT NOT NULL,
  title TEXT NOT NULL,
  content TEXT NOT NULL,
  status TEXT NOT NULL,
  links TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  source_session_id TEXT NOT NULL,
  source_turn_id TEXT,
  recorded_by TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(id UNINDEXED, title, content, tokenize = 'porter unicode61');
`;

interface Row {
  id: string;
  type: string;
  scope: string;
  title: string;
  content: string;
  status: string;
  links: string;
  created_at: string;
  updated_at: string;
  source_session_id: string;
  source_turn_id: string | null;
  recorded_by: string;
}

function fromRow(r: Row): StoredRecord {
  return {
    id: r.id,
    type: r.type as StoredRecord["type"],
    scope: r.scope as ScopeName,
    title: r.title,
    content: r.content,
    status: r.status === "pending" ? "pending" : "canonical",
    links: JSON.parse(r.links) as string[],
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    provenance: {
      sourceSessionId: r.source_session_id,
      ...(r.source_turn_id ? { sourceTurnId: r.source_turn_id } : {}),
      recordedBy: r.recorded_by,
    },
  };
}

export class SqliteStore implements MemoryStore {
  readonly #dbs = new Map<string, DatabaseSync>();

  /** The database of a root; undefined when it does not exist and `create` is false. */
  #db(dir: string, create: boolean): DatabaseSync | undefined {
    const known = this.#dbs.get(dir);
    if (known) return known;
    if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(join(dir, FILE));
    } catch {
      return undefined;
    }
    db.exec("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL;");
    db.exec(SCHEMA);
    this.#dbs.set(dir, db);
    return db;
  }

  #existing(roots: Roots): DatabaseSync[] {
    const out: DatabaseSync[] = [];
    for (const dir of [roots.project, roots.global]) {
      const db = this.#dbs.get(dir) ?? (existsDb(dir) ? this.#db(dir, false) : undefined);
      if (db) out.push(db);
    }
    return out;
  }

  list(roots: Roots): StoredRecord[] {
    const seen = new Set<string>();
    const out: StoredRecord[] = [];
    for (const db of this.#existing(roots)) {
      for (const row of db.prepare("SELECT * FROM records ORDER BY id").all() as unknown as Row[]) {
        if (seen.has(row.id)) continue;
        seen.add(row.id);
        out.push(fromRow(row));
      }
    }
    return out;
  }

  get(roots: Roots, id: string): StoredRecord | undefined {
    for (const db of this.#existing(roots)) {
      const row = db.prepare("SELECT * FROM records WHERE id = ?").get(id) as unknown as Row | undefined;
      if (row) return fromRow(row);
    }
    return undefined;
  }

  put(roots: Roots, r: StoredRecord): void {
    const db = this.#db(r.scope === "global" ? roots.global : roots.project, true)!;
    db.exec("BEGIN IMMEDIATE");
    try {
      db.prepare("DELETE FROM records_fts WHERE id = ?").run(r.id);
      db.prepare(
        `INSERT OR REPLACE INTO records (id, type, scope, title, content, status, links, created_at, updated_at,
           source_session_id, source_turn_id, recorded_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        r.id,
        r.type,
        r.scope,
        r.title,
        r.content,
        r.status,
        JSON.stringify(r.links),
        r.createdAt,
        r.updatedAt,
        r.provenance.sourceSessionId,
        r.provenance.sourceTurnId ?? null,
        r.provenance.recordedBy,
      );
      db.prepare("INSERT INTO records_fts (id, title, content) VALUES (?, ?, ?)").run(
        r.id,
        r.title,
        r.content,
      );
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  }

  remove(roots: Roots, id: string): boolean {
    for (const db of this.#existing(roots)) {
      db.exec("BEGIN IMMEDIATE");
      try {
        const n = Number(db.prepare("DELETE FROM records WHERE id = ?").run(id).changes);
        db.prepare("DELETE FROM records_fts WHERE id = ?").run(id);
        db.exec("COMMIT");
        if (n > 0) return true;
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
    }
    return false;
  }

  search(roots: Roots, query: string): Map<string, number> {
    const words = terms(query);
    const out = new Map<string, number>();
    if (words.length === 0) return out;
    // Each term quoted (FTS5 syntax in the query is never interpreted), any of them matching.
    const match = words.map((w) => `"${w.replace(/"/g, '""')}"`).join(" OR ");
    for (const db of this.#existing(roots)) {
      const rows = db
        .prepare(
          "SELECT id, bm25(records_fts) AS rank FROM records_fts WHERE records_fts MATCH ? ORDER BY rank LIMIT 200",
        )
        .all(match) as unknown as { id: string; rank: number }[];
      // bm25 is negative, more negative for better matches: the best match scores 1.
      const best = rows[0]?.rank ?? 0;
      for (const row of rows) {
        if (out.has(row.id)) continue;
        out.set(row.id, best < 0 ? Math.max(0, Math.min(1, row.rank / best)) : 1);
      }
    }
    return out;
  }

  close(): void {
    for (const db of this.#dbs.values()) db.close();
    this.#dbs.clear();
  }
}

function existsDb(dir: string): boolean {
  try {
    return statSync(join(dir, FILE)).isFile();
  } catch {
    return false;
  }
}
