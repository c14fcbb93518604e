// Read access to one session file: its meta row, the replay stream, the producer
// manifest and the structured ledgers. Works on a read-only connection, so a reader in
// another process never blocks, and is never blocked by, the kernel's writer (WAL).

import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlanDecision } from "@pluggableharness/protocol/plan";
import type { SessionInfo } from "@pluggableharness/protocol/session";
import {
  CATEGORY_KERNEL,
  eventKindText,
  parseEventKind,
  parsePlanDecision,
  parsePluginCategory,
  planDecisionText,
  pluginCategoryText,
} from "./codes.ts";
import { InvalidArgumentError, StoreClosedError } from "./errors.ts";
import { stderrLogger } from "./log.ts";
import { readCostUsd, readLastModel, readMeta, toSessionInfo } from "./meta.ts";
import { openSessionFile } from "./open.ts";
import { resolveSessionsDir, sessionFilePath } from "./paths.ts";
import type { RecoveryReport } from "./recover.ts";
import type { MigrationStepResult } from "./schema.ts";
import { tableNames } from "./sqlite.ts";
import type {
  CostLedgerRow,
  PlanItemRow,
  ProducerIdentity,
  ProducerRecord,
  SessionMeta,
  StateOptions,
  StoredEvent,
} from "./types.ts";

/** Which events to replay. Bounds are inclusive/exclusive as named; all optional. */
export interface EventRange {
  /** Only events with sequence > afterSequence (a frontend that has seen up to here). */
  readonly afterSequence?: number;
  /** Only events with sequence <= throughSequence (pin a backfill's end before starting it). */
  readonly throughSequence?: number;
  /** Only these kinds. */
  readonly kinds?: readonly EventKind[];
}

interface EventRow {
  sequence: number;
  id: string;
  timestamp: string;
  kind: string;
  producer_category: string;
  producer_name: string;
  producer_version: string;
  schema_version: string;
  payload: Uint8Array;
}

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    sequence: Number(row.sequence),
    id: row.id,
    timestamp: row.timestamp,
    kind: parseEventKind(row.kind),
    kindText: row.kind,
    producer: {
      category: parsePluginCategory(row.producer_category),
      name: row.producer_name,
      version: row.producer_version,
    },
    schemaVersion: row.schema_version,
    payload: row.payload,
  };
}

function bound(value: number | undefined, what: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value)) throw new InvalidArgumentError(`${what} must be an integer`);
  return value;
}

export function producerKey(p: ProducerIdentity): string {
  return `${pluginCategoryText(p.category)}\u0000${p.name}\u0000${p.version}`;
}

const SESSION_TABLES = ["events", "session_meta", "cost_ledger", "plan_items", "producers"];

/** "no such table: x" -> "x": a table a damaged file has lost. */
function missingTable(err: unknown): string | undefined {
  return /no such table: (\w+)/.exec((err as Error)?.message ?? "")?.[1];
}

export interface MissingProducersOptions {
  /**
   * Count kernel-written producers too. Off by default: the kernel renders its own
   * kinds and is not something an operator installs.
   */
  readonly includeKernel?: boolean;
}

export class SessionReader implements Disposable {
  readonly sessionId: string;
  readonly path: string;
  readonly migrations: readonly MigrationStepResult[];
  readonly recovery: RecoveryReport | undefined;
  #db: DatabaseSync;
  #closed = false;
  readonly #damage = new Set<string>();

  /** Use openSessionReader, or SessionWriter.openReader. */
  constructor(
    db: DatabaseSync,
    sessionId: string,
    path: string,
    migrations: readonly MigrationStepResult[],
    recovery: RecoveryReport | undefined,
  ) {
    this.#db = db;
    this.sessionId = sessionId;
    this.path = path;
    this.migrations = migrations;
    this.recovery = recovery;
  }

  #open(): DatabaseSync {
    if (this.#closed) throw new StoreClosedError(`session reader ${this.sessionId}`);
    return this.#db;
  }

  /**
   * What this reader found damaged so far (a table the file has lost): the reads carry on
   * without it, so whatever is left can still be shown.
   */
  damage(): string[] {
    return [...this.#damage];
  }

  /** Checks that the file still has every table of the schema; each missing one is damage. */
  checkTables(): string[] {
    const have = new Set(tableNames(this.#open()));
    for (const t of SESSION_TABLES) if (!have.has(t)) this.#damage.add(`the ${t} table is missing`);
    return this.damage();
  }

  /** Runs a read; a table the file has lost is noted as damage and `fallback` answers. */
  #tolerant<T>(fallback: () => T, read: () => T): T {
    try {
      return read();
    } catch (err) {
      const table = missingTable(err);
      if (table === undefined) throw err;
      this.#damage.add(`the ${table} table is missing`);
      return fallback();
    }
  }

  meta(): SessionMeta {
    return readMeta(this.#open(), this.path);
  }

  costUsd(): number {
    return this.#tolerant(
      () => 0,
      () => readCostUsd(this.#open()),
    );
  }

  info(): SessionInfo {
    const db = this.#open();
    return toSessionInfo(readMeta(db, this.path), this.costUsd(), readLastModel(db));
  }

  lastSequence(): number {
    return this.#tolerant(
      () => 0,
      () => {
        const row = this.#open().prepare("SELECT coalesce(max(sequence), 0) AS s FROM events").get() as {
          s: number;
        };
        return Number(row.s);
      },
    );
  }

  eventCount(): number {
    return this.#tolerant(
      () => 0,
      () => Number((this.#open().prepare("SELECT count(*) AS n FROM events").get() as { n: number }).n),
    );
  }

  #eventQuery(range: EventRange): { stmt: StatementSync; params: (number | string)[] } {
    const where: string[] = [];
    const params: (number | string)[] = [];
    const after = bound(range.afterSequence, "afterSequence");
    const through = bound(range.throughSequence, "throughSequence");
    if (after !== undefined) {
      where.push("sequence > ?");
      params.push(after);
    }
    if (through !== undefined) {
      where.push("sequence <= ?");
      params.push(through);
    }
    if (range.kinds !== undefined) {
      if (range.kinds.length === 0) where.push("0");
      else {
        where.push(`kind IN (${range.kinds.map(() => "?").join(", ")})`);
        for (const kind of range.kinds) params.push(eventKindText(kind));
      }
    }
    const sql = `SELECT * FROM events${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY sequence`;
    return { stmt: this.#open().prepare(sql), params };
  }

  /**
   * Streams events in sequence order, one row at a time: replaying 10,000 events never
   * holds more than the current one. The stream reads one consistent snapshot; events
   * appended while it runs are picked up by the next call (use afterSequence).
   */
  *events(range: EventRange = {}): Generator<StoredEvent, void, undefined> {
    const query = this.#tolerant<{ stmt: StatementSync; params: (number | string)[] } | undefined>(
      () => undefined,
      () => this.#eventQuery(range),
    );
    if (!query) return;
    const { stmt, params } = query;
    for (const row of stmt.iterate(...params)) {
      yield toStoredEvent(row as unknown as EventRow);
    }
  }

  /** The whole range at once, for callers that do want it in memory. */
  readEvents(range: EventRange = {}): StoredEvent[] {
    return this.#tolerant(
      () => [],
      () => {
        const { stmt, params } = this.#eventQuery(range);
        return stmt.all(...params).map((row) => toStoredEvent(row as unknown as EventRow));
      },
    );
  }

  event(sequence: number): StoredEvent | undefined {
    const row = this.#open().prepare("SELECT * FROM events WHERE sequence = ?").get(sequence);
    return row === undefined ? undefined : toStoredEvent(row as unknown as EventRow);
  }

  /** The producer manifest: every (category, name, version) that ever wrote here, in first-seen order. */
  producers(): ProducerRecord[] {
    const db = this.#open();
    const rows = this.#tolerant(
      // The manifest is derived from events, so a lost producers table is rebuilt from them.
      () =>
        this.#tolerant(
          () => [],
          () =>
            db
              .prepare(
                `SELECT producer_category AS category, producer_name AS name, producer_version AS version,
                        min(sequence) AS first_seen_sequence
                 FROM events GROUP BY producer_category, producer_name, producer_version
                 ORDER BY first_seen_sequence, category, name, version`,
              )
              .all(),
        ),
      () => db.prepare("SELECT * FROM producers ORDER BY first_seen_sequence, category, name, version").all(),
    ) as { category: string; name: string; version: string; first_seen_sequence: number }[];
    return rows.map((r) => ({
      category: parsePluginCategory(r.category),
      categoryText: r.category,
      name: r.name,
      version: r.version,
      firstSeenSequence: Number(r.first_seen_sequence),
    }));
  }

  /**
   * What is missing to re-render this session: the producers that wrote to it and are
   * not in `installed`, matched on exact (category, name, version) — replay runs the
   * very build that wrote an event.
   */
  missingProducers(
    installed: Iterable<ProducerIdentity>,
    options: MissingProducersOptions = {},
  ): ProducerRecord[] {
    const have = new Set<string>();
    for (const p of installed) have.add(producerKey(p));
    return this.producers().filter((p) => {
      if (!options.includeKernel && p.category === CATEGORY_KERNEL) return false;
      if (p.category === 0) return true; // a category this build cannot name
      return !have.has(producerKey(p));
    });
  }

  costLedger(): CostLedgerRow[] {
    const rows = this.#tolerant(
      () => [],
      () => this.#open().prepare("SELECT * FROM cost_ledger ORDER BY sequence").all(),
    ) as Record<string, number | string>[];
    return rows.map((r) => ({
      sequence: Number(r.sequence),
      eventSequence: Number(r.event_sequence),
      providerName: String(r.provider_name),
      modelId: String(r.model_id),
      inputTokens: Number(r.input_tokens),
      outputTokens: Number(r.output_tokens),
      cacheWriteTokens: Number(r.cache_write_tokens),
      cacheReadTokens: Number(r.cache_read_tokens),
      costUsd: Number(r.cost_usd),
    }));
  }

  /** Plan items in sequence order, optionally only those with one decision ("every call this session denied"). */
  planItems(filter: { readonly decision?: PlanDecision } = {}): PlanItemRow[] {
    const db = this.#open();
    const rows = this.#tolerant(
      () => [],
      () =>
        filter.decision === undefined
          ? db.prepare("SELECT * FROM plan_items ORDER BY sequence").all()
          : db
              .prepare("SELECT * FROM plan_items WHERE decision = ? ORDER BY sequence")
              .all(planDecisionText(filter.decision)),
    ) as Record<string, number | string>[];
    return rows.map((r) => ({
      sequence: Number(r.sequence),
      eventSequence: Number(r.event_sequence),
      turnId: String(r.turn_id),
      toolCallId: String(r.tool_call_id),
      providerName: String(r.provider_name),
      toolName: String(r.tool_name),
      decision: parsePlanDecision(String(r.decision)),
      decisionText: String(r.decision),
      decidedBy: String(r.decided_by),
    }));
  }

  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/**
 * Opens a session for reading: integrity check (salvage on failure), upgrade of an
 * older file, refusal of a newer one, then a read-only connection.
 */
export function openSessionReader(sessionId: string, options: StateOptions = {}): SessionReader {
  const path = sessionFilePath(resolveSessionsDir(options.dir), sessionId);
  const opened = openSessionFile(path, sessionId, "read", {
    log: options.log ?? stderrLogger,
    busyTimeoutMs: options.busyTimeoutMs,
  });
  return new SessionReader(opened.db, sessionId, path, opened.migrations, opened.recovery);
}

/** Opens, streams every event in sequence order (within `range`), and closes — even on an early break. */
export function* replaySession(
  sessionId: string,
  options: StateOptions & EventRange = {},
): Generator<StoredEvent, void, undefined> {
  const reader = openSessionReader(sessionId, options);
  try {
    yield* reader.events(options);
  } finally {
    reader.close();
  }
}
