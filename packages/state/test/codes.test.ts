import type { DescEnum } from "@bufbuild/protobuf";
import { PluginCategory, PluginCategorySchema } from "@pluggableharness/protocol/common";
import { EventKind, EventKindSchema } from "@pluggableharness/protocol/kernel";
import { PlanDecision, PlanDecisionSchema } from "@pluggableharness/protocol/plan";
import { SessionStatus, SessionStatusSchema } from "@pluggableharness/protocol/session";
import { describe, expect, it } from "vitest";
import {
  eventKindText,
  InvalidArgumentError,
  InvalidEventKindError,
  parseEventKind,
  parsePlanDecision,
  parsePluginCategory,
  parseSessionStatus,
  planDecisionText,
  pluginCategoryText,
  STORABLE_EVENT_KINDS,
  sessionStatusText,
} from "../src/index.ts";

// The text written to disk is permanent: these tables pin every form.
const KINDS: [EventKind, string][] = [
  [EventKind.MESSAGE, "message"],
  [EventKind.TOOL_CALL, "tool_call"],
  [EventKind.TOOL_RESULT, "tool_result"],
  [EventKind.PLAN, "plan"],
  [EventKind.APPLY, "apply"],
  [EventKind.CONTEXT_CONTRIBUTION, "context_contribution"],
  [EventKind.MEMORY_WRITE, "memory_write"],
  [EventKind.MEMORY_UPDATE, "memory_update"],
  [EventKind.MEMORY_DELETE, "memory_delete"],
  [EventKind.HOOK_ERROR, "hook_error"],
  [EventKind.COMPACTION, "compaction"],
  [EventKind.SESSION_SETTING, "session_setting"],
];
const STATUSES: [SessionStatus, string][] = [
  [SessionStatus.RUNNING, "running"],
  [SessionStatus.COMPLETED, "completed"],
  [SessionStatus.ERROR_MAX_TURNS, "error_max_turns"],
  [SessionStatus.ERROR_MAX_BUDGET_USD, "error_max_budget_usd"],
  [SessionStatus.ERROR_MAX_WALL_CLOCK, "error_max_wall_clock"],
  [SessionStatus.CANCELLED, "cancelled"],
  [SessionStatus.FAILED, "failed"],
];
const CATEGORIES: [PluginCategory, string][] = [
  [PluginCategory.MODEL, "model"],
  [PluginCategory.TOOL, "tool"],
  [PluginCategory.CONTEXT, "context"],
  [PluginCategory.MEMORY, "memory"],
  [PluginCategory.FRONTEND, "frontend"],
  [PluginCategory.WIDGET, "widget"],
  [PluginCategory.KERNEL, "kernel"],
];

describe("enum text forms", () => {
  // The tables in src/codes.ts are written out by hand; every generated enum value must
  // have the form the naming rule gives it, so a value added to a proto fails here first.
  it("cover every generated enum value with the rule's text form", () => {
    const rule = (desc: DescEnum, toText: (n: never) => string, parse: (t: string) => number) => {
      for (const value of desc.values) {
        if (value.number === 0) continue;
        const text = value.localName.toLowerCase();
        if (desc === PlanDecisionSchema && value.number === PlanDecision.PENDING) continue;
        expect(toText(value.number as never), value.name).toBe(text);
        expect(parse(text), value.name).toBe(value.number);
      }
    };
    rule(EventKindSchema, eventKindText, parseEventKind);
    rule(SessionStatusSchema, sessionStatusText, parseSessionStatus);
    rule(PluginCategorySchema, pluginCategoryText, parsePluginCategory);
    rule(PlanDecisionSchema, planDecisionText, parsePlanDecision);
  });

  it("pins every event kind, and every kind but UNSPECIFIED is storable", () => {
    for (const [kind, text] of KINDS) {
      expect(eventKindText(kind)).toBe(text);
      expect(parseEventKind(text)).toBe(kind);
    }
    expect([...STORABLE_EVENT_KINDS].sort((a, b) => a - b)).toEqual(KINDS.map(([k]) => k));
  });

  it("rejects EVENT_KIND_UNSPECIFIED and unknown numbers with InvalidEventKindError", () => {
    expect(() => eventKindText(EventKind.UNSPECIFIED)).toThrow(InvalidEventKindError);
    expect(() => eventKindText(99 as EventKind)).toThrow(InvalidEventKindError);
    expect(parseEventKind("render")).toBe(EventKind.UNSPECIFIED);
  });

  it("pins session statuses, plugin categories and plan decisions", () => {
    for (const [status, text] of STATUSES) {
      expect(sessionStatusText(status)).toBe(text);
      expect(parseSessionStatus(text)).toBe(status);
    }
    for (const [category, text] of CATEGORIES) {
      expect(pluginCategoryText(category)).toBe(text);
      expect(parsePluginCategory(text)).toBe(category);
    }
    expect(planDecisionText(PlanDecision.ALLOW)).toBe("allow");
    expect(planDecisionText(PlanDecision.ASK)).toBe("ask");
    expect(planDecisionText(PlanDecision.DENY)).toBe("deny");
    expect(parsePlanDecision("deny")).toBe(PlanDecision.DENY);
  });

  it("refuses zero values and the transient PENDING decision", () => {
    expect(() => sessionStatusText(SessionStatus.UNSPECIFIED)).toThrow(InvalidArgumentError);
    expect(() => pluginCategoryText(PluginCategory.UNSPECIFIED)).toThrow(InvalidArgumentError);
    expect(() => planDecisionText(PlanDecision.UNSPECIFIED)).toThrow(InvalidArgumentError);
    expect(() => planDecisionText(PlanDecision.PENDING)).toThrow(/PENDING/);
  });
});
