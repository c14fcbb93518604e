// Compaction: the kernel decides when the conversation must shrink, a compactor context
// provider decides how (specifications/context: `compactor`, `rewritten_history`).
//
// - When: before each model call the kernel estimates the request (history, the context
//   sections of the previous turn, tool declarations) against the chosen model's effective
//   ceiling; at settings.compaction.threshold (default 80%) it asks for compaction; when no
//   candidate's window holds the history, or the model answers context_length_exceeded,
//   it asks with reason OVERFLOW (turn.ts retries the call once); the operator asks with
//   compactNow() (/compact) or `agent run --compact-at`.
// - How: every compactor provider's Contribute is called with ContextRequest.compaction
//   set; the first rewritten_history that keeps every tool_use/tool_result pair intact
//   replaces the history. Its summary call comes back to the kernel (Summarize), which
//   routes it through the session's model chain like any turn and books its cost as a
//   message event with synthetic_reason "compaction_summary".
// - Record: a compaction event holds the whole new history, so a resume and a replay
//   rebuild exactly what the model is sent next (resume.ts).
// docs/decisions/compaction.md.
import { clone, create, toBinary } from "@bufbuild/protobuf";
import type { CompactAt, SecretMask } from "@pluggableharness/config";
import { CodedError } from "@pluggableharness/protocol/coded-error";
import {
  type ContentBlock,
  ContextSectionSchema,
  type Message,
  MessageSchema,
  Role,
  Stability,
} from "@pluggableharness/protocol/content";
import { CompactionReason } from "@pluggableharness/protocol/context";
import { CompactionEventSchema, MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { GenerationParamsSchema, type ModelSpec, type ModelTarget } from "@pluggableharness/protocol/model";
import { TextStyle } from "@pluggableharness/protocol/render";
import { fallbackTokenCount } from "../../domain/index.ts";
import type { LoadedProvider } from "../../plugins/providers.ts";
import { errorType } from "../../telemetry/error-type.ts";
import type { LoopDeps } from "../deps.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import { replaceConversation } from "./append.ts";
import { tokenBudget } from "./context-assembly.ts";
import { dropOldestTurns } from "./drop-oldest.ts";
import {
  callModel,
  estimateInputTokens,
  type ModelCallState,
  type ResolvedCandidate,
  routeCandidates,
} from "./model-call.ts";
import { publishNotice } from "./notice.ts";
import { COMPACTION_SUMMARY_REASON } from "./records.ts";

export { CompactionReason };

/** What the session knows about compaction between turns. */
export class CompactionState {
  /** The operator asked for compaction (compactNow() queued, or --compact-at): the next turn compacts first. */
  pending: { readonly instructions: string } | undefined;
  /** The turn a compaction pass is running for (Summarize books its cost there). */
  turnId: string | undefined;
  /** The asked compactor's span context: its Summarize callback's model call nests there. */
  trace: Readonly<Record<string, string>> | undefined;
  /**
   * Reported input tokens / kernel estimate of the previous request, never below 1: the
   * fallback estimate (UTF-8 bytes / 4) undercounts code and non-Latin text, so the
   * vendor's own count corrects it upward (never downward: an estimate too low is what
   * overflows a window).
   */
  calibration = 1;
  /** Compactions applied in this kernel's life of the session. */
  count = 0;
  /** Compaction passes in a row whose compactors all failed (their summary calls, mostly). */
  failures = 0;
  /** Passes left during which compactors are not asked after repeated failures. */
  skipCompactors = 0;
  /** Summary calls made in the running pass. */
  summaryCalls = 0;
  /** What the previous turn's context sections came to (the next turn's compaction check uses it). */
  assembledTokensLastTurn = 0;
  /** The size of the request about to be sent and its model's ceiling (usage updates carry it). */
  contextUsage: { tokens: number; ceiling: number } | undefined;
}

/** What a compaction knows of its session: identity, place, and the model chain and tools it routes for. */
export type CompactionContext = Pick<
  TurnContext,
  "sessionId" | "parentSessionId" | "workingDirectory" | "candidates" | "tools"
>;

/** What a compaction writes through: the compaction event, the summary's message, the new history. */
export type CompactionPorts = Pick<TurnPorts, "sink" | "messages" | "registry" | "conversation">;

/** The states a compaction updates: its own, and the model calls' (a rewrite resets cache breakpoints). */
export interface CompactionStates {
  readonly compaction: CompactionState;
  readonly modelCalls: ModelCallState;
}

/** Failed passes in a row after which compactors rest and the oldest turns are dropped instead. */
export const MAX_FAILED_COMPACTIONS = 2;
/** How many passes compactors then rest before they are tried once more. */
export const COMPACTOR_REST_PASSES = 5;
/** Summary calls one compaction pass may make (a compactor summarises a long history in pieces). */
export const MAX_SUMMARY_CALLS_PER_PASS = 8;

/** The chosen model's window, capped by settings.compaction.context_window when set. */
export function effectiveWindow(deps: Pick<LoopDeps, "settings">, spec: ModelSpec): number {
  const window = Number(spec.contextWindow);
  const cap = deps.settings.compaction.context_window;
  return cap > 0 ? Math.min(window, cap) : window;
}

/** The model target context providers assemble for: window minus reserved output and tools. */
export function modelTarget(deps: LoopDeps, c: ResolvedCandidate, toolTokens: number): ModelTarget {
  const window = effectiveWindow(deps, c.spec);
  const reserved = Math.min(
    Math.max(
      deps.limits.reservedOutputTokens,
      Number(c.params?.maxOutputTokens ?? 0n) ||
        Math.min(Number(c.spec.maxOutputTokens), deps.limits.reservedOutputTokens),
    ),
    // A small (capped) window still leaves room for the conversation.
    Math.floor(window / 4),
  );
  return {
    $typeName: "pluggableharness.model.v1.ModelTarget",
    provider: c.provider.name,
    id: c.spec.id,
    contextWindow: BigInt(window),
    effectiveCeiling: BigInt(Math.max(0, window - reserved - toolTokens)),
  };
}

/** The token count at which a request of this ceiling is compacted. */
export function thresholdTokens(at: CompactAt, ceiling: number): number {
  return at.kind === "tokens" ? Math.min(at.value, ceiling) : Math.floor((ceiling * at.value) / 100);
}

/** The calibrated estimate of a history's size. */
export function historyTokens(state: CompactionState, history: readonly Message[]): number {
  return Math.ceil(Number(estimateInputTokens(history, [], [])) * state.calibration);
}

/** After a call: how far the estimate was below the vendor's own count of the same request. */
export function calibrate(state: CompactionState, estimated: number, reportedInput: number): void {
  if (estimated <= 0 || reportedInput <= 0) return;
  const ratio = reportedInput / estimated;
  state.calibration = Math.min(3, Math.max(1, ratio));
}

export function compactors(deps: Pick<LoopDeps, "providers">): LoadedProvider[] {
  return deps.providers.contextProviders().filter((p) => p.context?.compactor === true);
}

/**
 * Why this turn must compact before its request, if it must: the operator asked, or the
 * request (history + last turn's sections + tools) reaches the threshold of the ceiling.
 */
export function compactionDue(
  deps: LoopDeps,
  state: CompactionState,
  history: readonly Message[],
  target: ModelTarget,
  sectionTokens: number,
): CompactionReason | undefined {
  if (state.pending) return CompactionReason.OPERATOR;
  if (!deps.settings.compaction.enabled) return undefined;
  const ceiling = Number(target.effectiveCeiling);
  if (ceiling <= 0) return undefined;
  const at = deps.settings.compaction.threshold;
  return historyTokens(state, history) + sectionTokens >= thresholdTokens(at, ceiling)
    ? CompactionReason.THRESHOLD
    : undefined;
}

/** Why a rewritten history would break a vendor's rules, or undefined when it is sound. */
export function historyProblem(messages: readonly Message[]): string | undefined {
  let open: Set<string> | undefined;
  for (const [i, m] of messages.entries()) {
    const results = m.content.flatMap((b) =>
      b.block.case === "toolResult" ? [b.block.value.toolUseId] : [],
    );
    if (open) {
      if (m.role !== Role.USER) return `message ${i}: the tool calls before it have no results`;
      for (const id of open) if (!results.includes(id)) return `message ${i}: no result for tool call ${id}`;
      for (const id of results)
        if (!open.has(id)) return `message ${i}: a result for unknown tool call ${id}`;
      open = undefined;
    } else if (results.length > 0) {
      return `message ${i}: tool results without the tool calls they answer`;
    }
    const uses = m.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value.id] : []));
    if (m.role === Role.ASSISTANT && uses.length > 0) open = new Set(uses);
  }
  return undefined;
}

export interface CompactInput {
  readonly turnId: string;
  readonly target: ModelTarget;
  readonly reason: CompactionReason;
  readonly signal: AbortSignal;
  /** Operator guidance for the summary. */
  readonly instructions?: string;
  /** The history size to get under; default: half the threshold. */
  readonly targetTokens?: number;
}

export type CompactOutcome =
  | { readonly kind: "compacted"; readonly before: number; readonly after: number }
  | { readonly kind: "unchanged"; readonly why: string };

const REASON_TEXT: Record<number, string> = {
  [CompactionReason.THRESHOLD]: "threshold",
  [CompactionReason.OVERFLOW]: "overflow",
  [CompactionReason.OPERATOR]: "operator",
};

/**
 * Asks every compactor in turn until one rewrites the history soundly; persists the rewrite.
 * One `compaction` span, with a child per compactor asked.
 */
export function compactHistory(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  input: CompactInput,
): Promise<CompactOutcome> {
  return deps.telemetry.span(
    "compaction",
    { "compaction.reason": REASON_TEXT[input.reason] ?? "unspecified" },
    async (span) => {
      const outcome = await compactHistoryBody(deps, ctx, ports, states, input);
      span.set(
        outcome.kind === "compacted"
          ? {
              "compaction.outcome": "compacted",
              "compaction.tokens_before": outcome.before,
              "compaction.tokens_after": outcome.after,
            }
          : { "compaction.outcome": "unchanged" },
      );
      return outcome;
    },
  );
}

async function compactHistoryBody(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  input: CompactInput,
): Promise<CompactOutcome> {
  const log = deps.log.child("compaction");
  const all = compactors(deps);
  if (all.length === 0) {
    log.info("compaction is due, but no compactor context provider is loaded", undefined, ctx.sessionId);
    return { kind: "unchanged", why: "no compactor context provider is loaded" };
  }
  const before = historyTokens(states.compaction, ports.conversation.messages);
  const ceiling = Number(input.target.effectiveCeiling);
  const at = deps.settings.compaction.threshold;
  // Half the threshold leaves room for many turns before the next compaction; a request
  // the model refused as too long must shrink to well below what it was.
  let goal = input.targetTokens ?? Math.max(1, Math.floor(thresholdTokens(at, ceiling) / 2));
  if (input.reason === CompactionReason.OVERFLOW) goal = Math.min(goal, Math.max(1, Math.floor(before / 2)));
  const why: string[] = [];
  const state = states.compaction;
  // After repeated failures the compactors rest for a few passes: each failed pass costs
  // summary calls, and a conversation that keeps growing would otherwise retry every turn.
  const resting = state.skipCompactors > 0 && input.reason !== CompactionReason.OPERATOR;
  if (resting) {
    state.skipCompactors--;
    why.push(`the compactors failed ${MAX_FAILED_COMPACTIONS} times in a row and rest for this pass`);
  } else
    publishNotice(
      ports.sink,
      `compacting the conversation (${REASON_TEXT[input.reason]}, ~${before} tokens)…`,
    );
  state.turnId = input.turnId;
  state.summaryCalls = 0;
  try {
    for (const p of resting ? [] : all) {
      if (input.signal.aborted) break;
      let rewritten: Message[] | undefined;
      // A child span per compactor asked; the call carries its context to the plugin.
      const asked = deps.telemetry.start(`compaction.compactor ${p.name}`, {
        "compaction.compactor": p.name,
      });
      state.trace = asked.within(() => deps.telemetry.carrier());
      try {
        const response = await asked.within(() =>
          deps.tracker.run(p.name, ctx.sessionId, "context", () =>
            p.ports.context.contribute(
              {
                sessionId: ctx.sessionId,
                parentSessionId: ctx.parentSessionId ?? "",
                turnId: input.turnId,
                tokenBudget: BigInt(tokenBudget(p, input.target)),
                modelTarget: input.target,
                filesTouched: [],
                workingDirectory: ctx.workingDirectory,
                priorSections: [],
                conversationHistory: [...ports.conversation.messages],
                historyTokens: BigInt(before),
                assembledTokensLastTurn: BigInt(state.assembledTokensLastTurn),
                compaction: {
                  reason: input.reason,
                  targetHistoryTokens: BigInt(goal),
                  instructions: input.instructions ?? "",
                },
              },
              // A summary is a model call: it gets the stream idle timeout, not Contribute's 10 s.
              {
                timeoutMs: Math.max(deps.limits.contributeTimeoutMs, deps.settings.stream_idle_timeout_ms),
                signal: input.signal,
              },
            ),
          ),
        );
        asked.end();
        rewritten = response.rewrittenHistory ? [...response.rewrittenHistory.messages] : undefined;
      } catch (err) {
        asked.fail(errorType(err), (err as Error).message);
        asked.end();
        if (input.signal.aborted) break;
        why.push(`${p.name} failed: ${(err as Error).message}`);
        log.warn(`compactor "${p.name}" failed`, { error: (err as Error).message }, ctx.sessionId);
        continue;
      }
      if (!rewritten) {
        why.push(`${p.name} left the history as it was`);
        continue;
      }
      const outcome = applyRewrittenHistory(deps, ctx, ports, states, {
        turnId: input.turnId,
        compactor: p.name,
        history: rewritten,
        reason: input.reason,
      });
      if (outcome.kind === "compacted") {
        state.failures = 0;
        publishNotice(
          ports.sink,
          `compacted the conversation: ~${outcome.before} → ~${outcome.after} tokens`,
        );
        return outcome;
      }
      why.push(`${p.name}: ${outcome.why}`);
    }
  } finally {
    state.turnId = undefined;
    state.trace = undefined;
  }
  const text = why.join("; ") || "interrupted";
  if (input.signal.aborted || input.reason === CompactionReason.OPERATOR) {
    // The operator asked for a summary: dropping turns is not what was asked.
    log.info(`the conversation was not compacted: ${text}`, undefined, ctx.sessionId);
    publishNotice(ports.sink, `the conversation was not compacted: ${text}`, TextStyle.WARNING);
    return { kind: "unchanged", why: text };
  }
  if (!resting && ++state.failures >= MAX_FAILED_COMPACTIONS) {
    state.failures = MAX_FAILED_COMPACTIONS - 1; // one more failure after the rest re-rests them
    state.skipCompactors = COMPACTOR_REST_PASSES;
  }
  return dropOldest(deps, ctx, ports, states, {
    turnId: input.turnId,
    reason: input.reason,
    goal,
    why: `they could not be summarised (${text})`,
  });
}

/**
 * The fallback when no compactor could rewrite the history: the oldest turns are dropped
 * (with a note to the model in their place) until the history fits `goal`, persisted as a
 * compaction by "kernel".
 */
export function dropOldest(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  input: { turnId: string; reason: CompactionReason; goal: number; why: string },
): CompactOutcome {
  const dropped = dropOldestTurns(
    ports.conversation.messages,
    input.goal,
    (h) => historyTokens(states.compaction, h),
    input.why,
  );
  if (!dropped) {
    const text = `${input.why}; no older turn can be dropped`;
    publishNotice(ports.sink, `the conversation was not compacted: ${text}`, TextStyle.WARNING);
    return { kind: "unchanged", why: text };
  }
  const outcome = applyRewrittenHistory(deps, ctx, ports, states, {
    turnId: input.turnId,
    compactor: KERNEL_DROP,
    history: dropped.history,
    reason: input.reason,
  });
  if (outcome.kind === "compacted") {
    const note = `dropped the ${dropped.droppedMessages} oldest messages (~${outcome.before} → ~${outcome.after} tokens): ${input.why}`;
    deps.log.warn(note, undefined, ctx.sessionId);
    publishNotice(ports.sink, note, TextStyle.WARNING);
  }
  return outcome;
}

/** The compactor named in a compaction event when the kernel dropped the oldest turns. */
export const KERNEL_DROP = "kernel (oldest turns dropped)";

/**
 * Replaces the history with a compactor's rewrite and persists it as a compaction event.
 * A rewrite that leaves a tool call without its result (or the reverse) is refused: no
 * vendor accepts such a conversation.
 */
export function applyRewrittenHistory(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  rewrite: {
    readonly turnId: string;
    readonly compactor: string;
    readonly history: Message[];
    readonly reason: CompactionReason;
  },
): CompactOutcome {
  const problem = historyProblem(rewrite.history);
  if (problem) {
    deps.log.warn(
      `compactor "${rewrite.compactor}" returned a history that breaks tool pairing (${problem}); it is discarded`,
      undefined,
      ctx.sessionId,
    );
    return { kind: "unchanged", why: `its rewrite breaks tool pairing (${problem})` };
  }
  // The rewrite repeats the kept tail: secret values the kernel withholds from commands are
  // replaced in it, so compaction never writes a secret again (text only: thinking and its
  // signature stay byte for byte).
  const history = redact(rewrite.history, deps.secretMask);
  const before = historyTokens(states.compaction, ports.conversation.messages);
  const after = historyTokens(states.compaction, history);
  const messagesBefore = ports.conversation.messages.length;
  ports.sink.persist(
    EventKind.COMPACTION,
    deps.kernelProducer,
    toBinary(
      CompactionEventSchema,
      create(CompactionEventSchema, {
        turnId: rewrite.turnId,
        reason: rewrite.reason,
        compactor: rewrite.compactor,
        history,
        tokensBefore: BigInt(before),
        tokensAfter: BigInt(after),
        messagesBefore,
        messagesAfter: history.length,
      }),
    ),
  );
  replaceConversation(ports, states.modelCalls, history);
  states.compaction.count++;
  states.compaction.pending = undefined;
  deps.telemetry.add("agent.compactions", 1, {
    "compaction.reason": REASON_TEXT[rewrite.reason] ?? "unspecified",
    "compaction.by": rewrite.compactor === KERNEL_DROP ? "kernel" : "compactor",
  });
  deps.log.info(
    "conversation compacted",
    {
      compactor: rewrite.compactor,
      reason: REASON_TEXT[rewrite.reason] ?? "unspecified",
      tokens_before: before,
      tokens_after: after,
      messages_before: messagesBefore,
      messages_after: history.length,
    },
    ctx.sessionId,
  );
  return { kind: "compacted", before, after };
}

/** Every withheld value, in every form the mask knows, replaced in text and tool results. */
function redact(messages: readonly Message[], mask: SecretMask): Message[] {
  if (mask.empty) return [...messages];
  const clean = (t: string) => mask.mask(t);
  const blocks = (content: readonly ContentBlock[]): ContentBlock[] =>
    content.map((b) => {
      const v = b.block;
      if (v.case === "text")
        return { ...b, block: { ...v, value: { ...v.value, text: clean(v.value.text) } } };
      if (v.case === "toolResult")
        return { ...b, block: { ...v, value: { ...v.value, content: blocks(v.value.content) } } };
      return b;
    });
  return messages.map((m) => ({ ...m, content: blocks(m.content) }));
}

/** A summary call that failed; its code is the model failure's category (or "invalid_request"). */
export class SummarizeError extends CodedError<string> {
  override readonly name = "SummarizeError";
}

export interface SummaryResult {
  readonly text: string;
  readonly provider: string;
  readonly modelId: string;
  readonly costUsd: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

/**
 * A compactor's summary call (KernelCallbackService.Summarize): routed through the session's
 * model chain with no tools, never streamed to frontends, booked as a compaction_summary
 * message event (its cost in the ledger and against the session's budget). Secret values
 * the kernel withholds from commands are replaced before anything is sent.
 */
export async function summarize(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  request: { instructions: string; messages: readonly Message[]; maxOutputTokens: number },
  signal: AbortSignal,
): Promise<SummaryResult> {
  const turnId = states.compaction.turnId ?? deps.newId();
  const messages = redact(request.messages, deps.secretMask);
  const [instructions] = redact(
    [
      create(MessageSchema, {
        content: [{ block: { case: "text", value: { text: request.instructions } } }],
      }),
    ],
    deps.secretMask,
  );
  const instructionText =
    instructions!.content[0]?.block.case === "text" ? instructions!.content[0].block.value.text : "";
  if (messages.length === 0)
    throw new SummarizeError("invalid_request", "SummarizeRequest.messages is empty");
  const state = states.compaction;
  if (state.summaryCalls >= MAX_SUMMARY_CALLS_PER_PASS) {
    throw new SummarizeError(
      "resource_exhausted",
      `a compaction pass makes at most ${MAX_SUMMARY_CALLS_PER_PASS} summary calls`,
    );
  }
  const sections = instructionText
    ? [
        create(ContextSectionSchema, {
          provider: "kernel",
          label: "Compaction instructions",
          content: [{ block: { case: "text", value: { text: instructionText } } }],
          tokens: BigInt(fallbackTokenCount(instructionText).count),
          stability: Stability.STATIC,
        }),
      ]
    : [];
  const candidates = ctx.candidates.map((c) => {
    if (request.maxOutputTokens <= 0) return c;
    const params = c.params ? clone(GenerationParamsSchema, c.params) : create(GenerationParamsSchema, {});
    params.maxOutputTokens = BigInt(request.maxOutputTokens);
    return { ...c, params };
  });
  const route = routeCandidates(
    deps,
    candidates,
    0,
    { inputTokens: estimateInputTokens(messages, sections, []), messages, tools: [] },
    states.modelCalls.unavailable,
    { sessionId: ctx.sessionId, turnId },
  );
  if (!route.chosen) {
    throw new SummarizeError(
      "routing_exhausted",
      `no model in the chain can take the summary request: ${route.skipped.join("; ") || "the chain is empty"}`,
    );
  }
  // Never sent when it cannot fit: counted as the session's requests are (calibrated), with
  // room for the summary itself.
  const window = effectiveWindow(deps, route.chosen.spec);
  const needed =
    Math.ceil(Number(estimateInputTokens(messages, sections, [])) * state.calibration) +
    Math.max(0, request.maxOutputTokens);
  if (needed > window) {
    throw new SummarizeError(
      "context_length_exceeded",
      `the summary request (~${needed} tokens with its answer) does not fit the model's window of ${window} tokens; it was not sent`,
    );
  }
  state.summaryCalls++;
  const chosen = route.chosen;
  // The callback arrives outside the compaction's context: its model call is put back there.
  const result = await deps.telemetry.withParent(state.trace, () =>
    callModel(deps, ctx, ports, states.modelCalls, {
      turnId,
      candidates,
      route: { ...route, chosen },
      messages,
      tools: [],
      sections,
      signal,
      quiet: true,
    }),
  );
  if (result.kind === "cancelled" || result.kind === "bound") {
    // The cut summary call was (maybe) billed: it is recorded for the ledger all the same.
    if (result.completion && result.candidate) {
      ports.messages.persistFailedAttempt(
        turnId,
        result.candidate,
        result.completion,
        result.kind === "bound" ? "max_wall_clock_s" : "cancelled",
      );
    }
    throw new SummarizeError("cancelled", "the summary call was interrupted");
  }
  if (result.kind === "failed") throw new SummarizeError(result.category, result.message);
  const c = result.completion;
  ports.messages.persistMessage(
    create(MessageEventSchema, {
      message: c.message,
      turnId,
      model: { provider: result.candidate.provider.name, id: result.candidate.spec.id },
      usage: [...c.usage],
      costUsd: c.costUsd,
      ...(c.providerRequestId ? { providerRequestId: c.providerRequestId } : {}),
      ...(c.stop ? { stop: c.stop } : {}),
      syntheticReason: COMPACTION_SUMMARY_REASON,
    }),
    { providerName: result.candidate.provider.name, modelId: result.candidate.spec.id },
  );
  const text = c.message.content
    .flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []))
    .join("\n")
    .trim();
  if (!text) throw new SummarizeError("unknown", "the model's summary was empty");
  const usage = c.usage.at(-1)?.usage;
  return {
    text,
    provider: result.candidate.provider.name,
    modelId: result.candidate.spec.id,
    costUsd: c.costUsd,
    inputTokens: Number(
      (usage?.inputTokens ?? 0n) + (usage?.cacheReadTokens ?? 0n) + (usage?.cacheWriteTokens ?? 0n),
    ),
    outputTokens: Number(usage?.outputTokens ?? 0n),
  };
}

/**
 * "Compact now" outside a turn (/compact): routes for the session's primary model and runs
 * one compaction pass with reason OPERATOR. The driver runs it as a run of its own.
 */
export async function compactNow(
  deps: LoopDeps,
  ctx: CompactionContext,
  ports: CompactionPorts,
  states: CompactionStates,
  instructions: string,
  signal: AbortSignal,
): Promise<CompactOutcome> {
  const tools = ctx.tools;
  const history = ports.conversation.messages;
  const route = routeCandidates(
    deps,
    ctx.candidates,
    0,
    { inputTokens: 0n, messages: history, tools },
    states.modelCalls.unavailable,
  );
  if (!route.chosen) {
    return { kind: "unchanged", why: `no model can serve this session: ${route.skipped.join("; ")}` };
  }
  if (history.length < 2) return { kind: "unchanged", why: "the conversation is too short to compact" };
  const target = modelTarget(deps, route.chosen, Number(estimateInputTokens([], [], tools)));
  const outcome = await compactHistory(deps, ctx, ports, states, {
    turnId: deps.newId(),
    target,
    reason: CompactionReason.OPERATOR,
    signal,
    instructions,
    // The operator asked: shrink as far as the compactor's tail allows.
    targetTokens: Math.max(1, Math.floor(historyTokens(states.compaction, history) / 4)),
  });
  states.compaction.pending = undefined;
  return outcome;
}
