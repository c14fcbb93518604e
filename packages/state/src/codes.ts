// Text forms of enum values in TEXT columns. The rule (recorded in docs/decisions.md):
// the enum value's name without its shared prefix, in lower snake case —
// EVENT_KIND_TOOL_RESULT -> "tool_result", SESSION_STATUS_ERROR_MAX_TURNS ->
// "error_max_turns", PLUGIN_CATEGORY_MODEL -> "model", PLAN_DECISION_ALLOW -> "allow".
// The forms are derived from the generated descriptors so a new enum value is storable
// at once; test/codes.test.ts pins every form, so a rename cannot silently change what
// is written to disk. The zero (UNSPECIFIED) value never has a text form.

import type { DescEnum } from "@bufbuild/protobuf";
import { PluginCategory, PluginCategorySchema } from "@pluggableharness/protocol/common";
import { EventKind, EventKindSchema } from "@pluggableharness/protocol/kernel";
import { PlanDecision, PlanDecisionSchema } from "@pluggableharness/protocol/plan";
import { SessionStatus, SessionStatusSchema } from "@pluggableharness/protocol/session";
import { InvalidArgumentError, InvalidEventKindError } from "./errors.ts";

interface TextTable {
  readonly toText: ReadonlyMap<number, string>;
  readonly fromText: ReadonlyMap<string, number>;
}

function tableOf(desc: DescEnum): TextTable {
  const toText = new Map<number, string>();
  const fromText = new Map<string, number>();
  for (const value of desc.values) {
    if (value.number === 0) continue;
    const text = value.localName.toLowerCase();
    toText.set(value.number, text);
    fromText.set(text, value.number);
  }
  return { toText, fromText };
}

const kinds = tableOf(EventKindSchema);
const statuses = tableOf(SessionStatusSchema);
const categories = tableOf(PluginCategorySchema);
const decisions = tableOf(PlanDecisionSchema);

/** Every EventKind a session file may hold (all values except UNSPECIFIED). */
export const STORABLE_EVENT_KINDS: readonly EventKind[] = [...kinds.toText.keys()] as EventKind[];

export function eventKindText(kind: EventKind): string {
  const text = kinds.toText.get(kind);
  if (text === undefined) throw new InvalidEventKindError(kind);
  return text;
}

/** EventKind of a stored text form; UNSPECIFIED for a form this build does not know. */
export function parseEventKind(text: string): EventKind {
  return (kinds.fromText.get(text) ?? EventKind.UNSPECIFIED) as EventKind;
}

export function sessionStatusText(status: SessionStatus): string {
  const text = statuses.toText.get(status);
  if (text === undefined)
    throw new InvalidArgumentError(`session status ${status} is not a storable SessionStatus`);
  return text;
}

export function parseSessionStatus(text: string): SessionStatus {
  return (statuses.fromText.get(text) ?? SessionStatus.UNSPECIFIED) as SessionStatus;
}

export function pluginCategoryText(category: PluginCategory): string {
  const text = categories.toText.get(category);
  if (text === undefined) {
    throw new InvalidArgumentError(`producer category ${category} is not a storable PluginCategory`);
  }
  return text;
}

export function parsePluginCategory(text: string): PluginCategory {
  return (categories.fromText.get(text) ?? PluginCategory.UNSPECIFIED) as PluginCategory;
}

/**
 * plan_items.decision holds the decision policy (or a hook) reached at plan-ready:
 * allow, ask or deny. PENDING is a transient in-memory state and is never stored.
 */
export function planDecisionText(decision: PlanDecision): string {
  if (decision === PlanDecision.PENDING) {
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
  return (decisions.fromText.get(text) ?? PlanDecision.UNSPECIFIED) as PlanDecision;
}
