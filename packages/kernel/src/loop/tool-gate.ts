// Steps 7-14 of RunTurn, the tool gate every call goes through, whoever asked for it:
// the model (a turn's tool_use blocks) or the operator (a direct-invoke slash command or
// an action trigger, with no model turn).
//
//  7 pre-tool-call (each call)     11 plan-ready (policy, vetoes)
//  8 split by kind                 12 apply (per ConcurrencySpec, asks on the way)
//  9 data sources (prechecked)     13 post-tool-call (each result)
// 9b interactive (one by one)      14 post-apply
// 10 plan (snapshots, Preview)
//
// Every call ends with exactly one result, persisted as a tool_result event as soon as it
// is known. An interrupt makes run() answer "cancelled"; cancelRemaining() then gives
// every call still without a result a cancelled one and closes the plan's audit trail.
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import {
  narrowestScope,
  type PolicyCall,
  type PolicyEvaluation,
  protectedHitOf,
  riskNameOf,
  toPlanDecision,
} from "@pluggableharness/config";
import type { ContentBlock, ToolUseBlock } from "@pluggableharness/protocol/content";
import {
  ApplyEventSchema,
  PlanEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
} from "@pluggableharness/protocol/event";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
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
  type CallOutcomeKind,
  ConcurrencyScheduler,
  capRenderTree,
  checkToolCall,
  modelTextOf,
  toolErrorReaction,
} from "../domain/index.ts";
import { storedPlanEvent, storedToolCallEvent } from "../frontends/stored-inputs.ts";
import { callHash, type StopReason } from "./bounds.ts";
import type { LoopDeps } from "./deps.ts";
import type { AskResolution, Session } from "./session.ts";
import { buildToolCall, executeTool, type ToolExecution, type ToolOutcome, toolError } from "./tool-exec.ts";
import type { SessionTool } from "./tool-registry.ts";

export interface CallResult {
  readonly status: CallOutcomeKind;
  readonly outcome: ToolOutcome;
  readonly denied: boolean;
  readonly execution?: ToolExecution;
  /** The arguments the call ran with (a human's corrected input, when given). */
  readonly appliedArgs?: JsonObject;
}

export interface CallRecord {
  readonly index: number;
  /** The tool_use block (for an operator's call: one the kernel built, never put in history). */
  readonly block: ToolUseBlock;
  readonly tool?: SessionTool;
  args: JsonObject;
  invalid?: ToolError;
  vetoed?: { readonly by: string; readonly reason: string };
  item?: PlanItem;
  /** A kernel-owned path the call would write (the kernel refuses it before policy). */
  protectedHit?: { readonly path: string };
  result?: CallResult;
  resultPersisted: boolean;
  /** Whether post-tool-call may fire for it (it had a provider, kind and risk). */
  readonly hookable: boolean;
}

export interface GateInput {
  readonly turnId: string;
  readonly calls: readonly CallRecord[];
  readonly signal: AbortSignal;
  /** Run every call one at a time (a model without parallel tool calls). */
  readonly serializeAll: boolean;
  readonly trace: (step: string) => void;
  /** Right after a call's post-tool-call hook (the turn's done check listens here). */
  readonly onPostToolCall?: (call: CallRecord) => void;
}

/** One batch of calls through steps 7-14. */
export class CallGate {
  /** Set when a deny streak or a crash streak trips the session's breaker. */
  breakerTripped: StopReason | undefined;
  readonly #deps: LoopDeps;
  readonly #session: Session;
  readonly #input: GateInput;
  #plan: { items: PlanItem[]; persisted: boolean; applyPersisted: boolean } | undefined;

  constructor(deps: LoopDeps, session: Session, input: GateInput) {
    this.#deps = deps;
    this.#session = session;
    this.#input = input;
  }

  /** Records a call's one result (later ones are ignored) and persists its tool_result. */
  setResult(call: CallRecord, r: CallResult): void {
    if (call.result) return;
    call.result = r;
    if (
      r.execution &&
      call.tool &&
      this.#session.breaker.callEnded(call.tool.provider.name, r.execution.crashed)
    ) {
      this.breakerTripped ??= "crash_breaker";
    }
    persistToolResult(this.#session, this.#input.turnId, call);
  }

  /** After an interrupt: a cancelled result for every call without one, and the apply record. */
  cancelRemaining(): void {
    for (const c of this.#input.calls) if (!c.result) this.setResult(c, cancelledResult());
    const plan = this.#plan;
    if (plan?.persisted && !plan.applyPersisted) {
      persistApply(this.#session, this.#input.turnId, plan.items, this.#input.calls);
      plan.applyPersisted = true;
    }
  }

  async run(): Promise<"ok" | "cancelled"> {
    const deps = this.#deps;
    const session = this.#session;
    const { turnId, calls, signal, serializeAll, trace } = this.#input;
    const hookCtx = { sessionId: session.id, turnId, workingDirectory: session.workingDirectory, signal };
    const setResult = (c: CallRecord, r: CallResult) => this.setResult(c, r);
    const noteDecision = (c: CallRecord, denied: boolean) => {
      const call = denied && c.tool ? callHash(c.tool.declaredName, c.args) : undefined;
      if (session.breaker.decision(denied, call)) this.breakerTripped ??= "denial_breaker";
    };

    // ---- 7. pre-tool-call ----------------------------------------------------------------------
    trace("7");
    const toolCalls = new Map<CallRecord, ReturnType<typeof buildToolCall>>();
    const toolCallEvent = (c: CallRecord, tool: SessionTool) => {
      const call = buildToolCall(session, { callId: c.block.id, turnId, tool, args: c.args });
      toolCalls.set(c, call);
      const event = create(ToolCallEventSchema, {
        turnId,
        provider: tool.provider.name,
        call,
        kind: tool.tool.schema.kind,
        risk: tool.tool.schema.risk,
      });
      // Large arguments are stored once, in the assistant message (stored-inputs.ts).
      const stored = storedToolCallEvent(event);
      const live = toBinary(ToolCallEventSchema, event);
      return {
        kind: EventKind.TOOL_CALL,
        producer: toolProducer(deps, tool),
        payload: stored === event ? live : toBinary(ToolCallEventSchema, stored),
        live,
      };
    };
    // Each call is recorded before its pre-tool-call hook. With no subscriber to see one
    // before the next is recorded, the batch's tool_call events go to disk together, in
    // order, in one transaction (one sync instead of one per call).
    const eachRecordedAlone = deps.hooks.subscribers("pre-tool-call").length > 0;
    if (!eachRecordedAlone) {
      session.persistBatch(calls.flatMap((c) => (c.tool ? [toolCallEvent(c, c.tool)] : [])));
    }
    for (const c of calls) {
      if (!c.tool) continue;
      const schema = c.tool.tool.schema;
      if (eachRecordedAlone) {
        const e = toolCallEvent(c, c.tool);
        session.persist(e.kind, e.producer, e.payload, { live: e.live });
      }
      const toolCall = toolCalls.get(c)!;
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
      if (signal.aborted) return "cancelled";
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
        noteDecision(c, true);
        denied(c, c.vetoed.by, c.vetoed.reason);
        return false;
      }
      const schema = c.tool!.tool.schema;
      const verdict = session.policy.evaluate(
        policyCall(session, c, schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data_source"),
      );
      if (verdict.downgraded) {
        deps.log.warn(
          `policy rule "${verdict.rule}" resolved to ask for a ${schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data_source"} call; no apply step exists for it, so it is denied`,
          {
            tool: `${c.tool!.provider.name}.${schema.name}`,
          },
          session.id,
        );
      }
      noteDecision(c, verdict.decision !== "allow");
      if (verdict.decision !== "allow") {
        denied(
          c,
          verdict.rule,
          verdict.downgraded
            ? `policy rule "${verdict.rule}" asks, which a ${schema.kind === ToolKind.INTERACTIVE ? "interactive" : "data-source"} call cannot, so it is denied`
            : denyReason(verdict),
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
    if (signal.aborted) return "cancelled";

    // ---- 9b. interactive calls, one at a time through the frontend -------------------------------
    trace("9b");
    for (const c of interactive) {
      if (!precheck(c)) continue;
      await askInteractive(deps, session, turnId, c, signal, setResult);
      if (signal.aborted) return "cancelled";
    }

    // ---- 10. plan ----------------------------------------------------------------------------------
    trace("10");
    const planned = resources.filter((c) => !c.result);
    for (const c of planned) {
      const hit = protectedHitOf(c.args, session.workingDirectory, deps.protectedPaths);
      if (hit) c.protectedHit = hit;
    }
    const items = await Promise.all(planned.map((c) => buildPlanItem(deps, session, turnId, c, signal)));
    planned.forEach((c, i) => {
      c.item = items[i]!;
    });
    const plan: { items: PlanItem[]; persisted: boolean; applyPersisted: boolean } = {
      items,
      persisted: false,
      applyPersisted: false,
    };
    this.#plan = plan;
    if (signal.aborted) return "cancelled";

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
        // The kernel's own rule comes first and no policy or human answer overrides it.
        const hit = c.protectedHit;
        if (hit) {
          item.decision = PlanDecision.DENY;
          item.decidedBy = PROTECTED_PATHS_RULE;
          item.reason = protectedReason(hit.path);
          continue;
        }
        const call = policyCall(session, c, "resource");
        const verdict = session.policy.evaluate(call);
        item.decision = toPlanDecision(verdict.decision);
        item.decidedBy = verdict.rule === "default" ? "policy:default" : verdict.rule;
        if (verdict.decision === "deny") item.reason = denyReason(verdict);
        else if (verdict.decision === "ask") {
          if (verdict.note) item.reason = `asks because ${verdict.note}`;
          const remember = narrowestScope(call, { secretValues: deps.secretValues });
          if (remember.ok) item.rememberScope = remember.description;
          else item.rememberUnavailable = remember.reason;
        }
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
      if (signal.aborted) return "cancelled";
      const planMessage = create(PlanSchema, { turnId, items });
      const planEvent = create(PlanEventSchema, { plan: planMessage });
      const storedPlan = storedPlanEvent(planEvent);
      session.persist(EventKind.PLAN, deps.kernelProducer, toBinary(PlanEventSchema, storedPlan), {
        planItems: planItemEntriesFromPlan(planMessage),
        ...(storedPlan === planEvent ? {} : { live: toBinary(PlanEventSchema, planEvent) }),
      });
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
            noteDecision(c, d.decision === "deny");
            if (d.decision === "deny") return denied(c, d.decidedBy, d.reason ?? "denied");
            if (signal.aborted) return setResult(c, cancelledResult());
            if (d.correctedInput) {
              const hit = protectedHitOf(d.correctedInput, session.workingDirectory, deps.protectedPaths);
              if (hit) return denied(c, PROTECTED_PATHS_RULE, protectedReason(hit.path));
            }
            await execute(c, d.correctedInput ?? c.args);
          }),
        ),
      );
      persistApply(session, turnId, items, calls, applied);
      plan.applyPersisted = true;
      if (signal.aborted) return "cancelled";
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
      this.#input.onPostToolCall?.(c);
      if (signal.aborted) return "cancelled";
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

    // A turn that met a denial, whatever else it ran, counts toward the denial breaker.
    if (session.breaker.turnEnded(calls.some((c) => c.result?.denied === true)))
      this.breakerTripped ??= "denial_breaker";
    return "ok";
  }
}

/** The kernel's rule for its own files; shown as the decider of every plan item it refuses. */
export const PROTECTED_PATHS_RULE = "kernel:protected_paths";

function protectedReason(path: string): string {
  return `${path} belongs to the agent itself (its configuration, policy, lock file, state or cache); no tool call may change it, whatever the policy or an approval says`;
}

function denyReason(v: PolicyEvaluation): string {
  const what = v.command ? ` for \`${v.command}\`` : "";
  return `denied by policy rule "${v.rule}"${what}${v.note ? ` (${v.note})` : ""}`;
}

/** What policy sees of a call: its kind, provider, tool, risk, arguments and working directory. */
export function policyCall(session: Session, c: CallRecord, kind: PolicyCall["kind"]): PolicyCall {
  const schema = c.tool!.tool.schema;
  const risk = riskNameOf(schema.risk);
  return {
    kind,
    provider: c.tool!.provider.name,
    tool_name: schema.name,
    ...(risk ? { risk } : {}),
    args: c.args,
    cwd: session.workingDirectory,
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

/** What the model is told about a call's result, and whether it counts as an error. */
export function resultText(call: CallRecord, turnAborted: boolean): { content: string; isError: boolean } {
  const r = call.result!;
  if (r.outcome.kind === "result")
    return { content: modelTextOf(r.outcome.payload, call.tool?.tool.schema), isError: false };
  if (r.denied) return { content: `Denied: ${r.outcome.error.message}`, isError: true };
  const e = r.outcome.error;
  const category = ToolErrorCategory[e.category]?.toLowerCase() ?? "unknown";
  const presentation = call.tool
    ? toolErrorReaction(e, call.tool.tool.schema, { turnAborted }).presentation
    : "error_result";
  let content = presentation === "not_a_failure" ? `cancelled: ${e.message}` : `${category}: ${e.message}`;
  const already = outputText(r.execution);
  if (already && (r.status === "cancelled" || e.category === ToolErrorCategory.PROCESS_CRASHED)) {
    content += `\nOutput before the call stopped:\n${already}`;
  }
  return { content, isError: presentation === "error_result" };
}

/** The tool_result block the model sees for a call. */
export function resultBlock(call: CallRecord, turnAborted: boolean): ContentBlock {
  const { content, isError } = resultText(call, turnAborted);
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

function persistToolResult(session: Session, turnId: string, call: CallRecord): void {
  if (call.resultPersisted || !call.result) return;
  call.resultPersisted = true;
  const r = call.result;
  const exec = r.execution;
  const deps = session.deps;
  // Results of parallel calls often arrive together: they share a transaction.
  session.persistSoon(
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
  // A call the kernel refuses outright is never previewed: nothing of it runs.
  const preview = c.protectedHit ? undefined : await previewOf(deps, session, turnId, tool, c, signal);
  if (preview) item.preview = capRenderTree(preview);
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
