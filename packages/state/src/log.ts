// The state backend reports recoveries, unreadable files and upgrades through a log
// callback. Recovery must never be silent, so without a callback it goes to stderr.

import type { RecoveryReport } from "./recovery-report.ts";

export type StateLogLevel = "info" | "warn" | "error";

export type StateLogCode =
  | "session_migrated"
  | "session_recovered"
  | "session_unreadable"
  | "integrity_check_failed"
  | "stale_lock_taken_over";

export interface StateLogEntry {
  readonly level: StateLogLevel;
  readonly code: StateLogCode;
  readonly message: string;
  readonly path: string;
  readonly sessionId?: string;
  readonly recovery?: RecoveryReport;
}

export type StateLogger = (entry: StateLogEntry) => void;

export const stderrLogger: StateLogger = (entry) => {
  process.stderr.write(`[state ${entry.level}] ${entry.code}: ${entry.message}\n`);
};
