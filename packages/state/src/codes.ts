// Text forms of enum values in TEXT columns. The rule (docs/decisions/sessions-and-state.md):
// the enum value's name without its shared prefix, in lower snake case —
// EVENT_KIND_TOOL_RESULT -> "tool_result", SESSION_STATUS_ERROR_MAX_TURNS ->
// "error_max_turns", PLUGIN_CATEGORY_MODEL -> "model", PLAN_DECISION_ALLOW -> "allow".
//
// The tables are written out rather than derived from the generated descriptors: what
// is on disk must never change because a proto value was renamed, and the write path
// stays free of the protobuf runtime (a crash-recovering kernel or a CLI listing starts
// faster; at run time this package needs no protobuf code at all). test/codes.test.ts checks every table against the generated enums, so a new
// enum value fails the suite until it gets its text form here. UNSPECIFIED (0) never has one.

import type { PluginCategory } from "@pluggableharness/protocol/common";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlanDecision } from "@pluggableharness/protocol/plan";
import type { SessionStatus } from "@pluggableharness/protocol/session";
import { InvalidArgumentError, InvalidEventKindError } from "./errors.ts";

// Wire numbers of kernel.v1.EventKind.
export const EVENT_KIND_MESSAGE = 1 as EventKind;
export const EVENT_KIND_PLAN = 4 as EventKind;

const EVENT_KINDS: readonly [number, string][] = [
  [1, "message"],
  [2, "tool_call"],
  [3, "tool_result"],
  [4, "plan"],
  [5, "apply"],
  [6, "context_contribution"],
  [7, "memory_write"],
  [8, "memory_update"],
  [9, "memory_delete"],
  [10, "hook_error"],
  [11, "compaction"],
  [12, "session_setting"],
];

// Wire numbers of session.v1.SessionStatus.
export const STATUS_RUNNING = 1 as SessionStatus;
export const STATUS_COMPLETED = 2 as SessionStatus;
export const STATUS_ERROR_MAX_TURNS = 3 as SessionStatus;
export const STATUS_ERROR_MAX_BUDGET_USD = 4 as SessionStatus;
export const STATUS_ERROR_MAX_WALL_CLOCK = 5 as SessionStatus;
export const STATUS_CANCELLED = 6 as SessionStatus;
export const STATUS_FAILED = 7 as SessionStatus;
const SESSION_STATUSES: readonly [number, string][] = [
  [1, "running"],
  [2, "completed"],
  [3, "error_max_turns"],
  [4, "error_max_budget_usd"],
  [5, "error_max_wall_clock"],
  [6, "cancelled"],
  [7, "failed"],
];

// Wire numbers of common.v1.PluginCategory.
export const CATEGORY_KERNEL = 7 as PluginCategory;
const PLUGIN_CATEGORIES: readonly [number, string][] = [
  [1, "model"],
  [2, "tool"],
  [3, "context"],
  [4, "memory"],
  [5, "frontend"],
  [6, "widget"],
  [7, "kernel"],
];

// Wire numbers of plan.v1.PlanDecision. PENDING (1) is transient and never stored.
const PLAN_DECISION_PENDING = 1;
const PLAN_DECISIONS: readonly [number, string][] = [
  [2, "allow"],
  [3, "ask"],
  [4, "deny"],
];

interface TextTable {
  readonly toText: ReadonlyMap<number, string>;
  readonly fromText: ReadonlyMap<string, number>;
}

function table(entries: readonly [number, string][]): TextTable {
  return { toText: new Map(entries), fromText: new Map(entries.map(([n, t]) => [t, n])) };
}

const kinds = table(EVENT_KINDS);
const statuses = table(SESSION_STATUSES);
const categories = table(PLUGIN_CATEGORIES);
const decisions = table(PLAN_DECISIONS);

/** Every EventKind a session file may hold (all values except UNSPECIFIED). */
export const STORABLE_EVENT_KINDS: readonly EventKind[] = EVENT_KINDS.map(([n]) => n as EventKind);

export function eventKindText(kind: EventKind): string {
  const text = kinds.toText.get(kind);
  if (text === undefined) throw new InvalidEventKindError(kind);
  return text;
}

/** EventKind of a stored text form; UNSPECIFIED (0) for a form this build does not know. */
export function parseEventKind(text: string): EventKind {
  return (kinds.fromText.get(text) ?? 0) as EventKind;
}

export function sessionStatusText(status: SessionStatus): string {
  const text = statuses.toText.get(status);
  if (text === undefined)
    throw new InvalidArgumentError(`session status ${status} is not a storable SessionStatus`);
  return text;
}

export function parseSessionStatus(text: string): SessionStatus {
  return (statuses.fromText.get(text) ?? 0) as SessionStatus;
}

export function pluginCategoryText(category: PluginCategory): string {
  const text = categories.toText.get(category);
  if (text === undefined) {
    throw new InvalidArgumentError(`producer category ${category} is not a storable PluginCategory`);
  }
  return text;
}

export function parsePluginCategory(text: string): PluginCategory {
  return (categories.fromText.get(text) ?? 0) as PluginCategory;
}

/**
 * plan_items.decision holds the decision policy (or a hook) reached at plan-ready:
 * allow, ask or deny. PENDING is a transient in-memory state and is never stored.
 */
export function planDecisionText(decision: PlanDecision): string {
  if (decision === PLAN_DECISION_PENDING) {
    throw new InvalidArgumentError(
      "plan item decision PENDING is not stored; record plan items once policy decided them",
    );
  }
  const text = decisions.toText.get(decision);
  if (text === undefined)
    throw new InvalidArgumentError(`plan decision ${decision} is not a storable PlanDecision`);
  return text;
}

export function parsePlanDecision(text: string): PlanDecision {
  return (decisions.fromText.get(text) ?? 0) as PlanDecision;
}
