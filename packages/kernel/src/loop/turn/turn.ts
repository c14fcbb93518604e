// RunTurn: the eighteen steps of one turn, in order (7-14, the plan/apply gate, live in
// gate/gate.ts, which operator-initiated calls go through as well).
//
//  1 context-assemble        7 pre-tool-call (each call)   13 post-tool-call (each result)
//  2 pre-model-call          8 split by kind               14 post-apply
//  3 model call              9 data sources (prechecked)   15 history append
//  4 accumulation           9b interactive (one by one)    16 doom-loop check
//  5 post-model-response    10 plan (snapshots, Preview)   17 bounds check
//  6 done check             11 plan-ready (policy, vetoes) 18 loop or stop
//                           12 apply (per ConcurrencySpec)
//
// Every step emits a trace event. An interrupt at any point ends the turn: running
// tools and pending questions are cancelled, every tool_use still gets exactly one
// tool_result, and the turn reports "cancelled".
import { create } from "@bufbuild/protobuf";
import type { Message, ToolUseBlock } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import {
  type AccumulatedCompletion,
  budgetToolInputs,
  checkDone,
  requestPrefix,
  serializeAllFor,
  TurnDoneTracker,
  toolListFingerprint,
} from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import { type CallRecord, resultBlock } from "../gate/call.ts";
import { CallGate } from "../gate/gate.ts";
import type { TurnContext } from "../ports.ts";
import type { Session } from "../session/session.ts";
import { callHash, checkBounds, type StopReason } from "./bounds.ts";
import {
  applyRewrittenHistory,
  CompactionReason,
  calibrate,
  historyTokens as calibratedHistoryTokens,
  compactHistory,
  compactionDue,
  compactors,
  dropOldest,
  modelTarget,
} from "./compaction.ts";
import { assembleContext } from "./context-assembly.ts";
import { callModel, estimateInputTokens, type ResolvedCandidate, routeCandidates } from "./model-call.ts";
import { toolError } from "./tool-exec.ts";

export type TurnOutcome =
  | { readonly kind: "done" }
  | { readonly kind: "continue"; readonly stop?: StopReason }
  | { readonly kind: "cancelled" }
  | { readonly kind: "failed"; readonly detail: string }
  /** The run's wall-clock deadline came while the turn waited for the model. */
  | { readonly kind: "bound"; readonly detail: string };

export interface TurnInput {
  /** The turn's ULID (generated when absent). */
  readonly turnId?: string;
  readonly signal: AbortSignal;
  /** Set on the final-answer turn a guard forced: every tool spec is withheld. */
  readonly final?: StopReason;
  /** Turns completed in this run before this one (for the bounds check). */
  readonly turnsBefore: number;
  /** The operator's message text, on the run's first turn only (post-model-response's run_prompt). */
  readonly runPrompt?: string;
  /** When this run started (ms), for max_wall_clock_s. */
  readonly runStartedAt: number;
  /** When waiting for the model must end (clock ms): the wall-clock bound, or the final turn's grace. */
  readonly deadline?: number;
}

export async function runTurn(deps: LoopDeps, session: Session, input: TurnInput): Promise<TurnOutcome> {
  const ctx = turnContext(session, input, input.turnId ?? deps.newId());
  const { turnId, signal } = ctx;
  const hookCtx = ctx.hook;
  const trace = (step: string) => deps.trace({ name: "step", sessionId: session.id, turnId, step });
  deps.trace({
    name: "turn.begin",
    sessionId: session.id,
    turnId,
    ...(input.final ? { attrs: { final: input.final } } : {}),
  });

  // Counted up the session tree: an ancestor's max_turns covers its sub-agents' turns.
  session.cost.chargeTurn();
  session.subagent?.progress();

  // ---- 1. context-assemble -------------------------------------------------------------
  trace("1");
  const tools = [...ctx.tools];
  const declared = new Set(tools.map((t) => t.name));
  const candidates = [...ctx.candidates];
  // The turn is routed once, here: context is assembled for the chosen model's window, and
  // the model call goes to it (routing again only to fall back after a failure).
  let pre = routeCandidates(
    deps,
    candidates,
    0,
    { inputTokens: estimateInputTokens(session.history, [], tools), messages: session.history, tools },
    session.unavailableModels,
    { sessionId: session.id, turnId },
  );
  let overflow = false;
  if (!pre.chosen && compactors(deps).length > 0) {
    // No window holds the history: compaction, not a dead end. The first candidate able to
    // serve the turn apart from its size is the one compacted for.
    const unsized = routeCandidates(
      deps,
      candidates,
      0,
      { inputTokens: 0n, messages: session.history, tools },
      session.unavailableModels,
    );
    if (unsized.chosen) {
      pre = { chosen: unsized.chosen, skipped: pre.skipped };
      overflow = true;
    }
  }
  if (!pre.chosen) {
    // An image or document no model of the chain takes is a bad request, not a routing
    // failure (routeCandidates says which): the operator must drop it or /model another.
    return {
      kind: "failed",
      detail:
        pre.category === "invalid_request"
          ? `invalid_request: the conversation carries content no model of the chain accepts: ${pre.skipped.join("; ")}`
          : `routing_exhausted: no model in the chain can serve this turn: ${pre.skipped.join("; ") || "the chain is empty"}`,
    };
  }
  const toolTokens = Number(estimateInputTokens([], [], tools));
  const target = modelTarget(deps, pre.chosen, toolTokens);
  const states = { compaction: session.compaction, modelCalls: session.modelCalls };
  const historySize = () => calibratedHistoryTokens(states.compaction, session.history);
  let compacted = false;
  const compact = async (reason: CompactionReason): Promise<boolean> => {
    const instructions = session.compaction.pending?.instructions ?? "";
    const outcome = await compactHistory(deps, ctx, session.ports, states, {
      turnId,
      target,
      reason,
      signal,
      ...(instructions ? { instructions } : {}),
    });
    compacted = compacted || outcome.kind === "compacted";
    return outcome.kind === "compacted";
  };
  const due = overflow
    ? CompactionReason.OVERFLOW
    : compactionDue(
        deps,
        states.compaction,
        session.history,
        target,
        states.compaction.assembledTokensLastTurn,
      );
  deps.log.debug(
    "context usage",
    {
      history: historySize(),
      sections: session.compaction.assembledTokensLastTurn,
      ceiling: Number(target.effectiveCeiling),
      compaction: due === undefined ? "" : String(due),
    },
    session.id,
  );
  if (due !== undefined) await compact(due);
  if (signal.aborted) return { kind: "cancelled" };
  const assembled = await assembleContext(deps, ctx, session.ports, {
    target,
    history: session.history,
    historyTokens: historySize(),
    assembledTokensLastTurn: session.compaction.assembledTokensLastTurn,
  });
  if (assembled.rewrittenHistory) {
    // A compactor that rewrote the history on its own initiative: persisted like any other.
    const p = compactors(deps)[0];
    applyRewrittenHistory(deps, ctx, session.ports, states, {
      turnId,
      compactor: p?.name ?? "",
      history: assembled.rewrittenHistory,
      reason: CompactionReason.UNSPECIFIED,
    });
  }
  session.compaction.assembledTokensLastTurn = assembled.totalTokens;
  if (signal.aborted) return { kind: "cancelled" };
  // This turn's sections are known now: a request that would still cross the ceiling is
  // compacted before it is sent, not refused by the vendor.
  const requestTokens = () => historySize() + assembled.totalTokens + toolTokens;
  if (!compacted && compactors(deps).length > 0 && requestTokens() > Number(target.effectiveCeiling)) {
    await compact(CompactionReason.OVERFLOW);
    if (signal.aborted) return { kind: "cancelled" };
  }
  // A request larger than the window is never sent: what compaction left too large loses
  // its oldest turns, and one that still cannot fit fails the turn unsent.
  const window = Number(target.contextWindow);
  if (deps.settings.compaction.enabled && compactors(deps).length > 0 && requestTokens() > window) {
    const goal = Math.max(1, Number(target.effectiveCeiling) - assembled.totalTokens - toolTokens);
    dropOldest(deps, ctx, session.ports, states, {
      turnId,
      reason: CompactionReason.OVERFLOW,
      goal,
      why: "the request would not have fit the model's window otherwise",
    });
    if (requestTokens() > window) {
      return {
        kind: "failed",
        detail: `context_length_exceeded: the request (~${requestTokens()} tokens) does not fit the model's window of ${window} tokens even without its oldest turns; it was not sent`,
      };
    }
  }

  let result: Awaited<ReturnType<typeof callModel>>;
  let messages: typeof session.history;
  let overflowRetried = false;
  const modelCalls = session.modelCalls;
  for (;;) {
    // ---- 2. pre-model-call ------------------------------------------------------------------
    trace("2");
    const preModel = await deps.hooks.dispatch(
      "pre-model-call",
      create(HookPayloadSchema, {
        point: {
          case: "preModelCall",
          value: {
            model: { provider: pre.chosen.provider.name, id: pre.chosen.spec.id },
            // The hook's payload is built from the conversation as it stands (no copy made here).
            messages: session.history as Message[],
            tools,
            ...(pre.chosen.params ? { params: pre.chosen.params } : {}),
          },
        },
      }),
      hookCtx,
    );
    if (signal.aborted) return { kind: "cancelled" };
    if (preModel.transformFailure) {
      return {
        kind: "failed",
        detail: `hook_error: transform subscriber "${preModel.transformFailure.subscriber?.name}" failed at pre-model-call (${preModel.transformFailure.message}); the turn cannot go on with an unintended request`,
      };
    }
    messages =
      preModel.payload.point.case === "preModelCall"
        ? preModel.payload.point.value.messages
        : session.history;

    // ---- 3-4. model call and accumulation -----------------------------------------------------
    trace("3");
    const chosen = pre.chosen;
    const estimated = Number(estimateInputTokens(messages, assembled.sections, tools));
    session.compaction.contextUsage = { tokens: requestTokens(), ceiling: Number(target.contextWindow) };
    result = await callModel(deps, ctx, session.ports, modelCalls, {
      turnId,
      candidates,
      route: { ...pre, chosen },
      messages,
      tools,
      sections: assembled.sections,
      ...(modelCalls.previousToolsFingerprint !== undefined
        ? { previousToolsFingerprint: modelCalls.previousToolsFingerprint }
        : {}),
      ...(modelCalls.previousRequest ? { previousRequest: modelCalls.previousRequest } : {}),
      signal,
      ...(ctx.deadline !== undefined ? { deadline: ctx.deadline } : {}),
    });
    modelCalls.previousToolsFingerprint = toolListFingerprint(tools);
    modelCalls.previousRequest = requestPrefix(tools, assembled.sections, messages);
    if (result.kind === "ok") {
      const u = result.completion.usage.at(-1)?.usage;
      if (u)
        calibrate(
          states.compaction,
          estimated,
          Number(u.inputTokens + (u.cacheReadTokens ?? 0n) + (u.cacheWriteTokens ?? 0n)),
        );
    }
    // The model refused the request as too long: compact and send it once more.
    if (
      result.kind === "failed" &&
      result.category === "context_length_exceeded" &&
      !overflowRetried &&
      compactors(deps).length > 0
    ) {
      overflowRetried = true;
      deps.log.info(
        "the model refused the request as too long; compacting and retrying once",
        undefined,
        session.id,
      );
      if (await compact(CompactionReason.OVERFLOW)) continue;
      if (signal.aborted) return { kind: "cancelled" };
      return {
        kind: "failed",
        detail: `model_error context_length_exceeded: ${result.message} (compaction could not shrink the conversation further)`,
      };
    }
    break;
  }
  if (result.kind === "failed")
    return { kind: "failed", detail: `model_error ${result.category}: ${result.message}` };
  if (result.kind === "cancelled" || result.kind === "bound") {
    // What streamed before the interrupt or the deadline is kept, marked as cut short.
    if (result.completion && result.candidate) {
      const partial = result.completion;
      persistAssistant(
        session,
        turnId,
        result.candidate,
        partial,
        result.kind === "bound" ? "limit_reached:max_wall_clock_s" : "cancelled",
      );
      session.conversation.append(budgetToolInputs(partial.message));
      const uses = partial.message.content.filter((b) => b.block.case === "toolUse");
      if (uses.length > 0) {
        // Calls the model named before the interrupt: none ran, each gets a cancelled
        // result (a tool_result event too, so transcripts still show the call).
        const unrun: CallRecord[] = uses.map((b, index) => {
          const use = b.block.value as ToolUseBlock;
          return { index, block: use, args: use.input ?? {}, resultPersisted: false, hookable: false };
        });
        new CallGate(deps, ctx, session.ports, {
          calls: unrun,
          serializeAll: false,
          trace,
        }).cancelRemaining();
        session.log.appendUserMessage(
          turnId,
          unrun.map((c) => resultBlock(c, true, undefined, unrun.length)),
        );
      }
    }
    return result.kind === "bound" ? { kind: "bound", detail: result.detail } : { kind: "cancelled" };
  }
  trace("4");
  const completion = result.completion;
  const message = completion.message;
  // The session file keeps the message whole; the conversation sent to models from now on
  // carries its huge tool inputs shortened (domain/model-budget.ts).
  const forModels = budgetToolInputs(message);
  persistAssistant(
    session,
    turnId,
    result.candidate,
    completion,
    input.final ? `final_answer:${input.final}` : "",
  );

  // Steps 5-18 run after the assistant message is in the file. Whatever goes wrong from
  // here (a kernel error), every tool_use of that message still gets exactly one result,
  // so the conversation stays valid for the next run and for a resume.
  let calls: CallRecord[] = [];
  let openGate: CallGate | undefined;
  let closed = false;
  try {
    // ---- 5. post-model-response --------------------------------------------------------------
    trace("5");
    const lastUsage = completion.usage.at(-1)?.usage;
    await deps.hooks.dispatch(
      "post-model-response",
      create(HookPayloadSchema, {
        point: {
          case: "postModelResponse",
          value: {
            message,
            model: { provider: result.candidate.provider.name, id: result.candidate.spec.id },
            ...(lastUsage ? { usage: lastUsage } : {}),
            costUsd: completion.costUsd,
            contextWindow: result.candidate.spec.contextWindow,
            runPrompt: input.runPrompt ?? "",
          },
        },
      }),
      hookCtx,
    );

    // ---- 6. done check --------------------------------------------------------------------------
    trace("6");
    const check = checkDone(message, (name) =>
      declared.has(name) ? session.tools.get(name)?.tool.schema : undefined,
    );
    if (check.kind === "done_no_tool_calls") {
      trace("15");
      closed = true;
      session.conversation.append(forModels);
      trace("18");
      return { kind: "done" };
    }
    const done = new TurnDoneTracker(check);
    calls = check.toolUses.map((u, index) => {
      const block = message.content.find((b) => b.block.case === "toolUse" && b.block.value.id === u.id)!
        .block.value as ToolUseBlock;
      const tool = declared.has(u.name) ? session.tools.get(u.name) : undefined;
      const invalid = completion.invalidToolCalls.find((c) => c.id === u.id)?.error;
      return {
        index,
        block,
        ...(tool ? { tool } : {}),
        args: block.input ?? {},
        ...(invalid ? { invalid } : {}),
        resultPersisted: false,
        hookable: tool !== undefined,
      };
    });
    const gate = new CallGate(deps, ctx, session.ports, {
      calls,
      serializeAll: serializeAllFor(result.candidate.spec),
      trace,
      onPostToolCall: (c) => done.postToolCallFired(c.block.id),
    });
    for (const c of calls) {
      if (!c.tool) {
        gate.setResult(c, {
          status: "failed",
          denied: false,
          outcome: {
            kind: "error",
            error: toolError(
              ToolErrorCategory.NOT_FOUND,
              input.final
                ? `no tools are available in this turn (${c.block.name} was not offered); answer with what you have`
                : `no tool named "${c.block.name}" is available in this turn`,
            ),
          },
        });
      }
      // A call with malformed arguments is reported after pre-tool-call, so observers still see it.
    }

    openGate = gate;
    const cancel = (): TurnOutcome => {
      gate.cancelRemaining();
      session.conversation.append(forModels);
      session.log.appendUserMessage(
        turnId,
        calls.map((c) => resultBlock(c, true, undefined, calls.length)),
      );
      closed = true;
      return { kind: "cancelled" };
    };

    // ---- 7-14. the tool gate ---------------------------------------------------------------------
    // Resource calls may change files: the turn's checkpoint is what differs around them.
    const changesFiles = calls.some((c) => c.tool?.tool.schema.kind === ToolKind.RESOURCE);
    if (changesFiles) session.checkpoints.before();
    let gated: Awaited<ReturnType<CallGate["run"]>>;
    try {
      gated = await gate.run();
    } finally {
      if (changesFiles) session.checkpoints.after(turnId);
    }
    if (gated === "cancelled") return cancel();

    // ---- 15. history ------------------------------------------------------------------------------------
    trace("15");
    session.conversation.append(forModels);
    session.log.appendUserMessage(
      turnId,
      calls.map((c) => resultBlock(c, false, result.candidate?.spec, calls.length)),
    );
    closed = true;

    // ---- 16. doom loop --------------------------------------------------------------------------------
    trace("16");
    let doomFired = false;
    for (const c of calls) {
      if (!c.tool || c.tool.tool.schema.kind === ToolKind.INTERACTIVE) continue;
      if (session.doom.record(callHash(c.tool.declaredName, c.args))) doomFired = true;
    }

    // ---- 17. bounds --------------------------------------------------------------------------------------
    trace("17");
    const bound =
      checkBounds({
        ...ctx.limits,
        turns: input.turnsBefore + 1,
        elapsedMs: deps.clock.now() - input.runStartedAt,
        cost: session.cost,
      }) ??
      // A sub-agent's inherited deadline (its parent's run ends then).
      (session.parent && session.runs.deadline !== undefined && deps.clock.now() >= session.runs.deadline
        ? "max_wall_clock_s"
        : undefined);

    // ---- 18. loop or stop ------------------------------------------------------------------------------
    trace("18");
    if (done.done) return { kind: "done" };
    const stop: StopReason | undefined = doomFired ? "doom_loop" : (gate.breakerTripped ?? bound);
    return stop ? { kind: "continue", stop } : { kind: "continue" };
  } catch (err) {
    if (closed) throw err;
    const detail = `kernel error: ${(err as Error).message}`;
    deps.log.error(
      "the turn failed after the model answered",
      { error: (err as Error).stack ?? String(err) },
      session.id,
    );
    try {
      openGate?.cancelRemaining();
      session.conversation.append(forModels);
      const uses = message.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : []));
      if (uses.length > 0) {
        session.log.appendUserMessage(
          turnId,
          uses.map((use, index) => {
            const c = calls.find((x) => x.block.id === use.id);
            return c?.result
              ? resultBlock(c, true, undefined, uses.length)
              : resultBlock(
                  {
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
                  },
                  true,
                  undefined,
                  uses.length,
                );
          }),
        );
      }
    } catch {
      // the file itself failed; the resume repair answers the calls instead
    }
    return { kind: "failed", detail };
  }
}

/** The turn's fixed facts, read from the session once, before step 1. */
function turnContext(session: Session, input: TurnInput, turnId: string): TurnContext {
  const { signal } = input;
  const p = session.profile;
  return {
    sessionId: session.id,
    ...(session.parentId !== undefined ? { parentSessionId: session.parentId } : {}),
    ancestors: session.ancestors,
    turnId,
    workingDirectory: session.workingDirectory,
    lockOwner: session.lockOwner,
    remainingDepth: session.remainingDepth,
    signal,
    ...(input.deadline !== undefined ? { deadline: input.deadline } : {}),
    tools: input.final ? [] : session.tools.declarations({ planMode: session.settings.planMode }),
    candidates: session.candidates(),
    limits: {
      ...(p.max_turns !== undefined ? { maxTurns: p.max_turns } : {}),
      ...(p.max_wall_clock_s !== undefined ? { maxWallClockS: p.max_wall_clock_s } : {}),
    },
    policy: session.policy,
    hook: { sessionId: session.id, turnId, workingDirectory: session.workingDirectory, signal },
  };
}

function persistAssistant(
  session: Session,
  turnId: string,
  candidate: ResolvedCandidate,
  completion: AccumulatedCompletion,
  syntheticReason: string,
): void {
  session.log.persistMessage(
    create(MessageEventSchema, {
      message: completion.message,
      turnId,
      model: { provider: candidate.provider.name, id: candidate.spec.id },
      usage: [...completion.usage],
      costUsd: completion.costUsd,
      ...(completion.providerRequestId ? { providerRequestId: completion.providerRequestId } : {}),
      ...(completion.stop ? { stop: completion.stop } : {}),
      ...(completion.metadata ? { metadata: completion.metadata } : {}),
      safetyNotices: [...completion.safetyNotices],
      syntheticReason,
    }),
    { providerName: candidate.provider.name, modelId: candidate.spec.id },
  );
}
