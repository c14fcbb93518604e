// What decides whether a call may run: the kernel's own rule for its files first, then
// the session's policy (operator and ALWAYS rules, SESSION verdicts). A data source or an
// interactive call has no plan, so an `ask` cannot be put to anyone and is denied; a
// resource's verdict becomes its plan item's decision.
import {
  narrowestScope,
  type PolicyCall,
  type PolicyEvaluation,
  riskNameOf,
  toPlanDecision,
} from "@pluggableharness/config";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { ToolKind } from "@pluggableharness/protocol/tool";
import type { LoopDeps } from "../deps.ts";
import type { CallContext } from "../ports.ts";
import type { CallRecord } from "./call.ts";
import { MEMORY_SECRETS_REASON, MEMORY_SECRETS_RULE, memorySecretHit } from "./memory-secrets.ts";
import { denyHint } from "./refusal-hints.ts";

/** The kernel's rule for its own files; shown as the decider of every plan item it refuses. */
export const PROTECTED_PATHS_RULE = "kernel:protected_paths";

export function protectedReason(path: string, loop?: boolean): string {
  if (loop)
    return `${path} is a chain of symbolic links that does not end, so where it leads cannot be known; the agent's own files are protected, so it is refused`;
  return `${path} belongs to the agent itself (its configuration, policy, lock file, state or cache); no tool call may change it, whatever the policy or an approval says`;
}

export function denyReason(v: PolicyEvaluation): string {
  const what = v.command ? ` for \`${v.command}\`` : "";
  return `denied by policy rule "${v.rule}"${what}${v.note ? ` (${v.note})` : ""}${denyHint(v)}`;
}

/** What policy sees of a call: its kind, provider, tool, risk, arguments and working directory. */
export function policyCall(ctx: CallContext, c: CallRecord, kind: PolicyCall["kind"]): PolicyCall {
  const schema = c.tool!.tool.schema;
  const risk = riskNameOf(c.risk ?? schema.risk);
  return {
    kind,
    provider: c.tool!.provider.name,
    tool_name: schema.name,
    ...(risk ? { risk } : {}),
    args: c.args,
    cwd: ctx.workingDirectory,
  };
}

/** Allow or deny a call that runs without a plan (a data source, an interactive call). */
export function admitUnplanned(
  deps: LoopDeps,
  ctx: CallContext,
  c: CallRecord,
): { readonly allowed: true } | { readonly allowed: false; readonly by: string; readonly reason: string } {
  if (c.vetoed) return { allowed: false, by: c.vetoed.by, reason: c.vetoed.reason };
  const schema = c.tool!.tool.schema;
  const interactive = schema.kind === ToolKind.INTERACTIVE;
  const verdict = ctx.policy.evaluate(policyCall(ctx, c, interactive ? "interactive" : "data_source"));
  if (verdict.downgraded) {
    deps.log.warn(
      `policy rule "${verdict.rule}" resolved to ask for ${interactive ? "an interactive" : "a data_source"} call; no apply step exists for it, so it is denied`,
      { tool: `${c.tool!.provider.name}.${schema.name}` },
      ctx.sessionId,
    );
  }
  if (verdict.decision === "allow") return { allowed: true };
  return {
    allowed: false,
    by: verdict.rule,
    reason: verdict.downgraded
      ? `policy rule "${verdict.rule}" asks, which ${interactive ? "an interactive" : "a data-source"} call cannot, so it is denied`
      : denyReason(verdict),
  };
}

/**
 * Step 11 for one plan item: a pre-tool-call veto, else the kernel's protected paths,
 * else policy. An `ask` records what a SESSION/ALWAYS answer would remember.
 */
export function decidePlanItem(deps: LoopDeps, ctx: CallContext, c: CallRecord): void {
  const item = c.item!;
  if (c.vetoed) {
    item.decision = PlanDecision.DENY;
    item.decidedBy = c.vetoed.by;
    item.reason = c.vetoed.reason;
    return;
  }
  // The kernel's own rule comes first and no policy or human answer overrides it.
  if (c.protectedHit) {
    item.decision = PlanDecision.DENY;
    item.decidedBy = PROTECTED_PATHS_RULE;
    item.reason = protectedReason(c.protectedHit.path, c.protectedHit.loop);
    return;
  }
  if (memorySecretHit(deps, c)) {
    item.decision = PlanDecision.DENY;
    item.decidedBy = MEMORY_SECRETS_RULE;
    item.reason = MEMORY_SECRETS_REASON;
    return;
  }
  const call = policyCall(ctx, c, "resource");
  const verdict = ctx.policy.evaluate(call);
  item.decision = toPlanDecision(verdict.decision);
  item.decidedBy = verdict.rule === "default" ? "policy:default" : verdict.rule;
  if (verdict.decision === "deny") item.reason = denyReason(verdict);
  else if (verdict.decision === "ask") {
    if (verdict.note) item.reason = `asks because ${verdict.note}`;
    const remember = narrowestScope(call, { secretValues: deps.secretValues, secretMask: deps.secretMask });
    if (remember.ok) item.rememberScope = remember.description;
    else item.rememberUnavailable = remember.reason;
  }
}
