// `hook "<point>" { provider = "...", mode = "...", timeout_ms = ... }` blocks:
// explicit subscriptions for points a provider's category does not imply.

import type { Block } from "@pluggableharness/hcl";
import { HookPoint } from "@pluggableharness/protocol/common";
import { HookMode } from "@pluggableharness/protocol/hook";
import { type Diags, decodeBody, label, readEnum, readNumber, readString } from "./decode.ts";
import { errorAt } from "./diagnostics.ts";
import type { HookModeName, HookPointName, HookSubscription } from "./model.ts";

export const HOOK_POINTS: Readonly<Record<HookPointName, HookPoint>> = {
  "session-start": HookPoint.SESSION_START,
  "pre-model-call": HookPoint.PRE_MODEL_CALL,
  "post-model-response": HookPoint.POST_MODEL_RESPONSE,
  "pre-tool-call": HookPoint.PRE_TOOL_CALL,
  "plan-ready": HookPoint.PLAN_READY,
  "post-tool-call": HookPoint.POST_TOOL_CALL,
  "post-apply": HookPoint.POST_APPLY,
  "session-end": HookPoint.SESSION_END,
};

export const HOOK_MODES: Readonly<Record<HookModeName, HookMode>> = {
  observe: HookMode.OBSERVE,
  transform: HookMode.TRANSFORM,
  veto: HookMode.VETO,
};

/**
 * Points where a deny means something: plan-ready gates the applies of a plan and
 * pre-tool-call can stop one call before it runs. Everywhere else there is nothing
 * left to block (the model already answered, the tool already ran, the session is
 * already starting or over), so a veto subscription would be dead configuration.
 */
export const VETO_POINTS: readonly HookPointName[] = ["plan-ready", "pre-tool-call"];

export function hookPointName(p: HookPoint): HookPointName | undefined {
  return (Object.keys(HOOK_POINTS) as HookPointName[]).find((k) => HOOK_POINTS[k] === p);
}

export function decodeHookBlock(block: Block, order: number, diags: Diags): HookSubscription | undefined {
  const { value: point, range: pointRange } = label(block);
  const before = diags.filter((d) => d.severity === "error").length;
  const owner = `hook "${point}"`;
  const body = decodeBody(
    block.body,
    { attributes: ["provider", "mode", "timeout_ms"], required: ["provider", "mode"] },
    block.typeRange,
    owner,
    diags,
  );
  const known = Object.keys(HOOK_POINTS);
  if (!known.includes(point)) {
    diags.push(
      errorAt(
        "hook_point",
        "Unknown hook point",
        point === "context-assemble"
          ? "context-assemble is served by context providers (ContextService.Contribute) and cannot be subscribed with a hook block."
          : `"${point}" is not a hook point; use one of ${known.map((k) => `"${k}"`).join(", ")}.`,
        pointRange,
      ),
    );
  }
  const providerAttr = body.attrs.get("provider");
  const provider = providerAttr && readString(providerAttr, `${owner} provider`, diags);
  const modeAttr = body.attrs.get("mode");
  const mode =
    modeAttr && readEnum(modeAttr, `${owner} mode`, Object.keys(HOOK_MODES) as HookModeName[], diags);
  if (mode === "veto" && known.includes(point) && !VETO_POINTS.includes(point as HookPointName)) {
    diags.push(
      errorAt(
        "hook_mode",
        "Veto not possible here",
        `A veto at "${point}" has nothing to block; veto subscriptions are allowed at ${VETO_POINTS.map((p) => `"${p}"`).join(" and ")}. Use "observe" (or "transform") instead.`,
        modeAttr!.expr.range,
      ),
    );
  }
  const timeoutAttr = body.attrs.get("timeout_ms");
  const timeout =
    timeoutAttr && readNumber(timeoutAttr, `${owner} timeout_ms`, { integer: true, min: 1 }, diags);
  const after = diags.filter((d) => d.severity === "error").length;
  if (after > before || !provider || !mode) return undefined;
  const sub: HookSubscription = {
    point: point as HookPointName,
    provider,
    mode,
    range: block.typeRange,
    providerRange: providerAttr!.expr.range,
    order,
  };
  if (timeout !== undefined) sub.timeout_ms = timeout;
  return sub;
}
