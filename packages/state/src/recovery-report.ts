// What a salvage of a damaged session file reports, as plain data. A leaf: the state
// log carries the report, and the salvage (recover.ts) logs through it.

import type { SessionTable } from "./schema.ts";

export interface TableSalvage {
  /** Rows copied into the replacement file. */
  readonly recovered: number;
  /** Rows that were seen or probed but could not be read or stored. */
  readonly lost: number;
}

export interface RecoveryReport {
  readonly sessionId: string;
  /** The salvaged replacement, at the original name. */
  readonly path: string;
  /** Where the damaged original now lives. */
  readonly corruptPath: string;
  /** What integrity_check reported (first lines). */
  readonly integrityErrors: readonly string[];
  readonly tables: Readonly<Record<SessionTable, TableSalvage>>;
  /** cost_ledger/plan_items rows kept although the event they reference was lost. */
  readonly orphanedRows: number;
  readonly recoveredAt: string;
}
