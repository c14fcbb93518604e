// Short human descriptions of protocol values, shared by the TUI and the CLI's
// headless printers.
import type { JsonValue } from "@bufbuild/protobuf";
import { PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { riskClassName, toolKindName } from "@pluggableharness/protocol/tool-names";

export function riskName(risk: RiskClass): string {
  return riskClassName(risk) ?? "unknown";
}

export function kindName(kind: ToolKind): string {
  return toolKindName(kind) ?? "unknown";
}

export function decisionName(d: PlanDecision): string {
  switch (d) {
    case PlanDecision.PENDING:
      return "pending";
    case PlanDecision.ALLOW:
      return "allow";
    case PlanDecision.ASK:
      return "ask";
    case PlanDecision.DENY:
      return "deny";
    default:
      return "unspecified";
  }
}

export function scopeName(s: PlanDecisionScope): string {
  switch (s) {
    case PlanDecisionScope.SESSION:
      return "session";
    case PlanDecisionScope.ALWAYS:
      return "always";
    default:
      return "once";
  }
}

/** The state backend's text form: SESSION_STATUS_ERROR_MAX_TURNS -> error_max_turns. */
export function statusName(s: SessionStatus): string {
  const name = SessionStatus[s];
  return name === undefined ? "unspecified" : name.toLowerCase();
}

export function isTerminal(s: SessionStatus): boolean {
  return s !== SessionStatus.RUNNING && s !== SessionStatus.UNSPECIFIED;
}

/** One-line JSON, cut to `max` characters. */
export function brief(value: JsonValue | undefined, max = 120): string {
  if (value === undefined) return "";
  const text = JSON.stringify(value) ?? "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Dollars with two decimals, or two significant digits below a cent ($0.00004). */
export function formatUsd(usd: number): string {
  if (usd === 0) return "$0.00";
  if (Math.abs(usd) < 0.01) {
    const digits = Math.min(10, 1 - Math.floor(Math.log10(Math.abs(usd))));
    return `$${usd.toFixed(digits)}`;
  }
  return `$${usd.toFixed(2)}`;
}

export function formatTokens(n: number): string {
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}
