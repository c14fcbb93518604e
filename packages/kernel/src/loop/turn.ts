// RunTurn: the eighteen steps of one turn, in order.
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
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { riskNameOf, toPlanDecision } from "@pluggableharness/config";
import type { ContentBlock, ToolUseBlock } from "@pluggableharness/protocol/content";
import {
  ApplyEventSchema,
  MessageEventSchema,
  PlanEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { ModelTarget } from "@pluggableharness/protocol/model";
import {
  ApplyItemResultSchema,
  ApplyOutcome,
  ApplyResultSchema,
  PlanDecision,
  type PlanItem,
  PlanItemSchema,
  PlanSchema,
} from "@pluggableharness/protocol/plan";
import { RenderTreeSchema, TextStyle } from "@pluggableharness/protocol/render";
import { type ToolError, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { planItemEntriesFromPlan } from "@pluggableharness/state";
import {
  type AccumulatedCompletion,
  type CallOutcomeKind,
  ConcurrencyScheduler,
  checkDone,
  checkToolCall,
  serializeAllFor,
  TurnDoneTracker,
  toolErrorReaction,
  toolListFingerprint,
} from "../domain/index.ts";
import { callHash, checkBounds, type StopReason } from "./bounds.ts";
import { assembleContext } from "./context-assembly.ts";
import type { LoopDeps } from "./deps.ts";
import { callModel, estimateInputTokens, type ResolvedCandidate, routeCandidates } from "./model-call.ts";
import type { AskResolution, Session } from "./session.ts";
import { buildToolCall, executeTool, type ToolExecution, type ToolOutcome, toolError } from "./tool-exec.ts";
import type { SessionTool } from "./tool-registry.ts";

export type TurnOutcome =
  | { readonly kind: "done" }
  | { readonly kind: "continue"; readonly stop?: StopReason }
  | { readonly kind: "cancelled" }
  | { readonly kind: "failed"; readonly detail: string };

export interface TurnInput {
  /** The turn's ULID (generated when absent). */
  readonly turnId?: string;
  readonly signal: AbortSignal;
  /** Set on the final-answer turn a guard forced: every tool spec is withheld. */
  readonly final?: StopReason;
  /** Turns completed in this run before this one (for the bounds check). */
  readonly turnsBefore: number;
  /** When this run started (ms), for max_wall_clock_s. */
  readonly runStartedAt: number;
}

interface CallResult {
  readonly status: CallOutcomeKind;
  readonly outcome: ToolOutcome;
  readonly denied: boolean;
  readonly execution?: ToolExecution;
  /** The arguments the call ran with (a human's corrected input, when given). */
  readonly appliedArgs?: JsonObject;
}

interface CallRecord {
  readonly index: number;
  readonly block: ToolUseBlock;
  readonly tool?: SessionTool;
  args: JsonObject;
  invalid?: ToolError;
  vetoed?: { readonly by: string; readonly reason: string };
  item?: PlanItem;
  result?: CallResult;
  resultPersisted: boolean;
  /** Whether post-tool-call may fire for it (it had a provider, kind and risk). */
  readonly hookable: boolean;
}

/** The model target context providers assemble for. */
function modelTarget(deps: LoopDeps, c: ResolvedCandidate, toolTokens: number): ModelTarget {
  const window = Number(c.spec.contextWindow);
  const reserved = Math.max(
    deps.limits.reservedOutputTokens,
    Number(c.params?.maxOutputTokens ?? 0n) ||
      Math.min(Number(c.spec.maxOutputTokens), deps.limits.reservedOutputTokens),
  );
  return {
    $typeName: "pluggableharness.model.v1.ModelTarget",
    provider: c.provider.name,
    id: c.spec.id,
    contextWindow: c.spec.contextWindow,
    effectiveCeiling: BigInt(Math.max(0, window - reserved - toolTokens)),
  };
}

function text(t: string): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: { case: "text", value: { $typeName: "pluggableharness.content.v1.TextBlock", text: t } },
  };
}

function outputText(exec: ToolExecution | undefined): string {
  if (!exec || exec.output.length === 0) return "";
  const decoder = new TextDecoder();
  return exec.output.map((c) => decoder.decode(c.data)).join("");
}

/** The tool_result block the model sees for a call. */
function resultBlock(call: CallRecord, turnAborted: boolean): ContentBlock {
  const r = call.result!;
  let content: string;
  let isError: boolean;
  if (r.outcome.kind === "result") {
    content = JSON.stringify(r.outcome.payload);
    isError = false;
  } else if (r.denied) {
    content = `Denied: ${r.outcome.error.message}`;
    isError = true;
  } else {
    const e = r.outcome.error;
    const category = ToolErrorCategory[e.category]?.toLowerCase() ?? "unknown";
    const presentation = call.tool
      ? toolErrorReaction(e, call.tool.tool.schema, { turnAborted }).presentation
      : "error_result";
    isError = presentation === "error_result";
    content = presentation === "not_a_failure" ? `cancelled: ${e.message}` : `${category}: ${e.message}`;
    const already = outputText(r.execution);
    if (already && (r.status === "cancelled" || e.category === ToolErrorCategory.PROCESS_CRASHED)) {
      content += `\nOutput before the call stopped:\n${already}`;
    }
  }
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: {
      case: "toolResult",
      value: {
        $typeName: "pluggableharness.content.v1.ToolResultBlock",
        toolUseId: call.block.id,
        content: [text(content)],
        isError,
      },
    },
  };
}

export async function runTurn(deps: LoopDeps, session: Session, input: TurnInput): Promise<TurnOutcome> {
  const turnId = input.turnId ?? deps.newId();
  const signal = input.signal;
  const trace = (step: string) => deps.trace({ name: "step", sessionId: session.id, turnId, step });
  const hookCtx = { sessionId: session.id, turnId, workingDirectory: session.workingDirectory, signal };
  deps.trace({
    name: "turn.begin",
    sessionId: session.id,
    turnId,
    ...(input.final ? { attrs: { final: input.final } } : {}),
  });

  // ---- 1. context-assemble -------------------------------------------------------------
  trace("1");
  const tools = input.final ? [] : session.tools.declarations({ planMode: session.planMode });
  const declared = new Set(tools.map((t) => t.name));
  const candidates = session.candidates();
  const historyTokens = Number(estimateInputTokens(session.history, [], []));
  const pre = routeCandidates(deps, candidates, 0, {
    inputTokens: estimateInputTokens(session.history, [], tools),
    messages: session.history,
    tools,
  });
  if (!pre.chosen) {
    return {
      kind: "failed",
      detail: `routing_exhausted: no model in the chain can serve this turn: ${pre.skipped.join("; ") || "the chain is empty"}`,
    };
  }
  const toolTokens = Number(estimateInputTokens([], [], tools));
  const assembled = await assembleContext(deps, session, {
    turnId,
    target: modelTarget(deps, pre.chosen, toolTokens),
    history: session.history,
    historyTokens,
    signal,
  });
  if (assembled.rewrittenHistory) session.history = assembled.rewrittenHistory;
  session.assembledTokensLastTurn = assembled.totalTokens;
  if (signal.aborted) return { kind: "cancelled" };

  // ---- 2. pre-model-call ------------------------------------------------------------------
  trace("2");
  const preModel = await deps.hooks.dispatch(
    "pre-model-call",
    create(HookPayloadSchema, {
      point: {
        case: "preModelCall",
        value: {
          model: { provider: pre.chosen.provider.name, id: pre.chosen.spec.id },
          messages: session.history,
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
  const messages =
    preModel.payload.point.case === "preModelCall" ? preModel.payload.point.value.messages : session.history;

  // ---- 3-4. model call and accumulation -----------------------------------------------------
  trace("3");
  const result = await callModel(deps, session, {
    turnId,
    candidates,
    messages,
    tools,
    sections: assembled.sections,
    ...(session.previousToolsFingerprint !== undefined
      ? { previousToolsFingerprint: session.previousToolsFingerprint }
      : {}),
    signal,
  });
  session.previousToolsFingerprint = toolListFingerprint(tools);
  if (result.kind === "failed")
    return { kind: "failed", detail: `model_error ${result.category}: ${result.message}` };
  if (result.kind === "cancelled") {
    if (result.completion && result.candidate) {
      const partial = result.completion;
      persistAssistant(session, turnId, result.candidate, partial, "cancelled");
      session.history.push(partial.message);
      const uses = partial.message.content.filter((b) => b.block.case === "toolUse");
      if (uses.length > 0) {
        session.appendUserMessage(
          turnId,
          uses.map((b) => {
            const use = b.block.value as ToolUseBlock;
            const call: CallRecord = {
              index: 0,
              block: use,
              args: use.input ?? {},
              resultPersisted: true,
              hookable: false,
              result: cancelledResult(),
            };
            return resultBlock(call, true);
          }),
        );
      }
    }
    return { kind: "cancelled" };
  }
  trace("4");
  const completion = result.completion;
  const message = completion.message;
  persistAssistant(
    session,
    turnId,
    result.candidate,
    completion,
    input.final ? `final_answer:${input.final}` : "",
  );

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
    session.history.push(message);
    trace("18");
    return { kind: "done" };
  }
  const done = new TurnDoneTracker(check);
  const calls: CallRecord[] = check.toolUses.map((u, index) => {
    const block = message.content.find((b) => b.block.case === "toolUse" && b.block.value.id === u.id)!.block
      .value as ToolUseBlock;
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
  let breakerTripped: StopReason | undefined;
  const noteDecision = (denied: boolean) => {
    if (session.breaker.decision(denied)) breakerTripped ??= "denial_breaker";
  };
  const setResult = (call: CallRecord, r: CallResult) => {
    if (call.result) return;
    call.result = r;
    if (r.execution && call.tool && session.breaker.callEnded(call.tool.provider.name, r.execution.crashed)) {
      breakerTripped ??= "crash_breaker";
    }
    persistToolResult(session, turnId, call);
  };
  for (const c of calls) {
    if (!c.tool) {
      setResult(c, {
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

  let plan: { items: PlanItem[]; persisted: boolean; applyPersisted: boolean } | undefined;
  const cancel = (): TurnOutcome => {
    for (const c of calls) if (!c.result) setResult(c, cancelledResult());
    if (plan?.persisted && !plan.applyPersisted) persistApply(session, turnId, plan.items, calls);
    session.history.push(message);
    session.appendUserMessage(
      turnId,
      calls.map((c) => resultBlock(c, true)),
    );
    return { kind: "cancelled" };
  };

  // ---- 7. pre-tool-call ----------------------------------------------------------------------
  trace("7");
  for (const c of calls) {
    if (!c.tool) continue;
    const schema = c.tool.tool.schema;
    const toolCall = buildToolCall(session, { callId: c.block.id, turnId, tool: c.tool, args: c.args });
    session.persist(
      EventKind.TOOL_CALL,
      toolProducer(deps, c.tool),
      toBinary(
        ToolCallEventSchema,
        create(ToolCallEventSchema, {
          turnId,
          provider: c.tool.provider.name,
          call: toolCall,
          kind: schema.kind,
          risk: schema.risk,
        }),
      ),
    );
    const veto = await deps.hooks.dispatch(
      "pre-tool-call",
      create(HookPayloadSchema, {
        point: {
          case: "preToolCall",
          value: { provider: c.tool.provider.name, call: toolCall, kind: schema.kind, risk: schema.risk },
        },
      }),
      hookCtx,
    );
    if (signal.aborted) return cancel();
    if (veto.decision === "deny")
      c.vetoed = { by: veto.deniedBy ?? "hook", reason: veto.reason ?? "vetoed at pre-tool-call" };
  }
  for (const c of calls) {
    if (!c.tool) continue;
    // Arguments the model could not form, or that fail the input schema, never reach
    // the gate: the model gets an invalid_arguments result to correct itself.
    const invalid =
      c.invalid ??
      checkToolCall(
        buildToolCall(session, { callId: c.block.id, turnId, tool: c.tool, args: c.args }),
        c.tool.tool,
      );
    if (invalid)
      setResult(c, { status: "failed", denied: false, outcome: { kind: "error", error: invalid } });
  }

  // ---- 8. split by kind ----------------------------------------------------------------------
  trace("8");
  const ofKind = (k: ToolKind) => calls.filter((c) => c.tool?.tool.schema.kind === k);
  const dataSources = ofKind(ToolKind.DATA_SOURCE);
  const interactive = ofKind(ToolKind.INTERACTIVE);
  const resources = ofKind(ToolKind.RESOURCE);
  const serializeAll = serializeAllFor(result.candidate.spec);

  const denied = (c: CallRecord, by: string, reason: string) =>
    setResult(c, {
      status: "denied",
      denied: true,
      outcome: {
        kind: "error",
        error: toolError(ToolErrorCategory.PERMISSION_DENIED, `${reason} (decided by ${by})`),
      },
    });
  /** The data-source/interactive precheck: allow or deny, an ask having been downgraded. */
  const precheck = (c: CallRecord): boolean => {
    if (c.result) return false;
    if (c.vetoed) {
      noteDecision(true);
      denied(c, c.vetoed.by, c.vetoed.reason);
      return false;
    }
    const schema = c.tool!.tool.schema;
    const verdict = session.policy.evaluate({
      kind: schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data_source",
      provider: c.tool!.provider.name,
      tool_name: schema.name,
      ...(riskNameOf(schema.risk) ? { risk: riskNameOf(schema.risk)! } : {}),
    });
    if (verdict.downgraded) {
      deps.log.warn(
        `policy rule "${verdict.rule}" resolved to ask for a ${schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data_source"} call; no apply step exists for it, so it is denied`,
        {
          tool: `${c.tool!.provider.name}.${schema.name}`,
        },
        session.id,
      );
    }
    noteDecision(verdict.decision !== "allow");
    if (verdict.decision !== "allow") {
      denied(
        c,
        verdict.rule,
        verdict.downgraded
          ? `policy rule "${verdict.rule}" asks, which a ${schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data-source"} call cannot, so it is denied`
          : `denied by policy rule "${verdict.rule}"`,
      );
      return false;
    }
    return true;
  };
  const execute = async (c: CallRecord, args: JsonObject): Promise<void> => {
    const exec = await executeTool(deps, session, {
      callId: c.block.id,
      turnId,
      tool: c.tool!,
      args,
      signal,
    });
    const status: CallOutcomeKind = exec.cancelled
      ? "cancelled"
      : exec.outcome.kind === "result"
        ? "succeeded"
        : "failed";
    setResult(c, { status, denied: false, outcome: exec.outcome, execution: exec, appliedArgs: args });
  };

  // ---- 9. data sources, concurrently per ConcurrencySpec --------------------------------------
  trace("9");
  {
    const scheduler = new ConcurrencyScheduler({ serializeAll });
    await Promise.all(
      dataSources
        .filter((c) => precheck(c))
        .map((c) =>
          scheduler.submit({ id: c.block.id, tool: c.tool!.tool, arguments: c.args }, () =>
            execute(c, c.args),
          ),
        ),
    );
  }
  if (signal.aborted) return cancel();

  // ---- 9b. interactive calls, one at a time through the frontend -------------------------------
  trace("9b");
  for (const c of interactive) {
    if (!precheck(c)) continue;
    await askInteractive(deps, session, turnId, c, signal, setResult);
    if (signal.aborted) return cancel();
  }

  // ---- 10. plan ----------------------------------------------------------------------------------
  trace("10");
  const planned = resources.filter((c) => !c.result);
  const items = await Promise.all(planned.map((c) => buildPlanItem(deps, session, turnId, c, signal)));
  planned.forEach((c, i) => {
    c.item = items[i]!;
  });
  plan = { items, persisted: false, applyPersisted: false };
  if (signal.aborted) return cancel();

  if (items.length > 0) {
    // ---- 11. plan-ready: policy first (per item), then third-party veto subscribers ------------
    trace("11");
    for (const c of planned) {
      const item = c.item!;
      if (c.vetoed) {
        item.decision = PlanDecision.DENY;
        item.decidedBy = c.vetoed.by;
        item.reason = c.vetoed.reason;
        continue;
      }
      const schema = c.tool!.tool.schema;
      const verdict = session.policy.evaluate({
        kind: "resource",
        provider: c.tool!.provider.name,
        tool_name: schema.name,
        ...(riskNameOf(schema.risk) ? { risk: riskNameOf(schema.risk)! } : {}),
      });
      item.decision = toPlanDecision(verdict.decision);
      item.decidedBy = verdict.rule === "default" ? "policy:default" : verdict.rule;
      if (verdict.decision === "deny") item.reason = `denied by policy rule "${verdict.rule}"`;
    }
    if (items.some((i) => i.decision !== PlanDecision.DENY)) {
      const vetoOutcome = await deps.hooks.dispatch(
        "plan-ready",
        create(HookPayloadSchema, {
          point: { case: "planReady", value: { plan: create(PlanSchema, { turnId, items }) } },
        }),
        hookCtx,
      );
      if (vetoOutcome.decision === "deny") {
        for (const item of items) {
          if (item.decision === PlanDecision.DENY) continue;
          item.decision = PlanDecision.DENY;
          item.decidedBy = vetoOutcome.deniedBy ?? "hook";
          item.reason = vetoOutcome.reason ?? "vetoed at plan-ready";
        }
      }
    }
    if (signal.aborted) return cancel();
    const planMessage = create(PlanSchema, { turnId, items });
    session.persist(
      EventKind.PLAN,
      deps.kernelProducer,
      toBinary(PlanEventSchema, create(PlanEventSchema, { plan: planMessage })),
      {
        planItems: planItemEntriesFromPlan(planMessage),
      },
    );
    plan.persisted = true;
    session.channel.publish({ event: { case: "planReady", value: { plan: planMessage } } });

    // ---- 12. apply allowed items per ConcurrencySpec -------------------------------------------
    trace("12");
    const decisions = planned.map((c): Promise<AskResolution> => {
      const item = c.item!;
      if (item.decision === PlanDecision.ALLOW)
        return Promise.resolve({ decision: "allow", decidedBy: item.decidedBy });
      if (item.decision === PlanDecision.DENY) {
        return Promise.resolve({
          decision: "deny",
          decidedBy: item.decidedBy,
          reason: item.reason ?? "denied",
        });
      }
      return session.ask(item, c.tool!, signal);
    });
    const applied = new Map<CallRecord, AskResolution>();
    const scheduler = new ConcurrencyScheduler({ serializeAll });
    await Promise.all(
      planned.map((c, i) =>
        scheduler.submit({ id: c.block.id, tool: c.tool!.tool, arguments: c.args }, async () => {
          const d = await decisions[i]!;
          applied.set(c, d);
          if (d.decision === "cancelled") return setResult(c, cancelledResult());
          noteDecision(d.decision === "deny");
          if (d.decision === "deny") return denied(c, d.decidedBy, d.reason ?? "denied");
          if (signal.aborted) return setResult(c, cancelledResult());
          await execute(c, d.correctedInput ?? c.args);
        }),
      ),
    );
    persistApply(session, turnId, items, calls, applied);
    plan.applyPersisted = true;
    if (signal.aborted) return cancel();
  } else {
    trace("11");
    trace("12");
  }

  // ---- 13. post-tool-call, data sources, then interactive, then resources -----------------------
  trace("13");
  for (const c of [...dataSources, ...interactive, ...resources]) {
    const r = c.result!;
    if (!c.hookable || !c.tool) continue;
    const toolCall = buildToolCall(session, {
      callId: c.block.id,
      turnId,
      tool: c.tool,
      args: r.appliedArgs ?? c.args,
    });
    await deps.hooks.dispatch(
      "post-tool-call",
      create(HookPayloadSchema, {
        point: {
          case: "postToolCall",
          value: {
            provider: c.tool.provider.name,
            call: toolCall,
            outcome:
              r.outcome.kind === "result"
                ? { case: "result", value: { payload: r.outcome.payload } }
                : { case: "error", value: r.outcome.error },
          },
        },
      }),
      hookCtx,
    );
    done.postToolCallFired(c.block.id, r.status);
    if (signal.aborted) return cancel();
  }

  // ---- 14. post-apply ------------------------------------------------------------------------------
  trace("14");
  if (items.length > 0) {
    await deps.hooks.dispatch(
      "post-apply",
      create(HookPayloadSchema, {
        point: { case: "postApply", value: { apply: applyResult(turnId, items, calls) } },
      }),
      hookCtx,
    );
  }

  // ---- 15. history ------------------------------------------------------------------------------------
  trace("15");
  session.history.push(message);
  session.appendUserMessage(
    turnId,
    calls.map((c) => resultBlock(c, false)),
  );

  // ---- 16. doom loop --------------------------------------------------------------------------------
  trace("16");
  let doomFired = false;
  for (const c of calls) {
    if (!c.tool || c.tool.tool.schema.kind === ToolKind.INTERACTIVE) continue;
    if (session.doom.record(callHash(c.tool.declaredName, c.args))) doomFired = true;
  }

  // ---- 17. bounds --------------------------------------------------------------------------------------
  trace("17");
  const bound = checkBounds({
    ...(session.profile.max_turns !== undefined ? { maxTurns: session.profile.max_turns } : {}),
    ...(session.profile.max_wall_clock_s !== undefined
      ? { maxWallClockS: session.profile.max_wall_clock_s }
      : {}),
    turns: input.turnsBefore + 1,
    elapsedMs: deps.clock.now() - input.runStartedAt,
    cost: session.cost,
  });

  // ---- 18. loop or stop ------------------------------------------------------------------------------
  trace("18");
  if (done.done) return { kind: "done" };
  const stop: StopReason | undefined = doomFired ? "doom_loop" : (breakerTripped ?? bound);
  return stop ? { kind: "continue", stop } : { kind: "continue" };
}

function cancelledResult(): CallResult {
  return {
    status: "cancelled",
    denied: false,
    outcome: {
      kind: "error",
      error: toolError(ToolErrorCategory.CANCELLED, "the turn was interrupted before the call completed"),
    },
  };
}

function toolProducer(deps: LoopDeps, tool: SessionTool) {
  return tool.provider.producers["tool"] ?? deps.kernelProducer;
}

function persistAssistant(
  session: Session,
  turnId: string,
  candidate: ResolvedCandidate,
  completion: AccumulatedCompletion,
  syntheticReason: string,
): void {
  session.persistMessage(
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

function persistToolResult(session: Session, turnId: string, call: CallRecord): void {
  if (call.resultPersisted || !call.result) return;
  call.resultPersisted = true;
  const r = call.result;
  const exec = r.execution;
  const deps = session.deps;
  session.persist(
    EventKind.TOOL_RESULT,
    call.tool ? toolProducer(deps, call.tool) : deps.kernelProducer,
    toBinary(
      ToolResultEventSchema,
      create(ToolResultEventSchema, {
        turnId,
        provider: call.tool?.provider.name ?? "",
        toolCallId: call.block.id,
        toolName: call.tool?.tool.schema.name ?? call.block.name,
        outcome:
          r.outcome.kind === "result"
            ? { case: "result", value: { payload: r.outcome.payload } }
            : { case: "error", value: r.outcome.error },
        output: exec?.output ?? [],
        ...(exec?.exitStatus ? { exitStatus: exec.exitStatus } : {}),
        partialResults: exec?.partials ?? [],
        duration: durationFromMs(exec?.durationMs ?? 0),
        denied: r.denied,
        attempts: Math.max(0, (exec?.attempts ?? 1) - 1),
      }),
    ),
  );
}

function applyResult(
  turnId: string,
  items: readonly PlanItem[],
  calls: readonly CallRecord[],
  applied?: ReadonlyMap<CallRecord, AskResolution>,
) {
  return create(ApplyResultSchema, {
    turnId,
    items: items.map((item) => {
      const call = calls.find((c) => c.item === item)!;
      const r = call.result;
      const d = applied?.get(call);
      const outcome = !r
        ? ApplyOutcome.CANCELLED
        : r.status === "succeeded"
          ? ApplyOutcome.APPLIED
          : r.status === "denied"
            ? ApplyOutcome.DENIED
            : r.status === "cancelled"
              ? ApplyOutcome.CANCELLED
              : ApplyOutcome.FAILED;
      const decision =
        d?.decision === "allow"
          ? PlanDecision.ALLOW
          : d?.decision === "deny"
            ? PlanDecision.DENY
            : item.decision;
      return create(ApplyItemResultSchema, {
        planItemId: item.id,
        toolCallId: item.toolCallId,
        outcome,
        decision,
        decidedBy: d?.decidedBy ?? item.decidedBy,
        ...(d?.correctedInput ? { appliedInput: d.correctedInput } : {}),
        ...(r && r.outcome.kind === "error" ? { error: r.outcome.error } : {}),
      });
    }),
  });
}

function persistApply(
  session: Session,
  turnId: string,
  items: readonly PlanItem[],
  calls: readonly CallRecord[],
  applied?: ReadonlyMap<CallRecord, AskResolution>,
): void {
  session.persist(
    EventKind.APPLY,
    session.deps.kernelProducer,
    toBinary(
      ApplyEventSchema,
      create(ApplyEventSchema, { apply: applyResult(turnId, items, calls, applied) }),
    ),
  );
}

/** Step 10 for one resource call: the plan item with its snapshot fields and, when offered, a Preview. */
async function buildPlanItem(
  deps: LoopDeps,
  session: Session,
  turnId: string,
  c: CallRecord,
  signal: AbortSignal,
): Promise<PlanItem> {
  const tool = c.tool!;
  const schema = tool.tool.schema;
  const item = create(PlanItemSchema, {
    id: deps.newId(),
    toolCallId: c.block.id,
    provider: tool.provider.name,
    toolName: schema.name,
    input: c.args,
    decision: PlanDecision.PENDING,
    decidedBy: "",
    kind: schema.kind,
    risk: schema.risk,
    description: schema.description,
  });
  const preview = await previewOf(deps, session, turnId, tool, c, signal);
  if (preview) item.preview = preview;
  return item;
}

async function previewOf(
  deps: LoopDeps,
  session: Session,
  turnId: string,
  tool: SessionTool,
  c: CallRecord,
  signal: AbortSignal,
) {
  if (!tool.provider.previewSupported.has(tool.tool.schema.name)) return undefined;
  try {
    const res = await deps.tracker.run(tool.provider.name, session.id, "tool", () =>
      tool.provider.tool.preview(
        { call: buildToolCall(session, { callId: c.block.id, turnId, tool, args: c.args }) },
        { timeoutMs: deps.limits.previewTimeoutMs, signal },
      ),
    );
    return res.preview;
  } catch (err) {
    deps.log.debug(
      `Preview of ${tool.provider.name}.${tool.tool.schema.name} gave nothing`,
      {
        error: (err as Error).message,
      },
      session.id,
    );
    return undefined;
  }
}

/** Step 9b for one interactive call: the question goes to the attached human; the answer is the result. */
async function askInteractive(
  deps: LoopDeps,
  session: Session,
  turnId: string,
  c: CallRecord,
  signal: AbortSignal,
  setResult: (c: CallRecord, r: CallResult) => void,
): Promise<void> {
  const tool = c.tool!;
  const schema = tool.tool.schema;
  const prompt =
    (await previewOf(deps, session, turnId, tool, c, signal)) ??
    create(RenderTreeSchema, {
      root: {
        node: {
          case: "group",
          value: {
            children: [
              { node: { case: "text", value: { content: schema.description, style: TextStyle.BOLD } } },
              {
                node: {
                  case: "codeBlock",
                  value: { content: JSON.stringify(c.args, null, 2), language: "json" },
                },
              },
            ],
          },
        },
      },
    });
  const answer = await session.question(
    c.block.id,
    {
      event: {
        case: "interactiveRequest",
        value: {
          callId: c.block.id,
          toolName: schema.name,
          prompt,
          provider: tool.provider.name,
          ...(schema.outputSchema ? { responseSchema: schema.outputSchema } : {}),
        },
      },
    },
    tool,
    signal,
  );
  if (answer.kind === "cancelled") return setResult(c, cancelledResult());
  if (answer.kind === "unanswered") {
    return setResult(c, {
      status: "denied",
      denied: true,
      outcome: { kind: "error", error: toolError(ToolErrorCategory.PERMISSION_DENIED, answer.reason) },
    });
  }
  setResult(c, {
    status: "succeeded",
    denied: false,
    outcome: { kind: "result", payload: answer.payload },
    appliedArgs: c.args,
  });
}
