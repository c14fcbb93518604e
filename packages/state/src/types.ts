// Plain records the state backend takes and returns.

import type { PluginCategory } from "@pluggableharness/protocol/common";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlanDecision } from "@pluggableharness/protocol/plan";
import type { SessionStatus } from "@pluggableharness/protocol/session";
import type { StateLogger } from "./log.ts";
import type { Durability } from "./sqlite.ts";

/** The part of a ProducerRef a session file records. A ProducerRef satisfies it as is. */
export interface ProducerIdentity {
  readonly category: PluginCategory;
  readonly name: string;
  readonly version: string;
}

/** One cost_ledger row: the kernel-computed price of one usage report. */
export interface CostEntry {
  readonly providerName: string;
  readonly modelId: string;
  readonly inputTokens: number | bigint;
  readonly outputTokens: number | bigint;
  readonly cacheWriteTokens?: number | bigint;
  readonly cacheReadTokens?: number | bigint;
  readonly costUsd: number;
}

/** One plan_items row: a plan item as decided at plan-ready. */
export interface PlanItemEntry {
  readonly turnId: string;
  readonly toolCallId: string;
  readonly providerName: string;
  readonly toolName: string;
  /** ALLOW, ASK or DENY. */
  readonly decision: PlanDecision;
  /** Policy rule name, or the hook subscriber that decided. */
  readonly decidedBy: string;
}

/** An event to append. The writer assigns its id and sequence. */
export interface NewEvent {
  readonly kind: EventKind;
  /** Who produced it: the calling plugin for Emit, the kernel for its own kinds, the failing subscriber for hook_error. */
  readonly producer: ProducerIdentity;
  /** Version of the payload's event package: "1" for event.v1. */
  readonly schemaVersion: string;
  /** The encoded event payload; stored verbatim, never inspected. */
  readonly payload: Uint8Array;
  /** Wall-clock time for display; defaults to now. Never used for ordering. */
  readonly timestamp?: Date;
  /** Ledger rows carried by this event (kind MESSAGE only), written in the same transaction. */
  readonly costs?: readonly CostEntry[];
  /** Plan items carried by this event (kind PLAN only), written in the same transaction. */
  readonly planItems?: readonly PlanItemEntry[];
}

/** What an append returns — the same pair EmitResult carries. */
export interface AppendedEvent {
  /** ULID, stable and storage-independent. */
  readonly id: string;
  /** The ordering authority. */
  readonly sequence: number;
  readonly timestamp: string;
}

/** One event as replay yields it. */
export interface StoredEvent {
  readonly sequence: number;
  readonly id: string;
  /** ISO-8601, display only. */
  readonly timestamp: string;
  /** UNSPECIFIED when the file holds a kind this build does not know (see kindText). */
  readonly kind: EventKind;
  readonly kindText: string;
  /** category, name and version as recorded (a ProducerRef's source and protocol_version are not stored). */
  readonly producer: ProducerIdentity;
  readonly schemaVersion: string;
  readonly payload: Uint8Array;
}

/** The session_meta row. */
export interface SessionMeta {
  readonly sessionId: string;
  /** Absent for a root session. */
  readonly parentSessionId?: string;
  readonly profile: string;
  readonly status: SessionStatus;
  readonly statusText: string;
  readonly depth: number;
  readonly startedAt: string;
  /** Absent while running. */
  readonly endedAt?: string;
  /** Absolute directory the session works in; absent in files written before schema 3. */
  readonly workingDirectory?: string;
  /** What the session is about: its first prompt, trimmed to one line (absent until then). */
  readonly title?: string;
  /** The operator's model choice (/model) as "provider/model"; absent when none is set. */
  readonly modelOverride?: string;
}

export interface ProducerRecord extends ProducerIdentity {
  readonly categoryText: string;
  readonly firstSeenSequence: number;
}

export interface CostLedgerRow {
  readonly sequence: number;
  readonly eventSequence: number;
  readonly providerName: string;
  readonly modelId: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheReadTokens: number;
  readonly costUsd: number;
}

export interface PlanItemRow {
  readonly sequence: number;
  readonly eventSequence: number;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly providerName: string;
  readonly toolName: string;
  readonly decision: PlanDecision;
  readonly decisionText: string;
  readonly decidedBy: string;
}

export interface StateOptions {
  /** Sessions directory; defaults to $XDG_STATE_HOME/agent/sessions. */
  readonly dir?: string;
  /** Receives recoveries, unreadable files and upgrades; defaults to stderr. */
  readonly log?: StateLogger;
  readonly busyTimeoutMs?: number;
}

export interface WriterOptions extends StateOptions {
  /**
   * "full" (default): every commit is fsynced, so an acknowledged append survives power
   * loss too. "normal": survives a process crash but the last commits may roll back on
   * power loss; for tests and bulk imports.
   */
  readonly durability?: Durability;
}

export interface NewSession {
  /** Defaults to a fresh ULID. */
  readonly sessionId?: string;
  /** Absent for a root session. */
  readonly parentSessionId?: string;
  readonly profile: string;
  /** 0 for a root session, parent depth + 1 for a sub-agent. */
  readonly depth: number;
  /** Defaults to now. */
  readonly startedAt?: Date;
  /** Absolute directory the session works in. */
  readonly workingDirectory?: string;
}
