import { describe, expect, it } from "vitest";
import {
  CapabilitiesError,
  DomainError,
  PricingError,
  ProtocolViolationError,
  type RuleViolation,
  ToolSchemaError,
} from "../../src/domain/errors.ts";

const v = (rule: string, message: string): RuleViolation => ({ provider: "p", subject: "s", rule, message });

describe("domain errors say what broke, in words and by category", () => {
  it("a rejected GetSchema lists every violation with its rule", () => {
    const one = new ToolSchemaError("fs", [v("resource-risk", "fs.write: risk is read_only")]);
    expect(one).toBeInstanceOf(DomainError);
    expect([one.name, one.category, one.provider]).toEqual(["ToolSchemaError", "invalid_tool_schema", "fs"]);
    expect(one.message).toBe(
      'tool provider "fs" GetSchema response rejected (1 violation):\n  - fs.write: risk is read_only [rule resource-risk]',
    );
    const two = new ToolSchemaError("fs", [v("a", "first"), v("b", "second")]);
    expect(two.message).toBe(
      'tool provider "fs" GetSchema response rejected (2 violations):\n  - first [rule a]\n  - second [rule b]',
    );
    expect(two.violations.map((x) => x.rule)).toEqual(["a", "b"]);
  });

  it("rejected capabilities name the provider and the rules", () => {
    const e = new CapabilitiesError("anthropic", [v("pricing-present", "m: pricing is missing")]);
    expect([e.name, e.category, e.provider]).toEqual([
      "CapabilitiesError",
      "invalid_capabilities",
      "anthropic",
    ]);
    expect(e.message).toBe(
      'model provider "anthropic" capabilities rejected (1 violation):\n  - m: pricing is missing [rule pricing-present]',
    );
  });

  it("a protocol violation and an unpriceable usage are typed too", () => {
    const p = new ProtocolViolationError("model", "single-stop", "a second stop event");
    expect([p.name, p.category, p.provider, p.rule]).toEqual([
      "ProtocolViolationError",
      "protocol_violation",
      "model",
      "single-stop",
    ]);
    expect(p.message).toBe('provider "model" violated the protocol: a second stop event [rule single-stop]');
    const c = new PricingError("no tier covers this usage");
    expect([c.name, c.category, c.message]).toEqual([
      "PricingError",
      "pricing_unresolvable",
      "no tier covers this usage",
    ]);
  });
});
