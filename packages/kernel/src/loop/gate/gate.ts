// The plan/apply gate: steps 7-14 of RunTurn, which every tool call goes through, whoever
// asked for it: the model (a turn's tool_use blocks) or the operator (a direct-invoke
// slash command or an action trigger, with no model turn). run() reads as the spec lists
// the steps:
//
//  7 pre-tool-call (each call), then each call's arguments checked, once
//  8 split by kind                 11 plan-ready (policy per item, then vetoes)
//  9 data sources (admitted)       12 apply (per ConcurrencySpec, asks on the way)
// 9b interactive (one by one)      13 post-tool-call (each result)
// 10 plan (snapshots, Preview)     14 post-apply
//
// Every call ends with exactly one result, persisted as a tool_result event as soon as it
// is known. An interrupt makes run() answer "cancelled"; cancelRemaining() then gives
// every call still without a result a cancelled one and closes the plan's audit trail.
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { protectedHitOf } from "@pluggableharness/config";
import { ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { ChildDenialSchema, EventKind } from "@pluggableharness/protocol/kernel";
import { PlanDecision, type PlanItem, PlanSchema } from "@pluggableharness/protocol/plan";
import { type ToolCall, ToolKind } from "@pluggableharness/protocol/tool";
import { ConcurrencyScheduler, canonicalJson, checkToolCall, lockClaim } from "../../domain/index.ts";
import { callRisk } from "../../subagents/risk.ts";
import type { Telemetry } from "../../telemetry/telemetry.ts";
import type { LoopDeps } from "../deps.ts";
import type { AskResolution, CallContext, TurnPorts } from "../ports.ts";
import type { SessionTool } from "../tool-registry.ts";
import { callHash, type StopReason } from "../turn/bounds.ts";
import { storedToolCallEvent } from "../turn/stored-events.ts";
import { buildToolCall, executeTool } from "../turn/tool-exec.ts";
import {
  type CallRecord,
  type CallResult,
  cancelledResult,
  deniedResult,
  executedResult,
  failedResult,
  persistToolResult,
  toolProducer,
} from "./call.ts";
import { askInteractive } from "./interactive.ts";
import { applyResult, buildPlanItem, type PlanState, persistApply, persistPlan } from "./plan.ts";
import { admitUnplanned, decidePlanItem, PROTECTED_PATHS_RULE, protectedReason } from "./policy.ts";

/** One batch of calls; the turn id, the signal and the session's place come in the CallContext. */
export interface GateInput {
  readonly calls: readonly CallRecord[];
  /** Run every call one at a time (a model without parallel tool calls). */
  readonly serializeAll: boolean;
  readonly trace: (step: string) => void;
  /** Right after a call's post-tool-call hook (the turn's done check listens here). */
  readonly onPostToolCall?: (call: CallRecord) => void;
}

type Step = "ok" | "cancelled";

/** The calls of one batch by kind (step 8). */
interface Batch {
  readonly dataSources: readonly CallRecord[];
  readonly interactive: readonly CallRecord[];
  readonly resources: readonly CallRecord[];
}

/** One batch of calls through steps 7-14. */
export class CallGate {
  /** Set when a deny streak or a crash streak trips the session's breaker. */
  breakerTripped: StopReason | undefined;
  readonly #deps: LoopDeps;
  readonly #ctx: CallContext;
  readonly #ports: TurnPorts;
  readonly #input: GateInput;
  /** The ToolCall each call's hooks, Preview and Invoke see, built once in step 7. */
  readonly #toolCalls = new Map<CallRecord, ToolCall>();
  #plan: PlanState | undefined;
  /** How each plan item's decision was settled in step 12 (an ask's answer). */
  readonly #applied = new Map<CallRecord, AskResolution>();

  constructor(deps: LoopDeps, ctx: CallContext, ports: TurnPorts, input: GateInput) {
    this.#deps = deps;
    this.#ctx = ctx;
    this.#ports = ports;
    this.#input = input;
  }

  async run(): Promise<Step> {
    const { calls, trace } = this.#input;
    // One span per gate step (turn-algorithm.md: tool execution and the veto chain are traced).
    const step = <T>(n: string, name: string, fn: () => Promise<T>): Promise<T> =>
      this.#deps.telemetry.span(`step ${n} ${name}`, { "turn.step": n }, fn);
    trace("7");
    if ((await step("7", "pre-tool-call", () => this.#preToolCall(calls))) === "cancelled")
      return "cancelled";
    this.#checkArguments(calls);

    trace("8");
    const batch = splitByKind(calls);

    trace("9");
    await step("9", "data-sources", () => this.#runDataSources(batch.dataSources));
    if (this.#aborted) return "cancelled";

    trace("9b");
    if ((await step("9b", "interactive", () => this.#runInteractive(batch.interactive))) === "cancelled")
      return "cancelled";

    trace("10");
    const plan = await step("10", "plan", () => this.#buildPlan(batch.resources));
    if (this.#aborted) return "cancelled";

    if (plan.items.length > 0) {
      trace("11");
      await step("11", "plan-ready", async () => {
        await this.#planReady(plan, batch.resources);
        tracePlanDecisions(this.#deps.telemetry, plan.items);
      });
      if (this.#aborted) return "cancelled";
      persistPlan(this.#deps, this.#ports.sink, this.#ctx.turnId, plan);

      trace("12");
      await step("12", "apply", () => this.#apply(batch.resources));
      persistApply(this.#deps, this.#ports.sink, this.#ctx.turnId, plan, calls, this.#applied);
      if (this.#aborted) return "cancelled";
    } else {
      trace("11");
      trace("12");
    }

    trace("13");
    if ((await step("13", "post-tool-call", () => this.#postToolCall(batch))) === "cancelled")
      return "cancelled";

    trace("14");
    await step("14", "post-apply", () => this.#postApply(plan));

    // A turn that met a denial, whatever else it ran, counts toward the denial breaker.
    if (this.#ports.guards.breaker.turnEnded(calls.some((c) => c.result?.denied === true)))
      this.breakerTripped ??= "denial_breaker";
    return "ok";
  }

  /** Records a call's one result (later ones are ignored) and persists its tool_result. */
  setResult(call: CallRecord, r: CallResult): void {
    if (call.result) return;
    call.result = r;
    if (r.denied && call.tool && r.outcome.kind === "error") {
      this.#ports.guards.denials.push(
        create(ChildDenialSchema, {
          sessionId: this.#ctx.sessionId,
          tool: `${call.tool.provider.name}.${call.tool.tool.schema.name}`,
          reason: r.outcome.error.message,
        }),
      );
    }
    if (
      r.execution &&
      call.tool &&
      this.#ports.guards.breaker.callEnded(call.tool.provider.name, r.execution.crashed)
    ) {
      this.breakerTripped ??= "crash_breaker";
    }
    persistToolResult(this.#deps, this.#ports.sink, this.#ctx.turnId, call);
  }

  /** After an interrupt: a cancelled result for every call without one, and the apply record. */
  cancelRemaining(): void {
    for (const c of this.#input.calls) if (!c.result) this.setResult(c, cancelledResult());
    const plan = this.#plan;
    if (plan?.persisted)
      persistApply(this.#deps, this.#ports.sink, this.#ctx.turnId, plan, this.#input.calls);
  }

  get #aborted(): boolean {
    return this.#ctx.signal.aborted;
  }

  // ---- 7. pre-tool-call ------------------------------------------------------------------

  /**
   * Each call is recorded (tool_call) before its pre-tool-call hook; a veto is noted for
   * the policy step. With no subscriber to see one before the next is recorded, the
   * batch's tool_call events go to disk together, in order, in one transaction.
   */
  async #preToolCall(calls: readonly CallRecord[]): Promise<Step> {
    const deps = this.#deps;
    const routed = calls.filter((c) => c.tool !== undefined);
    for (const c of routed) {
      this.#toolCalls.set(c, this.#toolCall(c, c.args));
      c.risk = callRisk(deps, this.#ctx, c.tool!, c.args);
    }
    const eachRecordedAlone = deps.hooks.subscribers("pre-tool-call").length > 0;
    if (!eachRecordedAlone) this.#ports.sink.persistBatch(routed.map((c) => this.#toolCallEvent(c)));
    for (const c of routed) {
      if (eachRecordedAlone) {
        const e = this.#toolCallEvent(c);
        this.#ports.sink.persist(e.kind, e.producer, e.payload, { live: e.live });
      }
      const schema = c.tool!.tool.schema;
      const veto = await deps.hooks.dispatch(
        "pre-tool-call",
        create(HookPayloadSchema, {
          point: {
            case: "preToolCall",
            value: {
              provider: c.tool!.provider.name,
              call: this.#toolCalls.get(c)!,
              kind: schema.kind,
              risk: c.risk ?? schema.risk,
            },
          },
        }),
        this.#ctx.hook,
      );
      if (this.#aborted) return "cancelled";
      if (veto.decision === "deny")
        c.vetoed = { by: veto.deniedBy ?? "hook", reason: veto.reason ?? "vetoed at pre-tool-call" };
    }
    return "ok";
  }

  /**
   * The one argument check of each call. Arguments the model could not form, or that fail
   * the input schema, never reach the gate's decisions: the model gets an
   * invalid_arguments result to correct itself. An operator's call was checked when it
   * was made (Session.invoke); a human's corrected input when it was given (decide()).
   */
  #checkArguments(calls: readonly CallRecord[]): void {
    for (const c of calls) {
      if (!c.tool || c.result) continue;
      let invalid = c.invalid;
      if (!invalid && !c.argumentsChecked) {
        this.#deps.trace({
          name: "tool.arguments_checked",
          sessionId: this.#ctx.sessionId,
          turnId: this.#ctx.turnId,
          attrs: { callId: c.block.id },
        });
        invalid = checkToolCall(this.#toolCalls.get(c)!, c.tool.tool);
      }
      if (invalid) this.setResult(c, failedResult(invalid));
    }
  }

  // ---- 9. data sources, concurrently per ConcurrencySpec ---------------------------------------

  async #runDataSources(dataSources: readonly CallRecord[]): Promise<void> {
    const scheduler = new ConcurrencyScheduler({ serializeAll: this.#input.serializeAll });
    await Promise.all(
      dataSources
        .filter((c) => this.#admit(c))
        .map((c) =>
          scheduler.submit({ id: c.block.id, tool: c.tool!.tool, arguments: c.args }, () =>
            this.#execute(c, c.args),
          ),
        ),
    );
  }

  // ---- 9b. interactive calls, one at a time through the frontend ---------------------------------

  async #runInteractive(interactive: readonly CallRecord[]): Promise<Step> {
    for (const c of interactive) {
      if (!this.#admit(c)) continue;
      this.setResult(c, await askInteractive(this.#deps, this.#ctx, this.#ports.humans, c));
      if (this.#aborted) return "cancelled";
    }
    return "ok";
  }

  /** Policy for a call without a plan: allowed, or denied here (an ask cannot be put). */
  #admit(c: CallRecord): boolean {
    if (c.result) return false;
    const verdict = admitUnplanned(this.#deps, this.#ctx, c);
    this.#noteDecision(c, !verdict.allowed);
    if (!verdict.allowed) this.setResult(c, deniedResult(verdict.by, verdict.reason));
    return verdict.allowed;
  }

  // ---- 10. plan: snapshots and Previews of the resource calls ----------------------------------------

  async #buildPlan(resources: readonly CallRecord[]): Promise<PlanState> {
    const { deps, ctx } = { deps: this.#deps, ctx: this.#ctx };
    const planned = resources.filter((c) => !c.result);
    for (const c of planned) {
      const hit = protectedHitOf(c.args, ctx.workingDirectory, deps.protectedPaths);
      if (hit) c.protectedHit = hit;
    }
    const items = await Promise.all(planned.map((c) => buildPlanItem(deps, ctx, c)));
    planned.forEach((c, i) => {
      c.item = items[i]!;
    });
    this.#plan = { items, persisted: false, applyPersisted: false };
    return this.#plan;
  }

  // ---- 11. plan-ready: policy first (per item), then third-party veto subscribers ------------------------

  async #planReady(plan: PlanState, resources: readonly CallRecord[]): Promise<void> {
    for (const c of resources) if (c.item) decidePlanItem(this.#deps, this.#ctx, c);
    if (plan.items.every((i) => i.decision === PlanDecision.DENY)) return;
    const veto = await this.#deps.hooks.dispatch(
      "plan-ready",
      create(HookPayloadSchema, {
        point: {
          case: "planReady",
          value: { plan: create(PlanSchema, { turnId: this.#ctx.turnId, items: plan.items }) },
        },
      }),
      this.#ctx.hook,
    );
    if (veto.decision !== "deny") return;
    for (const item of plan.items) {
      if (item.decision === PlanDecision.DENY) continue;
      item.decision = PlanDecision.DENY;
      item.decidedBy = veto.deniedBy ?? "hook";
      item.reason = veto.reason ?? "vetoed at plan-ready";
    }
  }

  // ---- 12. apply the allowed items per ConcurrencySpec, asking where the plan says ask ---------------------

  async #apply(resources: readonly CallRecord[]): Promise<void> {
    const planned = resources.filter((c) => c.item);
    const { signal } = this.#ctx;
    const { serializeAll } = this.#input;
    // Every ask goes out at once; each call runs as soon as its answer and its turn came.
    const decisions = planned.map((c): Promise<AskResolution> => {
      const item = c.item!;
      if (item.decision === PlanDecision.ALLOW)
        return Promise.resolve({ decision: "allow", decidedBy: item.decidedBy });
      if (item.decision === PlanDecision.DENY)
        return Promise.resolve({
          decision: "deny",
          decidedBy: item.decidedBy,
          reason: item.reason ?? "denied",
        });
      return this.#ports.humans.ask(item, c.tool!, signal);
    });
    // Decisions by outcome and decider (policy, a rule, the human): low-cardinality counters.
    for (const d of decisions) {
      // A rejected ask is handled where the call awaits it below; this branch only counts.
      d.then(
        (r) =>
          this.#deps.telemetry.add("agent.approvals", 1, {
            "plan.decision": r.decision,
            "plan.decided_by": r.decidedBy,
          }),
        () => {},
      );
    }
    const scheduler = new ConcurrencyScheduler({ serializeAll });
    await Promise.all(
      planned.map((c, i) =>
        scheduler.submit({ id: c.block.id, tool: c.tool!.tool, arguments: c.args }, async () => {
          const d = await decisions[i]!;
          this.#applied.set(c, d);
          if (d.decision === "cancelled") return this.setResult(c, cancelledResult());
          this.#noteDecision(c, d.decision === "deny");
          if (d.decision === "deny")
            return this.setResult(c, deniedResult(d.decidedBy, d.reason ?? "denied"));
          if (signal.aborted) return this.setResult(c, cancelledResult());
          if (d.correctedInput) {
            // A human's corrected input may not reach what the original could not.
            const hit = protectedHitOf(
              d.correctedInput,
              this.#ctx.workingDirectory,
              this.#deps.protectedPaths,
            );
            if (hit)
              return this.setResult(
                c,
                deniedResult(PROTECTED_PATHS_RULE, protectedReason(hit.path, hit.loop)),
              );
          }
          await this.#execute(c, d.correctedInput ?? c.args);
        }),
      ),
    );
  }

  // ---- 13. post-tool-call: data sources, then interactive, then resources ----------------------------------

  async #postToolCall(batch: Batch): Promise<Step> {
    for (const c of [...batch.dataSources, ...batch.interactive, ...batch.resources]) {
      const r = c.result!;
      if (!c.hookable || !c.tool) continue;
      await this.#deps.hooks.dispatch(
        "post-tool-call",
        create(HookPayloadSchema, {
          point: {
            case: "postToolCall",
            value: {
              provider: c.tool.provider.name,
              call:
                r.appliedArgs && r.appliedArgs !== c.args
                  ? this.#toolCall(c, r.appliedArgs)
                  : this.#toolCalls.get(c)!,
              outcome:
                r.outcome.kind === "result"
                  ? { case: "result", value: { payload: r.outcome.payload } }
                  : { case: "error", value: r.outcome.error },
            },
          },
        }),
        this.#ctx.hook,
      );
      this.#input.onPostToolCall?.(c);
      if (this.#aborted) return "cancelled";
    }
    return "ok";
  }

  // ---- 14. post-apply ---------------------------------------------------------------------------------------

  async #postApply(plan: PlanState): Promise<void> {
    if (plan.items.length === 0) return;
    await this.#deps.hooks.dispatch(
      "post-apply",
      create(HookPayloadSchema, {
        point: {
          case: "postApply",
          value: { apply: applyResult(this.#ctx.turnId, plan.items, this.#input.calls) },
        },
      }),
      this.#ctx.hook,
    );
  }

  // ---- shared by the steps -------------------------------------------------------------------------------------

  #toolCall(c: CallRecord, args: JsonObject): ToolCall {
    return buildToolCall(this.#ctx, {
      callId: c.block.id,
      turnId: this.#ctx.turnId,
      tool: c.tool!,
      args,
    });
  }

  /** The tool_call event of a call (its large arguments stored once, in the assistant message). */
  #toolCallEvent(c: CallRecord) {
    const tool: SessionTool = c.tool!;
    const event = create(ToolCallEventSchema, {
      turnId: this.#ctx.turnId,
      provider: tool.provider.name,
      call: this.#toolCalls.get(c)!,
      kind: tool.tool.schema.kind,
      risk: c.risk ?? tool.tool.schema.risk,
    });
    const stored = storedToolCallEvent(event);
    const live = toBinary(ToolCallEventSchema, event);
    return {
      kind: EventKind.TOOL_CALL,
      producer: toolProducer(this.#deps, tool),
      payload: stored === event ? live : toBinary(ToolCallEventSchema, stored),
      live,
    };
  }

  async #execute(c: CallRecord, args: JsonObject): Promise<void> {
    const { turnId, signal } = this.#ctx;
    const call = args === c.args ? this.#toolCalls.get(c)! : this.#toolCall(c, args);
    // The kernel-wide lock (every session's calls of the provider), taken only now: the
    // turn's own order was kept by its scheduler, and nobody waits on a human under it.
    const release = await this.#lock(c, args);
    if (!release) return this.setResult(c, cancelledResult());
    try {
      const exec = await executeTool(this.#deps, this.#ports.tools, { call, turnId, tool: c.tool!, signal });
      this.setResult(c, executedResult(exec, args));
    } finally {
      release();
    }
  }

  /** The call's ConcurrencySpec claim on the kernel-wide locks; undefined when interrupted first. */
  async #lock(c: CallRecord, args: JsonObject): Promise<(() => void) | undefined> {
    const ctx = this.#ctx;
    const tool = c.tool!.tool;
    let claim = lockClaim({ id: c.block.id, tool, arguments: args });
    // A per-call key is unique to its call; call ids are only unique within a session.
    if (tool.concurrency.kind === "per_call")
      claim = { ...claim, key: canonicalJson([claim.key ?? "", ctx.sessionId]) };
    try {
      return await this.#deps.locks.acquire(claim, ctx.lockOwner, {
        signal: ctx.signal,
        onWait: () =>
          this.#deps.trace({
            name: "tool.lock_wait",
            sessionId: ctx.sessionId,
            turnId: ctx.turnId,
            attrs: { callId: c.block.id, tool: `${c.tool!.provider.name}.${tool.schema.name}` },
          }),
      });
    } catch {
      return undefined;
    }
  }

  /** Every allow/deny counts toward the denial breaker (a denial of the same call more). */
  #noteDecision(c: CallRecord, denied: boolean): void {
    const call = denied && c.tool ? callHash(c.tool.declaredName, c.args) : undefined;
    if (this.#ports.guards.breaker.decision(denied, call)) this.breakerTripped ??= "denial_breaker";
  }
}

/** Step 8: data sources, interactive calls and resources, each in tool_use order. */
function splitByKind(calls: readonly CallRecord[]): Batch {
  const ofKind = (k: ToolKind) => calls.filter((c) => c.tool?.tool.schema.kind === k);
  return {
    dataSources: ofKind(ToolKind.DATA_SOURCE),
    interactive: ofKind(ToolKind.INTERACTIVE),
    resources: ofKind(ToolKind.RESOURCE),
  };
}

/** The veto chain's outcome per plan item, as a child of step 11 (decision and who made it). */
function tracePlanDecisions(t: Telemetry, items: readonly PlanItem[]): void {
  if (!t.active) return;
  for (const item of items) {
    const decision = PlanDecision[item.decision]?.toLowerCase() ?? String(item.decision);
    t.span(
      `plan.decision ${item.provider}.${item.toolName}`,
      {
        "gen_ai.tool.call.id": item.toolCallId,
        "gen_ai.tool.name": `${item.provider}.${item.toolName}`,
        "plan.decision": decision,
        "plan.decided_by": item.decidedBy,
      },
      () => {},
    );
  }
}
