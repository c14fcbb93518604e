// The Plan of one batch's resource calls (step 10) and its audit trail: a PlanItem per
// call with its snapshot fields and, when the tool offers one, a Preview; the plan event
// once every item is decided (step 11); the apply event once they ran (step 12).
import { create, toBinary } from "@bufbuild/protobuf";
import { ApplyEventSchema, PlanEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import {
  ApplyItemResultSchema,
  ApplyOutcome,
  ApplyResultSchema,
  type Plan,
  PlanDecision,
  type PlanItem,
  PlanItemSchema,
  PlanSchema,
} from "@pluggableharness/protocol/plan";
import type { RenderTree } from "@pluggableharness/protocol/render";
import { planItemEntriesFromPlan } from "@pluggableharness/state";
import { capRenderTree } from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import type { AskResolution, CallContext, EventSink } from "../ports.ts";
import type { SessionTool } from "../tool-registry.ts";
import { storedPlanEvent } from "../turn/stored-events.ts";
import { buildToolCall } from "../turn/tool-exec.ts";
import type { CallRecord } from "./call.ts";

/** One batch's plan as the gate tracks it (what has been written of it). */
export interface PlanState {
  readonly items: PlanItem[];
  persisted: boolean;
  applyPersisted: boolean;
}

/** Step 10 for one resource call: the plan item with its snapshot fields and, when offered, a Preview. */
export async function buildPlanItem(deps: LoopDeps, ctx: CallContext, c: CallRecord): Promise<PlanItem> {
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
    risk: c.risk ?? schema.risk,
    description: schema.description,
  });
  // A call the kernel refuses outright is never previewed: nothing of it runs.
  const preview = c.protectedHit ? undefined : await previewOf(deps, ctx, tool, c);
  if (preview) item.preview = capRenderTree(preview);
  return item;
}

/** The tool's Preview of a call, when it offers one; nothing when it fails or is slow. */
export async function previewOf(
  deps: LoopDeps,
  ctx: CallContext,
  tool: SessionTool,
  c: CallRecord,
): Promise<RenderTree | undefined> {
  if (!tool.provider.previewSupported.has(tool.tool.schema.name)) return undefined;
  const { turnId, signal } = ctx;
  try {
    const res = await deps.tracker.run(tool.provider.name, ctx.sessionId, "tool", () =>
      tool.provider.ports.tool.preview(
        { call: buildToolCall(ctx, { callId: c.block.id, turnId, tool, args: c.args }) },
        { timeoutMs: deps.limits.previewTimeoutMs, signal },
      ),
    );
    return res.preview;
  } catch (err) {
    deps.log.debug(
      `Preview of ${tool.provider.name}.${tool.tool.schema.name} gave nothing`,
      { error: (err as Error).message },
      ctx.sessionId,
    );
    return undefined;
  }
}

/** The decided plan: written (large inputs stored once) and shown to frontends. */
export function persistPlan(deps: LoopDeps, sink: EventSink, turnId: string, plan: PlanState): Plan {
  const planMessage = create(PlanSchema, { turnId, items: plan.items });
  const planEvent = create(PlanEventSchema, { plan: planMessage });
  const storedPlan = storedPlanEvent(planEvent);
  sink.persist(EventKind.PLAN, deps.kernelProducer, toBinary(PlanEventSchema, storedPlan), {
    planItems: planItemEntriesFromPlan(planMessage),
    ...(storedPlan === planEvent ? {} : { live: toBinary(PlanEventSchema, planEvent) }),
  });
  plan.persisted = true;
  sink.publish({ event: { case: "planReady", value: { plan: planMessage } } });
  return planMessage;
}

/** What became of every item: the ApplyResult of post-apply and of the apply event. */
export function applyResult(
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

/** The apply event, written once per plan (after apply, or when an interrupt cut it short). */
export function persistApply(
  deps: LoopDeps,
  sink: EventSink,
  turnId: string,
  plan: PlanState,
  calls: readonly CallRecord[],
  applied?: ReadonlyMap<CallRecord, AskResolution>,
): void {
  if (plan.applyPersisted) return;
  plan.applyPersisted = true;
  sink.persist(
    EventKind.APPLY,
    deps.kernelProducer,
    toBinary(
      ApplyEventSchema,
      create(ApplyEventSchema, { apply: applyResult(turnId, plan.items, calls, applied) }),
    ),
  );
}
