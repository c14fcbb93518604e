// The turn's writes to the conversation: the assistant message before any tool runs, the
// tool results after the gate (step 15), the closing of a turn cut short, so every tool_use
// of a persisted message gets exactly one tool_result whatever happened, and a compaction's
// rewrite put in place. This module and the session log (a user message, as it is recorded)
// are the conversation's only writers (conversation.ts).
import { create } from "@bufbuild/protobuf";
import type { Message, ToolUseBlock } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { type AccumulatedCompletion, budgetToolInputs } from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import { type CallRecord, resultBlock } from "../gate/call.ts";
import { CallGate } from "../gate/gate.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import { completionEventFields } from "./completion-event.ts";
import type { ModelCallState, ResolvedCandidate } from "./model-call.ts";
import { toolError } from "./tool-exec.ts";

/** The assistant message of a turn, from its persisting until its results are appended. */
export interface TurnAnswer {
  readonly message: Message;
  /** The message as models are sent it from now on: huge tool inputs shortened (domain/model-budget.ts). */
  readonly forModels: Message;
  readonly candidate: ResolvedCandidate;
  calls: CallRecord[];
  gate: CallGate | undefined;
  /** Its results are in the conversation (or it needed none): nothing is left to close. */
  closed: boolean;
}

/** Persists the assistant message whole (the session file keeps it as the model sent it). */
export function persistAssistant(
  ports: TurnPorts,
  turnId: string,
  candidate: ResolvedCandidate,
  completion: AccumulatedCompletion,
  syntheticReason: string,
): TurnAnswer {
  ports.messages.persistMessage(
    create(MessageEventSchema, {
      ...completionEventFields(turnId, candidate, completion),
      ...(completion.stop ? { stop: completion.stop } : {}),
      ...(completion.metadata ? { metadata: completion.metadata } : {}),
      safetyNotices: [...completion.safetyNotices],
      syntheticReason,
    }),
    { providerName: candidate.provider.name, modelId: candidate.spec.id },
  );
  const message = completion.message;
  return {
    message,
    forModels: budgetToolInputs(message),
    candidate,
    calls: [],
    gate: undefined,
    closed: false,
  };
}

/**
 * What streamed before an interrupt or the deadline is kept, marked as cut short; the calls
 * it named did not run and each gets a cancelled result (a tool_result event too, so
 * transcripts still show the call).
 */
export function keepCutAnswer(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  partial: { readonly completion: AccumulatedCompletion; readonly candidate: ResolvedCandidate },
  reason: string,
  trace: (step: string) => void,
): void {
  persistAssistant(ports, ctx.turnId, partial.candidate, partial.completion, reason);
  const message = partial.completion.message;
  ports.conversation.append(budgetToolInputs(message));
  const uses = message.content.filter((b) => b.block.case === "toolUse");
  if (uses.length === 0) return;
  const unrun: CallRecord[] = uses.map((b, index) => {
    const use = b.block.value as ToolUseBlock;
    return { index, block: use, args: use.input ?? {}, resultPersisted: false, hookable: false };
  });
  new CallGate(deps, ctx, ports, { calls: unrun, serializeAll: false, trace }).cancelRemaining();
  ports.messages.appendUserMessage(
    ctx.turnId,
    unrun.map((c) => resultBlock(c, true, undefined, unrun.length)),
  );
}

/**
 * A compaction's rewrite takes the place of the history (compaction.ts recorded it as a
 * compaction event first). The prefix the vendors cached is gone: breakpoints start over.
 */
export function replaceConversation(
  ports: Pick<TurnPorts, "conversation">,
  modelCalls: Pick<ModelCallState, "prefixChanged">,
  history: Message[],
): void {
  ports.conversation.replace(history);
  modelCalls.prefixChanged();
}

/** Step 15 of a turn that asked for no tool: the assistant message alone. */
export function appendAnswer(ports: TurnPorts, answer: TurnAnswer): void {
  answer.closed = true;
  ports.conversation.append(answer.forModels);
}

/** Step 15: the assistant message and its calls' results go into the conversation. */
export function appendResults(ctx: TurnContext, ports: TurnPorts, answer: TurnAnswer): void {
  const { calls } = answer;
  ports.conversation.append(answer.forModels);
  ports.messages.appendUserMessage(
    ctx.turnId,
    calls.map((c) => resultBlock(c, false, answer.candidate.spec, calls.length)),
  );
  answer.closed = true;
}

/** An interrupt during the gate: the calls not done are cancelled and every call answered. */
export function appendCancelled(ctx: TurnContext, ports: TurnPorts, answer: TurnAnswer): void {
  const { calls } = answer;
  answer.gate?.cancelRemaining();
  ports.conversation.append(answer.forModels);
  ports.messages.appendUserMessage(
    ctx.turnId,
    calls.map((c) => resultBlock(c, true, undefined, calls.length)),
  );
  answer.closed = true;
}

/**
 * A kernel error after the assistant message was persisted: every tool_use still gets one
 * result (the ones that ran keep theirs), so the conversation stays valid for the next run
 * and for a resume.
 */
export function closeAfterError(
  ctx: TurnContext,
  ports: TurnPorts,
  answer: TurnAnswer,
  detail: string,
): void {
  try {
    answer.gate?.cancelRemaining();
    ports.conversation.append(answer.forModels);
    const uses = answer.message.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : []));
    if (uses.length === 0) return;
    ports.messages.appendUserMessage(
      ctx.turnId,
      uses.map((use, index) => {
        const c = answer.calls.find((x) => x.block.id === use.id);
        if (c?.result) return resultBlock(c, true, undefined, uses.length);
        const failed: CallRecord = {
          index,
          block: use,
          args: use.input ?? {},
          resultPersisted: true,
          hookable: false,
          result: {
            status: "failed",
            denied: false,
            outcome: {
              kind: "error",
              error: toolError(ToolErrorCategory.UNKNOWN, `the call did not run: ${detail}`),
            },
          },
        };
        return resultBlock(failed, true, undefined, uses.length);
      }),
    );
  } catch {
    // the file itself failed; the resume repair answers the calls instead
  }
}
