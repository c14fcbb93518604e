// How a refusal explains itself: which rule refused or asked, and what the user can
// change so the call runs. A refusal that only says "denied" leaves a user coming from
// Claude Code guessing whether it was the model, a rule or the mode (docs/decisions/defaults.md).
import type { PolicyEvaluation } from "@pluggableharness/config";

/** The rule that asked, as a user reads it ("policy:default" is the kernel's own default). */
function askingRule(decidedBy: string): string {
  if (decidedBy === "" || decidedBy === "policy:default" || decidedBy === "default")
    return "the default policy (every change asks first)";
  return `policy rule "${decidedBy}"`;
}

/** Why a headless run denied an ask, and the three ways to let such a call run. */
export function headlessDenyReason(decidedBy: string): string {
  return (
    `${askingRule(decidedBy)} asks before this call, and no human is attached to approve it ` +
    "(--headless-ask deny denies every ask). To let it run: approve it in an interactive " +
    '`agent run`, rerun with --headless-ask allow, or add a policy with action = "allow" ' +
    "matching it to agent.hcl"
  );
}

/** How to lift an operator rule's deny; nothing for layers the user does not edit in agent.hcl. */
export function denyHint(v: PolicyEvaluation): string {
  if (v.layer !== "operator") return "";
  return `; to allow it, change that rule's action to "ask" or "allow" in agent.hcl, or remove the rule`;
}
