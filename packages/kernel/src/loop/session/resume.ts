// The conversation a session file holds, made valid for every vendor however the kernel
// that wrote it stopped. A kernel killed mid-turn can leave an assistant message whose
// tool_use blocks have no tool_result (the call was running, or its result was recorded
// but the message carrying it to the model was not): Anthropic and OpenAI refuse such a
// history. Rebuilding gives every such call exactly one result, right after it:
//
// - a result recorded in a tool_result event (the call finished, only the delivery was
//   lost): that result, as the model would have seen it;
// - otherwise an `interrupted:` error saying the agent stopped, and, for a resource call,
//   whether it may have taken effect (allowed or asked with no recorded outcome: may have;
//   denied, or never planned: did not).
//
// When the calls left open are at the end of the file, resuming also persists the repair
// once (repairInterrupted): a cancelled tool_result event for each call without one, an
// apply event for plan items without an outcome (INTERRUPTED when the item may have been
// applied), and the user message carrying the results, so a second resume finds nothing
// to repair and the audit trail says what is unknown.
import { create, fromBinary, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { type ContentBlock, type Message, Role, type ToolUseBlock } from "@pluggableharness/protocol/content";
import {
  ApplyEventSchema,
  CompactionEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  type ToolCallEvent,
  ToolCallEventSchema,
  type ToolResultEvent,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import {
  ApplyItemResultSchema,
  ApplyOutcome,
  ApplyResultSchema,
  PlanDecision,
  type PlanItem,
} from "@pluggableharness/protocol/plan";
import { ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import type { StoredEvent } from "@pluggableharness/state";
import { budgetToolInputs } from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import { type CallRecord, type CallResult, resultText, textBlock, toolResultBlock } from "../gate/call.ts";
import type { ToolRegistry } from "../tool-registry.ts";
import { outsideConversation } from "../turn/records.ts";
import { type ToolExecution, toolError } from "../turn/tool-exec.ts";
import type { SessionLog } from "./session-log.ts";

/** What answering a stopped kernel's open calls writes through (the resumed session's parts). */
export interface RepairTarget {
  readonly deps: Pick<LoopDeps, "kernelProducer">;
  readonly log: Pick<SessionLog, "persistBatch" | "appendUserMessage">;
  readonly tools: ToolRegistry;
}

/** The synthetic reason of the user message a resume adds to answer interrupted calls. */
export const INTERRUPTED_REASON = "interrupted";

/** A tool_use of the last assistant message that no message answers. */
export interface DanglingCall {
  readonly turnId: string;
  readonly use: ToolUseBlock;
  /** Its tool_call event, when the kernel got that far. */
  readonly call?: ToolCallEvent;
  /** Its recorded result, when the call finished before the kernel stopped. */
  readonly result?: ToolResultEvent;
  /** Its plan item, when it was a resource call that reached plan-ready. */
  readonly item?: PlanItem;
  /** Whether an apply event recorded its item's outcome. */
  readonly applied: boolean;
}

export interface RebuiltConversation {
  readonly history: Message[];
  /** Calls of the file's last assistant message left without a result (repair them once). */
  readonly dangling: readonly DanglingCall[];
}

/** What the model is told about an interrupted call; whether it may have taken effect. */
export function interruptedResult(d: DanglingCall): { text: string; mayHaveApplied: boolean } {
  const resource = d.call?.kind === ToolKind.RESOURCE || d.item !== undefined;
  if (!resource) {
    return {
      text: "interrupted: the agent stopped before this call finished, and it has no result. Run it again if you still need it.",
      mayHaveApplied: false,
    };
  }
  if (!d.item) {
    return {
      text: "interrupted: the agent stopped before this call was approved; it was not applied.",
      mayHaveApplied: false,
    };
  }
  if (d.item.decision === PlanDecision.DENY) {
    return {
      text: `interrupted: the agent stopped before this call's result was delivered. It was denied${d.item.reason ? ` (${d.item.reason})` : ""} and was not applied.`,
      mayHaveApplied: false,
    };
  }
  return {
    text: "interrupted: the agent stopped while this call was being approved or applied, and no outcome was recorded: it may or may not have taken effect. Check the current state before relying on it or running it again.",
    mayHaveApplied: true,
  };
}

/** A one-text tool_result block. */
function resultBlock(toolUseId: string, text: string, isError: boolean): ContentBlock {
  return toolResultBlock(toolUseId, [textBlock(text)], isError);
}

/** The recorded result of a call, as the model would have been sent it. */
function recordedBlock(
  d: DanglingCall,
  result: ToolResultEvent,
  tools: ToolRegistry | undefined,
): ContentBlock {
  const outcome: CallResult["outcome"] =
    result.outcome.case === "result"
      ? { kind: "result", payload: (result.outcome.value.payload ?? {}) as JsonObject }
      : {
          kind: "error",
          error: result.outcome.value ?? toolError(ToolErrorCategory.UNKNOWN, "no outcome was recorded"),
        };
  const status: CallResult["status"] = result.denied
    ? "denied"
    : outcome.kind === "result"
      ? "succeeded"
      : outcome.error.category === ToolErrorCategory.CANCELLED
        ? "cancelled"
        : "failed";
  const tool = tools?.get(d.use.name);
  const record: CallRecord = {
    index: 0,
    block: d.use,
    ...(tool ? { tool } : {}),
    args: d.use.input ?? {},
    resultPersisted: true,
    hookable: false,
    result: {
      status,
      outcome,
      denied: result.denied,
      execution: { output: result.output } as unknown as ToolExecution,
    },
  };
  const { content, isError } = resultText(record, false);
  return resultBlock(d.use.id, content, isError);
}

/** The one result block for a dangling call: its recorded result, else the interrupted error. */
export function danglingResultBlock(d: DanglingCall, tools?: ToolRegistry): ContentBlock {
  if (d.result) return recordedBlock(d, d.result, tools);
  return resultBlock(d.use.id, interruptedResult(d).text, true);
}

/**
 * The conversation in a session file's events (kernel-written message events, records
 * of failed attempts and turns left out), with every tool_use answered exactly once.
 */
export function rebuildConversation(
  events: Iterable<StoredEvent>,
  tools?: ToolRegistry,
): RebuiltConversation {
  const history: Message[] = [];
  const calls = new Map<string, ToolCallEvent>();
  const results = new Map<string, ToolResultEvent>();
  const items = new Map<string, PlanItem>();
  const applied = new Set<string>();
  let open: { turnId: string; uses: ToolUseBlock[] } | undefined;

  const danglingOf = (turnId: string, uses: readonly ToolUseBlock[]): DanglingCall[] =>
    uses.map((use) => {
      const call = calls.get(use.id);
      const result = results.get(use.id);
      const item = items.get(use.id);
      return {
        turnId,
        use,
        ...(call ? { call } : {}),
        ...(result ? { result } : {}),
        ...(item ? { item } : {}),
        applied: applied.has(use.id),
      };
    });

  for (const e of events) {
    try {
      if (!absorb(e)) continue;
    } catch {}
  }
  return { history, dangling: open ? danglingOf(open.turnId, open.uses) : [] };

  /** Takes one event in; true when it was a conversation message. */
  function absorb(e: StoredEvent): boolean {
    switch (e.kind) {
      case EventKind.TOOL_CALL: {
        const c = fromBinary(ToolCallEventSchema, e.payload);
        if (c.call) calls.set(c.call.id, c);
        return false;
      }
      case EventKind.TOOL_RESULT: {
        const r = fromBinary(ToolResultEventSchema, e.payload);
        if (!results.has(r.toolCallId)) results.set(r.toolCallId, r);
        return false;
      }
      case EventKind.PLAN: {
        for (const item of fromBinary(PlanEventSchema, e.payload).plan?.items ?? [])
          items.set(item.toolCallId, item);
        return false;
      }
      case EventKind.APPLY: {
        for (const a of fromBinary(ApplyEventSchema, e.payload).apply?.items ?? []) applied.add(a.toolCallId);
        return false;
      }
      case EventKind.COMPACTION: {
        // A compactor's rewrite: the conversation from here on is the one it holds.
        if (e.producer.category !== PluginCategory.KERNEL) return false;
        const c = fromBinary(CompactionEventSchema, e.payload);
        history.length = 0;
        history.push(...c.history.map(budgetToolInputs));
        open = undefined;
        const last = c.history.at(-1);
        const uses = last?.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : [])) ?? [];
        if (last?.role === Role.ASSISTANT && uses.length > 0) open = { turnId: c.turnId, uses };
        return true;
      }
      case EventKind.MESSAGE:
        break;
      default:
        return false;
    }
    if (e.producer.category !== PluginCategory.KERNEL) return false;
    const m = fromBinary(MessageEventSchema, e.payload);
    if (!m.message || outsideConversation(m.syntheticReason)) return false;
    let message = m.message;
    if (open) {
      const answered = new Set(
        message.role === Role.USER
          ? message.content.flatMap((b) => (b.block.case === "toolResult" ? [b.block.value.toolUseId] : []))
          : [],
      );
      const missing = open.uses.filter((u) => !answered.has(u.id));
      if (missing.length > 0) {
        const blocks = danglingOf(open.turnId, missing).map((d) => danglingResultBlock(d, tools));
        if (message.role === Role.USER) {
          // Results first: vendors want a call's result at the start of the next user turn.
          message = { ...message, content: [...blocks, ...message.content] };
        } else {
          history.push({
            $typeName: "pluggableharness.content.v1.Message",
            role: Role.USER,
            content: blocks,
            id: "",
          });
        }
      }
      open = undefined;
    }
    // Huge tool inputs shortened as the live session shortened them (domain/model-budget.ts).
    history.push(budgetToolInputs(message));
    const uses = message.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : []));
    if (message.role === Role.ASSISTANT && uses.length > 0) open = { turnId: m.turnId, uses };
    return true;
  }
}

/**
 * Persists the answer to calls a stopped kernel left open at the end of the file: a
 * cancelled tool_result event for each one without a result, an apply event for plan
 * items without a recorded outcome, and the user message with one result per call.
 * Returns that message, which is appended to the session's history too.
 */
export function repairInterrupted(session: RepairTarget, dangling: readonly DanglingCall[]): Message {
  const deps = session.deps;
  const turnId = dangling[0]!.turnId;
  const events: Array<{ kind: EventKind; producer: typeof deps.kernelProducer; payload: Uint8Array }> = [];
  for (const d of dangling) {
    if (d.result) continue;
    const { text, mayHaveApplied } = interruptedResult(d);
    events.push({
      kind: EventKind.TOOL_RESULT,
      producer: deps.kernelProducer,
      payload: toBinary(
        ToolResultEventSchema,
        create(ToolResultEventSchema, {
          turnId: d.turnId,
          provider: d.call?.provider ?? d.item?.provider ?? "",
          toolCallId: d.use.id,
          toolName: d.call?.call?.toolName ?? d.item?.toolName ?? d.use.name,
          outcome: {
            case: "error",
            value: {
              category: ToolErrorCategory.CANCELLED,
              message: text,
              retryable: false,
              details: { interrupted: true, may_have_applied: mayHaveApplied },
            },
          },
          duration: durationFromMs(0),
        }),
      ),
    });
  }
  const unapplied = dangling.filter((d) => d.item && !d.applied);
  if (unapplied.length > 0) {
    const items = unapplied.map((d) => {
      const item = d.item!;
      const r = d.result;
      const outcome = r
        ? r.denied
          ? ApplyOutcome.DENIED
          : r.outcome.case === "result"
            ? ApplyOutcome.APPLIED
            : r.outcome.value?.category === ToolErrorCategory.CANCELLED
              ? ApplyOutcome.CANCELLED
              : ApplyOutcome.FAILED
        : item.decision === PlanDecision.DENY
          ? ApplyOutcome.DENIED
          : ApplyOutcome.INTERRUPTED;
      const error =
        r?.outcome.case === "error"
          ? r.outcome.value
          : outcome === ApplyOutcome.INTERRUPTED
            ? {
                category: ToolErrorCategory.CANCELLED,
                message: interruptedResult(d).text,
                retryable: false,
              }
            : undefined;
      return create(ApplyItemResultSchema, {
        planItemId: item.id,
        toolCallId: item.toolCallId,
        outcome,
        decision: item.decision,
        decidedBy: item.decidedBy,
        ...(error ? { error } : {}),
      });
    });
    events.push({
      kind: EventKind.APPLY,
      producer: deps.kernelProducer,
      payload: toBinary(
        ApplyEventSchema,
        create(ApplyEventSchema, { apply: create(ApplyResultSchema, { turnId, items }) }),
      ),
    });
  }
  if (events.length > 0) session.log.persistBatch(events);
  const content = dangling.map((d) => danglingResultBlock(d, session.tools));
  return session.log.appendUserMessage(turnId, content, INTERRUPTED_REASON);
}
