// Hook-subscriber checks (agent-loop/hook-dispatch.md, agent-loop/conformance.md): the
// identity, then every hook point the plugin's categories declare (all eight when none
// does) dispatched in observe mode, which must be acknowledged as observe, quickly. A
// transform or veto answer must match its mode: a transform keeps the payload's point and
// a veto decides allow or deny; an answer of another mode is an invalid_response.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { HookPoint } from "@pluggableharness/protocol/common";
import { Role } from "@pluggableharness/protocol/content";
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import {
  type DispatchHookResponse,
  HookDecision,
  HookMode,
  type HookPayloadSchema,
  HookSubscriberService,
} from "@pluggableharness/protocol/hook";
import { MemoryService } from "@pluggableharness/protocol/memory";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { Code, checkHealth, checkIdentity, codeName, codeOf } from "../common/checks.ts";
import { CONFORMANCE_SESSION, ulid } from "../common/ids.ts";
import type { CategoryChecks, CheckContext } from "../runner.ts";

const P = "hook";
/** How long one dispatch may take; the kernel's per-subscriber timeouts are of this order. */
const DISPATCH_BUDGET_MS = 5_000;

type Payload = MessageInitShape<typeof HookPayloadSchema>;

/** A small, valid payload for each point. */
export function payloadFor(point: HookPoint, workdir: string): Payload {
  const model = { provider: "conformance", id: "conformance-1" };
  const call = { callId: "call-1", toolName: "conformance_tool", arguments: {} };
  switch (point) {
    case HookPoint.SESSION_START:
      return {
        point: {
          case: "sessionStart",
          value: { sessionId: CONFORMANCE_SESSION, profile: "default", workingDirectory: workdir },
        },
      };
    case HookPoint.PRE_MODEL_CALL:
      return { point: { case: "preModelCall", value: { model, messages: [] } } };
    case HookPoint.POST_MODEL_RESPONSE:
      return {
        point: {
          case: "postModelResponse",
          value: {
            model,
            message: {
              role: Role.ASSISTANT,
              content: [{ block: { case: "text", value: { text: "Done." } } }],
            },
            usage: { inputTokens: 100n, outputTokens: 10n },
            contextWindow: 100_000n,
            runPrompt: "conformance check",
          },
        },
      };
    case HookPoint.PRE_TOOL_CALL:
      return { point: { case: "preToolCall", value: { provider: "conformance", call } } };
    case HookPoint.PLAN_READY:
      return { point: { case: "planReady", value: { plan: {} } } };
    case HookPoint.POST_TOOL_CALL:
      return {
        point: {
          case: "postToolCall",
          value: { provider: "conformance", call, outcome: { case: "result", value: {} } },
        },
      };
    case HookPoint.POST_APPLY:
      return { point: { case: "postApply", value: { apply: {} } } };
    default:
      return { point: { case: "sessionEnd", value: { sessionId: CONFORMANCE_SESSION } } };
  }
}

const CASE_OF: Record<number, string> = {
  [HookPoint.SESSION_START]: "sessionStart",
  [HookPoint.PRE_MODEL_CALL]: "preModelCall",
  [HookPoint.POST_MODEL_RESPONSE]: "postModelResponse",
  [HookPoint.PRE_TOOL_CALL]: "preToolCall",
  [HookPoint.PLAN_READY]: "planReady",
  [HookPoint.POST_TOOL_CALL]: "postToolCall",
  [HookPoint.POST_APPLY]: "postApply",
  [HookPoint.SESSION_END]: "sessionEnd",
};

/** The hook points the plugin's other categories say it serves. */
async function declaredPoints(ctx: CheckContext): Promise<HookPoint[]> {
  const points = new Set<HookPoint>();
  const add = (list: readonly HookPoint[] | undefined) => {
    for (const p of list ?? []) points.add(p);
  };
  const served = new Set(ctx.description.categories);
  if (served.has("context"))
    add((await ctx.host.client(ContextService).getCapabilities({})).capabilities?.supportedHookPoints);
  if (served.has("memory"))
    add((await ctx.host.client(MemoryService).getCapabilities({})).capabilities?.supportedHookPoints);
  if (served.has("widget"))
    add((await ctx.host.client(WidgetService).getCapabilities({})).capabilities?.supportedHookPoints);
  if (served.has("frontend"))
    add((await ctx.host.client(FrontendService).getCapabilities({})).capabilities?.supportedHookPoints);
  return [...points].filter((p) => CASE_OF[p]);
}

async function dispatch(
  ctx: CheckContext,
  mode: HookMode,
  point: HookPoint,
): Promise<{ ms: number; res?: DispatchHookResponse; code?: number }> {
  const t0 = Date.now();
  try {
    const res = await ctx.host.client(HookSubscriberService).dispatchHook(
      {
        mode,
        payload: payloadFor(point, ctx.workingDirectory),
        callContext: {
          sessionId: CONFORMANCE_SESSION,
          turnId: ulid(),
          workingDirectory: ctx.workingDirectory,
        },
      },
      { signal: AbortSignal.timeout(DISPATCH_BUDGET_MS * 2) },
    );
    return { ms: Date.now() - t0, res };
  } catch (err) {
    return { ms: Date.now() - t0, code: codeOf(err) };
  }
}

export const hookChecks: CategoryChecks = async (ctx) => {
  checkIdentity(ctx, P, (await ctx.host.client(HookSubscriberService).describe({})).producer, undefined);
  const declared = await declaredPoints(ctx);
  const points = declared.length ? declared : (Object.keys(CASE_OF).map(Number) as HookPoint[]);
  ctx.record(
    `${P}.points`,
    "pass",
    declared.length
      ? `declared: ${declared.map((p) => HookPoint[p]).join(", ")}`
      : "no category declares supported_hook_points; every point is dispatched",
  );
  for (const point of points) {
    const id = `${P}.observe.${HookPoint[point]!.toLowerCase()}`;
    const { ms, res, code } = await dispatch(ctx, HookMode.OBSERVE, point);
    const outcome = res?.outcome.case;
    ctx.record(
      id,
      code === undefined && outcome === "observe" && ms <= DISPATCH_BUDGET_MS ? "pass" : "fail",
      code !== undefined
        ? `observe dispatch failed with ${codeName(code)}`
        : outcome !== "observe"
          ? `an observe dispatch was answered with ${outcome ?? "no outcome"} (invalid_response)`
          : ms > DISPATCH_BUDGET_MS
            ? `acknowledged after ${ms} ms (budget ${DISPATCH_BUDGET_MS} ms)`
            : `acknowledged in ${ms} ms`,
    );
  }
  // Transform and veto: optional for a subscriber, but an answer must be one of that mode.
  const point = points[0]!;
  const t = await dispatch(ctx, HookMode.TRANSFORM, point);
  const tCase = t.res?.outcome.case;
  const tPoint = tCase === "transform" ? t.res!.outcome.value!.payload?.point.case : undefined;
  ctx.record(
    `${P}.transform`,
    t.code === Code.UNKNOWN
      ? "fail"
      : t.code !== undefined
        ? "skip"
        : tCase === "observe"
          ? "warn"
          : tCase === "transform" && tPoint === CASE_OF[point]
            ? "pass"
            : "fail",
    t.code === Code.UNKNOWN
      ? "a transform dispatch failed unclassified (UNKNOWN)"
      : t.code !== undefined
        ? `transform not served (${codeName(t.code)})`
        : tCase === "observe"
          ? "observe-only: answers a transform dispatch with an observe ack, so subscribe it in observe mode only"
          : tCase !== "transform"
            ? `a transform dispatch was answered with ${tCase ?? "no outcome"} (invalid_response)`
            : tPoint !== CASE_OF[point]
              ? `the transformed payload holds ${tPoint ?? "no point"}, not ${CASE_OF[point]}`
              : "answered with a payload of the same point",
  );
  const v = await dispatch(ctx, HookMode.VETO, HookPoint.PRE_TOOL_CALL);
  const vCase = v.res?.outcome.case;
  const decision = vCase === "veto" ? v.res!.outcome.value!.decision : undefined;
  ctx.record(
    `${P}.veto`,
    v.code === Code.UNKNOWN
      ? "fail"
      : v.code !== undefined
        ? "skip"
        : vCase === "observe"
          ? "warn"
          : vCase === "veto" && (decision === HookDecision.ALLOW || decision === HookDecision.DENY)
            ? "pass"
            : "fail",
    v.code === Code.UNKNOWN
      ? "a veto dispatch failed unclassified (UNKNOWN)"
      : v.code !== undefined
        ? `veto not served (${codeName(v.code)})`
        : vCase === "observe"
          ? "observe-only: answers a veto dispatch with an observe ack, so subscribe it in observe mode only"
          : vCase !== "veto"
            ? `a veto dispatch was answered with ${vCase ?? "no outcome"} (invalid_response)`
            : decision === HookDecision.ALLOW || decision === HookDecision.DENY
              ? `decided ${HookDecision[decision]}`
              : "a veto answer without an allow or deny decision",
  );
  checkHealth(ctx, P);
};
