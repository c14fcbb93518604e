// The policy engine: decides allow/ask/deny for one tool call.
//
// Three rule layers are consulted:
// - operator rules (agent.hcl) with the built-in defaults behind them;
// - ALWAYS rules (durable human verdicts, see policy-store.ts), filtered by profile;
// - SESSION rules (in-memory human verdicts for this session only).
// A human verdict (session first, then always) replaces the operator outcome
// unless the operator outcome is deny: remembered approvals can settle an `ask`,
// never lift an operator's `deny`. Within a layer the most specific rule wins;
// ties (rejected at load, so only reachable through runtime layers) go to the
// strictest action, then to the earliest rule. Finally an `ask` on a data_source
// or interactive call becomes `deny`, and the result says so.

import { PlanDecision } from "@pluggableharness/protocol/plan";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import type { PolicyAction, PolicyMatch, PolicyRule, RiskName } from "./model.ts";
import { specificityRank } from "./policy.ts";

export type CallKind = "resource" | "data_source" | "interactive";

/** What policy sees of a call. `provider` is the required_providers local name. */
export interface PolicyCall {
  kind: CallKind;
  provider: string;
  tool_name: string;
  risk?: RiskName;
}

export type PolicyLayer = "operator" | "always" | "session" | "default";

export interface PolicyEvaluation {
  decision: PolicyAction;
  /** The deciding rule's name, or "default" when no rule matched. */
  rule: string;
  layer: PolicyLayer;
  /** Present when a winning `ask` was turned into `deny` for a data_source/interactive call. */
  downgraded?: true;
}

const STRICTNESS: Record<PolicyAction, number> = { allow: 0, ask: 1, deny: 2 };

export function matchesCall(m: PolicyMatch, call: PolicyCall): boolean {
  return (
    (m.kind === undefined || m.kind === call.kind) &&
    (m.provider === undefined || m.provider === call.provider) &&
    (m.tool_name === undefined || m.tool_name === call.tool_name) &&
    (m.risk === undefined || m.risk === call.risk)
  );
}

/** The most specific matching rule; ties go to the strictest action, then the earliest. */
export function mostSpecific(rules: readonly PolicyRule[], call: PolicyCall): PolicyRule | undefined {
  let best: PolicyRule | undefined;
  for (const r of rules) {
    if (!matchesCall(r.match, call)) continue;
    if (best === undefined) {
      best = r;
      continue;
    }
    const d = specificityRank(r.match) - specificityRank(best.match);
    if (d > 0) best = r;
    else if (d === 0) {
      const s = STRICTNESS[r.action] - STRICTNESS[best.action];
      if (s > 0 || (s === 0 && r.order < best.order)) best = r;
    }
  }
  return best;
}

export function defaultAction(kind: CallKind): PolicyAction {
  return kind === "resource" ? "ask" : "allow";
}

export interface PolicyEngineOptions {
  /** Durable ALWAYS rules (from the policy store). */
  alwaysRules?: readonly PolicyRule[];
  /** The session's profile: ALWAYS rules recorded under another profile are ignored. */
  profile?: string;
}

export class PolicyEngine {
  readonly operatorRules: readonly PolicyRule[];
  private readonly always: PolicyRule[];
  private readonly session: PolicyRule[] = [];
  private readonly profile: string | undefined;

  constructor(operatorRules: readonly PolicyRule[], options: PolicyEngineOptions = {}) {
    this.operatorRules = [...operatorRules];
    this.profile = options.profile;
    this.always = (options.alwaysRules ?? []).filter((r) => this.appliesToProfile(r));
  }

  private appliesToProfile(r: PolicyRule): boolean {
    return r.profile === undefined || this.profile === undefined || r.profile === this.profile;
  }

  evaluate(call: PolicyCall): PolicyEvaluation {
    const op = mostSpecific(this.operatorRules, call);
    let result: PolicyEvaluation =
      op === undefined
        ? { decision: defaultAction(call.kind), rule: "default", layer: "default" }
        : { decision: op.action, rule: op.name, layer: "operator" };
    const human = mostSpecific(this.session, call) ?? mostSpecific(this.always, call);
    if (human !== undefined && human.action !== "ask" && result.decision !== "deny") {
      result = {
        decision: human.action,
        rule: human.name,
        layer: human.origin === "session" ? "session" : "always",
      };
    }
    if (call.kind !== "resource" && result.decision === "ask") {
      return { ...result, decision: "deny", downgraded: true };
    }
    return result;
  }

  /**
   * Remembers a SESSION-scoped human verdict for every later call with the same
   * (provider, tool_name); a newer verdict for the pair replaces the older one.
   */
  rememberForSession(provider: string, tool_name: string, decision: "allow" | "deny"): PolicyRule {
    const rule = humanRule("session", provider, tool_name, decision, this.session.length);
    const i = this.session.findIndex((r) => r.name === rule.name);
    if (i >= 0) this.session.splice(i, 1, { ...rule, order: this.session[i]!.order });
    else this.session.push(rule);
    return rule;
  }

  /** Adds (or replaces, by name) an ALWAYS rule, e.g. right after the store recorded it. */
  addAlwaysRule(rule: PolicyRule): void {
    if (!this.appliesToProfile(rule)) return;
    const i = this.always.findIndex((r) => r.name === rule.name);
    if (i >= 0) this.always.splice(i, 1, rule);
    else this.always.push(rule);
  }

  /** The SESSION verdicts remembered so far. */
  sessionRules(): readonly PolicyRule[] {
    return this.session;
  }

  /** A new engine with the same operator and ALWAYS rules and no SESSION verdicts (e.g. a sub-agent). */
  forSession(profile?: string): PolicyEngine {
    return new PolicyEngine(this.operatorRules, {
      alwaysRules: this.always,
      profile: profile ?? this.profile,
    });
  }
}

/** The rule a human verdict turns into: it matches exactly one (provider, tool_name). */
export function humanRule(
  origin: "session" | "always",
  provider: string,
  tool_name: string,
  action: "allow" | "deny",
  order: number,
  profile?: string,
): PolicyRule {
  const rule: PolicyRule = {
    name: `${origin}:${profile === undefined ? "" : `${profile}:`}${provider}.${tool_name}`,
    match: { provider, tool_name },
    action,
    origin,
    order,
  };
  if (profile !== undefined) rule.profile = profile;
  return rule;
}

// ---- conversions to and from the wire enums ----------------------------------

export function callKindOf(kind: ToolKind): CallKind | undefined {
  switch (kind) {
    case ToolKind.RESOURCE:
      return "resource";
    case ToolKind.DATA_SOURCE:
      return "data_source";
    case ToolKind.INTERACTIVE:
      return "interactive";
    default:
      return undefined;
  }
}

export function riskNameOf(risk: RiskClass): RiskName | undefined {
  switch (risk) {
    case RiskClass.READ_ONLY:
      return "read_only";
    case RiskClass.LOW:
      return "low";
    case RiskClass.MODERATE:
      return "moderate";
    case RiskClass.HIGH:
      return "high";
    case RiskClass.CRITICAL:
      return "critical";
    default:
      return undefined;
  }
}

export function toPlanDecision(action: PolicyAction): PlanDecision {
  return action === "allow" ? PlanDecision.ALLOW : action === "ask" ? PlanDecision.ASK : PlanDecision.DENY;
}
