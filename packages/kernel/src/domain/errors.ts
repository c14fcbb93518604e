// Every failure the domain core reports is a typed error with a machine-readable
// `category`, so callers branch on the category and never parse messages.

export abstract class DomainError extends Error {
  abstract readonly category: string;
}

/** One broken rule, attributed precisely enough to fix the declaration. */
export interface RuleViolation {
  /** The declaring provider (agent.hcl local name). */
  readonly provider: string;
  /** The operation (tool) or model the rule was checked on; "" when it concerns the whole response. */
  readonly subject: string;
  /** Stable rule id, e.g. "resource-risk-not-read-only". */
  readonly rule: string;
  readonly message: string;
}

function summarise(kind: string, violations: readonly RuleViolation[]): string {
  const lines = violations.map((v) => `  - ${v.message} [rule ${v.rule}]`);
  return `${kind} rejected (${violations.length} violation${violations.length === 1 ? "" : "s"}):\n${lines.join("\n")}`;
}

/** A provider's declaration broke one or more rules; the whole response is rejected. */
abstract class RuleViolationsError extends DomainError {
  readonly provider: string;
  readonly violations: readonly RuleViolation[];
  constructor(provider: string, violations: readonly RuleViolation[], what: string) {
    super(summarise(what, violations));
    this.provider = provider;
    this.violations = violations;
  }
}

/** A GetSchema response broke one or more ToolSchema rules; the whole response is rejected. */
export class ToolSchemaError extends RuleViolationsError {
  readonly category = "invalid_tool_schema";
  override readonly name = "ToolSchemaError";
  constructor(provider: string, violations: readonly RuleViolation[]) {
    super(provider, violations, `tool provider "${provider}" GetSchema response`);
  }
}

/** A GetCapabilities response broke one or more ModelSpec rules; it is rejected at load. */
export class CapabilitiesError extends RuleViolationsError {
  readonly category = "invalid_capabilities";
  override readonly name = "CapabilitiesError";
  constructor(provider: string, violations: readonly RuleViolation[]) {
    super(provider, violations, `model provider "${provider}" capabilities`);
  }
}

/** A plugin's stream (Invoke or StreamCompletion) broke the protocol's ordering or shape rules. */
export class ProtocolViolationError extends DomainError {
  readonly category = "protocol_violation";
  readonly provider: string;
  readonly rule: string;
  constructor(provider: string, rule: string, message: string) {
    super(`provider "${provider}" violated the protocol: ${message} [rule ${rule}]`);
    this.name = "ProtocolViolationError";
    this.provider = provider;
    this.rule = rule;
  }
}

/** A usage event cannot be priced with the model's declared Pricing. */
export class PricingError extends DomainError {
  readonly category = "pricing_unresolvable";
  constructor(message: string) {
    super(message);
    this.name = "PricingError";
  }
}
