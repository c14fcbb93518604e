// session_meta: reading the row, the status lifecycle, and the SessionInfo read model.

import type { DatabaseSync } from "node:sqlite";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import {
  parseSessionStatus,
  STATUS_CANCELLED,
  STATUS_COMPLETED,
  STATUS_ERROR_MAX_BUDGET_USD,
  STATUS_ERROR_MAX_TURNS,
  STATUS_ERROR_MAX_WALL_CLOCK,
  STATUS_FAILED,
  STATUS_RUNNING,
  sessionStatusText,
} from "./codes.ts";
import { InvalidStatusTransitionError, NotASessionFileError } from "./errors.ts";
import type { SessionMeta } from "./types.ts";

interface MetaRow {
  session_id: string;
  parent_session_id: string | null;
  profile: string;
  status: string;
  depth: number;
  started_at: string;
  ended_at: string | null;
  working_directory?: string | null;
  title?: string | null;
  model_override?: string | null;
}

export function readMeta(db: DatabaseSync, path: string): SessionMeta {
  const row = db.prepare("SELECT * FROM session_meta").get() as MetaRow | undefined;
  if (row === undefined) throw new NotASessionFileError(path, "session_meta has no row");
  return {
    sessionId: row.session_id,
    ...(row.parent_session_id === null ? {} : { parentSessionId: row.parent_session_id }),
    profile: row.profile,
    status: parseSessionStatus(row.status),
    statusText: row.status,
    depth: Number(row.depth),
    startedAt: row.started_at,
    ...(row.ended_at === null ? {} : { endedAt: row.ended_at }),
    ...(typeof row.working_directory === "string" ? { workingDirectory: row.working_directory } : {}),
    ...(typeof row.title === "string" ? { title: row.title } : {}),
    ...(typeof row.model_override === "string" ? { modelOverride: row.model_override } : {}),
  };
}

/** The model that served the latest billed call, as "provider/model" ("" before the first). */
export function readLastModel(db: DatabaseSync): string {
  try {
    const row = db
      .prepare("SELECT provider_name, model_id FROM cost_ledger ORDER BY sequence DESC LIMIT 1")
      .get() as { provider_name: string; model_id: string } | undefined;
    return row ? `${row.provider_name}/${row.model_id}` : "";
  } catch {
    return ""; // a file that lost its ledger still lists
  }
}

/** A title from a prompt: its first non-empty line, whitespace collapsed, cut to 80 characters. */
export function titleFromPrompt(prompt: string): string {
  const first = prompt
    .split("\n")
    .map((l) => l.replace(/\s+/g, " ").trim())
    .find((l) => l.length > 0);
  if (first === undefined) return "";
  const chars = [...first];
  return chars.length > 80 ? `${chars.slice(0, 79).join("")}…` : first;
}

/** SUM(cost_ledger.cost_usd), computed at read time, never cached. */
export function readCostUsd(db: DatabaseSync): number {
  let row: { total: number };
  try {
    row = db.prepare("SELECT coalesce(sum(cost_usd), 0) AS total FROM cost_ledger").get() as {
      total: number;
    };
  } catch (err) {
    // A file that lost its ledger still lists and shows; its reader reports the damage.
    if (/no such table: cost_ledger/.test((err as Error).message)) return 0;
    throw err;
  }
  return Number(row.total);
}

function timestamp(iso: string): Timestamp {
  const ms = Date.parse(iso);
  const seconds = Math.floor(ms / 1000);
  return {
    $typeName: "google.protobuf.Timestamp",
    seconds: BigInt(seconds),
    nanos: (ms - seconds * 1000) * 1_000_000,
  };
}

/**
 * The row as session.v1.SessionInfo. protobuf-es messages are plain objects, so it is
 * built as a typed literal: the write and list paths then load no protobuf runtime.
 */
export function toSessionInfo(meta: SessionMeta, costUsd: number, lastModel = ""): SessionInfo {
  const info: SessionInfo = {
    $typeName: "pluggableharness.session.v1.SessionInfo",
    sessionId: meta.sessionId,
    parentSessionId: meta.parentSessionId ?? "",
    profile: meta.profile,
    status: meta.status,
    depth: meta.depth,
    startedAt: timestamp(meta.startedAt),
    costUsd,
    workingDirectory: meta.workingDirectory ?? "",
    title: meta.title ?? "",
    // The operator's choice is what the session uses (and a resume restores).
    model: meta.modelOverride ?? lastModel,
    modelOverridden: meta.modelOverride !== undefined,
  };
  if (meta.endedAt !== undefined) info.endedAt = timestamp(meta.endedAt);
  return info;
}

/** Bound-exhausted sessions are replay-only: their status never changes again. */
export const REPLAY_ONLY_STATUSES: ReadonlySet<SessionStatus> = new Set([
  STATUS_ERROR_MAX_TURNS,
  STATUS_ERROR_MAX_BUDGET_USD,
  STATUS_ERROR_MAX_WALL_CLOCK,
]);

/**
 * Terminal statuses a new message may re-open to RUNNING. FAILED is one of them, unlike
 * in the spec: a failed run (a model that kept failing, a tripped breaker) leaves a
 * consistent conversation, and the operator must be able to go on from it
 * (docs/decisions/reliability.md).
 */
export const REOPENABLE_STATUSES: ReadonlySet<SessionStatus> = new Set([
  STATUS_COMPLETED,
  STATUS_CANCELLED,
  STATUS_FAILED,
]);

/**
 * Throws InvalidStatusTransitionError unless `from -> to` is allowed:
 * RUNNING -> any terminal status; COMPLETED/CANCELLED/FAILED -> RUNNING (a re-open);
 * nothing else, and never anything out of a replay-only status.
 */
export function checkStatusTransition(from: SessionStatus, fromText: string, to: SessionStatus): void {
  const toText = sessionStatusText(to);
  if (REPLAY_ONLY_STATUSES.has(from)) {
    throw new InvalidStatusTransitionError(
      fromText,
      toText,
      true,
      `"${fromText}" is terminal and replay-only`,
    );
  }
  if (from === STATUS_RUNNING) {
    if (to === STATUS_RUNNING) {
      throw new InvalidStatusTransitionError(fromText, toText, false, "the session is already running");
    }
    return;
  }
  if (REOPENABLE_STATUSES.has(from)) {
    if (to === STATUS_RUNNING) return;
    throw new InvalidStatusTransitionError(
      fromText,
      toText,
      false,
      "an ended session must be re-opened to running before it can end again",
    );
  }
  throw new InvalidStatusTransitionError(
    fromText,
    toText,
    false,
    `"${fromText}" is not a status this kernel knows`,
  );
}
