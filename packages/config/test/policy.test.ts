// Policy blocks and the policy engine against every example of policy-dsl.md and
// configuration/examples.md, plus the evaluation semantics the DSL page states.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  type AgentConfig,
  callKindOf,
  loadConfigSource,
  type PolicyCall,
  PolicyEngine,
  type PolicyRule,
  riskNameOf,
  specificity,
  toPlanDecision,
} from "../src/index.ts";
import { FIXTURES } from "./helpers.ts";

function load(name: string) {
  const file = join(FIXTURES, "valid", name);
  return loadConfigSource(readFileSync(file), name, "/project");
}

function loadOk(name: string): AgentConfig {
  const r = load(name);
  if (!r.ok)
    throw new Error(r.diagnostics.map((d) => `${d.line}:${d.column} ${d.summary} ${d.detail}`).join("\n"));
  return r.config;
}

const call = (
  kind: PolicyCall["kind"],
  provider: string,
  tool_name: string,
  risk?: PolicyCall["risk"],
): PolicyCall => (risk === undefined ? { kind, provider, tool_name } : { kind, provider, tool_name, risk });

describe("policy-dsl.md opening example", () => {
  const config = loadOk("policy-dsl-example.hcl");
  const engine = new PolicyEngine(config.policies);

  it("decodes the three rules with their specificity tuples", () => {
    expect(config.policies.map((p) => [p.name, p.action, specificity(p.match)])).toEqual([
      ["auto_approve_reads", "allow", [false, false, false, true]],
      ["gate_filesystem_writes", "ask", [false, true, false, true]],
      ["block_high_risk", "deny", [false, false, true, false]],
    ]);
  });

  it("allows data-source calls through auto_approve_reads", () => {
    expect(engine.evaluate(call("data_source", "filesystem", "read_file", "read_only"))).toEqual({
      decision: "allow",
      rule: "auto_approve_reads",
      layer: "operator",
    });
  });

  it("asks for filesystem resource calls", () => {
    expect(engine.evaluate(call("resource", "filesystem", "write_file", "moderate"))).toMatchObject({
      decision: "ask",
      rule: "gate_filesystem_writes",
    });
  });

  it("denies critical calls of other providers", () => {
    expect(engine.evaluate(call("resource", "agent", "spawn_subagent", "critical"))).toMatchObject({
      decision: "deny",
      rule: "block_high_risk",
    });
  });

  it("lets provider outrank risk: a critical filesystem write is asked, not denied", () => {
    // (provider, kind) = (F,T,F,T) beats (risk) = (F,F,T,F) lexicographically.
    expect(engine.evaluate(call("resource", "filesystem", "write_file", "critical"))).toMatchObject({
      decision: "ask",
      rule: "gate_filesystem_writes",
    });
  });

  it("lets risk outrank kind: a critical data source is denied", () => {
    expect(engine.evaluate(call("data_source", "web", "web_fetch", "critical"))).toMatchObject({
      decision: "deny",
      rule: "block_high_risk",
    });
  });

  it("falls back to the default for resources no rule matches", () => {
    expect(engine.evaluate(call("resource", "exec", "bash", "high"))).toEqual({
      decision: "ask",
      rule: "default",
      layer: "default",
    });
  });

  it("warns that the rules name an undeclared provider but loads", () => {
    const r = load("policy-dsl-example.hcl");
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.warnings.map((w) => w.category)).toEqual(["unknown_provider"]);
  });
});

describe("evaluation semantics (policy-dsl.md)", () => {
  const none = new PolicyEngine([]);

  it("defaults: reads and interactive calls allowed, resources asked", () => {
    expect(none.evaluate(call("data_source", "search", "grep", "read_only")).decision).toBe("allow");
    expect(none.evaluate(call("interactive", "user", "ask_user", "read_only")).decision).toBe("allow");
    expect(none.evaluate(call("resource", "filesystem", "write_file", "moderate")).decision).toBe("ask");
  });

  const rule = (
    name: string,
    match: PolicyRule["match"],
    action: PolicyRule["action"],
    order = 0,
  ): PolicyRule => ({
    name,
    match,
    action,
    origin: "operator",
    order,
  });

  it("downgrades ask to deny on a data source and reports it", () => {
    const e = new PolicyEngine([rule("ask_everything", {}, "ask")]);
    expect(e.evaluate(call("data_source", "web", "web_search", "read_only"))).toEqual({
      decision: "deny",
      rule: "ask_everything",
      layer: "operator",
      downgraded: true,
    });
    expect(e.evaluate(call("resource", "exec", "bash", "high"))).toEqual({
      decision: "ask",
      rule: "ask_everything",
      layer: "operator",
    });
  });

  it("downgrades ask to deny on an interactive call targeted by tool_name", () => {
    const e = new PolicyEngine([rule("ask_user_q", { tool_name: "ask_user" }, "ask")]);
    expect(e.evaluate(call("interactive", "user", "ask_user", "read_only"))).toMatchObject({
      decision: "deny",
      downgraded: true,
    });
  });

  it("keeps a plain deny distinguishable from a downgrade", () => {
    const e = new PolicyEngine([rule("no_web_search", { provider: "web", tool_name: "web_search" }, "deny")]);
    const r = e.evaluate(call("data_source", "web", "web_search", "read_only"));
    expect(r).toEqual({ decision: "deny", rule: "no_web_search", layer: "operator" });
    expect("downgraded" in r).toBe(false);
  });

  it("treats allow on a data source as the explicit form of the default", () => {
    const e = new PolicyEngine([rule("reads", { kind: "data_source" }, "allow")]);
    expect(e.evaluate(call("data_source", "search", "glob", "read_only"))).toMatchObject({
      decision: "allow",
      rule: "reads",
    });
  });

  it("never matches interactive calls by kind (two-valued match kind)", () => {
    const e = new PolicyEngine([
      rule("ds", { kind: "data_source" }, "deny"),
      rule("res", { kind: "resource" }, "deny", 1),
    ]);
    expect(e.evaluate(call("interactive", "user", "ask_user", "read_only"))).toMatchObject({
      decision: "allow",
      rule: "default",
    });
  });

  it("picks the most specific of several matching rules", () => {
    const e = new PolicyEngine([
      rule("kind", { kind: "resource" }, "deny", 0),
      rule("risk", { risk: "moderate" }, "ask", 1),
      rule("provider", { provider: "filesystem" }, "allow", 2),
      rule("tool", { tool_name: "write_file" }, "deny", 3),
    ]);
    expect(e.evaluate(call("resource", "filesystem", "write_file", "moderate")).rule).toBe("tool");
    expect(e.evaluate(call("resource", "filesystem", "edit_file", "moderate")).rule).toBe("provider");
    expect(e.evaluate(call("resource", "exec", "bash", "moderate")).rule).toBe("risk");
    expect(e.evaluate(call("resource", "exec", "bash", "high")).rule).toBe("kind");
  });

  it("breaks ties deterministically: strictest action, then declaration order", () => {
    const tie = [
      rule("later_allow", { tool_name: "x" }, "allow", 1),
      rule("first_deny", { tool_name: "x" }, "deny", 2),
    ];
    const r1 = new PolicyEngine(tie).evaluate(call("resource", "p", "x"));
    const r2 = new PolicyEngine([...tie].reverse()).evaluate(call("resource", "p", "x"));
    expect(r1).toEqual(r2);
    expect(r1.rule).toBe("first_deny");
    const same = [rule("b", { tool_name: "x" }, "ask", 5), rule("a", { tool_name: "x" }, "ask", 3)];
    expect(new PolicyEngine(same).evaluate(call("resource", "p", "x")).rule).toBe("a");
  });
});

describe("configuration/examples.md", () => {
  it("loads the full worked agent.hcl", () => {
    const c = loadOk("examples-full.hcl");
    expect(c.requiredProviders.map((r) => [r.localName, r.version])).toEqual([
      ["anthropic", "~> 1.2.3"],
      ["filesystem", "~> 1.0"],
      ["ripgrep", "~> 0.4"],
    ]);
    expect(c.providers.map((p) => p.name)).toEqual(["anthropic", "filesystem", "ripgrep"]);
    expect(c.profiles.map((p) => p.name)).toEqual(["default", "code-reviewer"]);
    const def = c.profiles[0]!;
    expect(def.model?.primary).toMatchObject({ provider: "anthropic", id: "claude-opus-4-8" });
    expect(def.model?.fallbacks.map((f) => f.id)).toEqual(["claude-sonnet-5"]);
    expect(def.tools.map((t) => t.text)).toEqual(["filesystem.*", "ripgrep.*"]);
    expect([def.max_turns, def.max_cost_usd, def.max_wall_clock_s]).toEqual([200, 5, 3600]);
    const rev = c.profiles[1]!;
    expect(rev.slash_commands).toEqual(["compact"]);
    expect([rev.max_depth, rev.max_concurrent_subagents, rev.max_turns]).toEqual([1, 4, 40]);
    expect(rev.tools.map((t) => [t.provider, t.tool])).toEqual([
      ["filesystem", "read_file"],
      ["ripgrep", "*"],
    ]);
    expect(c.settings.telemetry).toBe(true);
    expect(c.settings.observability.resource_attrs).toEqual({ env: "dev" });
  });

  it("applies its three policies", () => {
    const e = new PolicyEngine(loadOk("examples-full.hcl").policies);
    expect(e.evaluate(call("data_source", "ripgrep", "grep", "read_only")).decision).toBe("allow");
    expect(e.evaluate(call("resource", "filesystem", "write_file", "moderate")).decision).toBe("ask");
    expect(e.evaluate(call("resource", "ripgrep", "replace", "critical")).decision).toBe("deny");
  });

  it("accepts two rules with the same tuple but different providers", () => {
    const c = loadOk("conflict-disjoint-providers.hcl");
    expect(specificity(c.policies[0]!.match)).toEqual([false, true, false, true]);
    expect(specificity(c.policies[1]!.match)).toEqual([false, true, false, true]);
    const e = new PolicyEngine(c.policies);
    expect(e.evaluate(call("resource", "filesystem", "write_file", "low")).rule).toBe("gate_writes");
    expect(e.evaluate(call("resource", "http-client", "post", "low"))).toMatchObject({
      decision: "deny",
      rule: "gate_network_writes",
    });
  });

  it("accepts two rules with the same tuple but different tool names", () => {
    const c = loadOk("conflict-disjoint-tools.hcl");
    const e = new PolicyEngine(c.policies);
    expect(e.evaluate(call("resource", "filesystem", "write_file", "moderate")).decision).toBe("deny");
    expect(e.evaluate(call("data_source", "filesystem", "read_file", "read_only")).decision).toBe("allow");
  });

  it("rejects the same tuple with the same tool name, naming both rules", () => {
    const r = load("conflict-same-tool.hcl");
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.diagnostics).toHaveLength(1);
    const d = r.diagnostics[0]!;
    expect(d.category).toBe("policy_conflict");
    expect([d.line, d.column]).toEqual([7, 8]);
    expect(d.summary).toContain('"a"');
    expect(d.summary).toContain('"b"');
  });
});

describe("runtime layers: SESSION and ALWAYS verdicts", () => {
  const operator: PolicyRule[] = [
    {
      name: "no_bash",
      match: { provider: "exec", tool_name: "bash" },
      action: "deny",
      origin: "operator",
      order: 0,
    },
    { name: "gate_fs", match: { provider: "filesystem" }, action: "ask", origin: "operator", order: 1 },
  ];

  it("a SESSION allow settles later asks for the same (provider, tool_name)", () => {
    const e = new PolicyEngine(operator);
    e.rememberForSession("filesystem", "write_file", "allow");
    expect(e.evaluate(call("resource", "filesystem", "write_file", "moderate"))).toEqual({
      decision: "allow",
      rule: "session:filesystem.write_file",
      layer: "session",
    });
    expect(e.evaluate(call("resource", "filesystem", "edit_file", "moderate")).decision).toBe("ask");
  });

  it("a SESSION deny blocks, and a newer verdict replaces it", () => {
    const e = new PolicyEngine(operator);
    e.rememberForSession("filesystem", "write_file", "deny");
    expect(e.evaluate(call("resource", "filesystem", "write_file")).decision).toBe("deny");
    e.rememberForSession("filesystem", "write_file", "allow");
    expect(e.sessionRules()).toHaveLength(1);
    expect(e.evaluate(call("resource", "filesystem", "write_file")).decision).toBe("allow");
  });

  it("never lifts an operator deny", () => {
    const e = new PolicyEngine(operator);
    e.rememberForSession("exec", "bash", "allow");
    expect(e.evaluate(call("resource", "exec", "bash", "high"))).toMatchObject({
      decision: "deny",
      rule: "no_bash",
    });
  });

  it("ALWAYS rules apply under their profile only, and session verdicts come first", () => {
    const always: PolicyRule = {
      name: "always:default:filesystem.write_file",
      match: { provider: "filesystem", tool_name: "write_file" },
      action: "allow",
      origin: "always",
      order: 0,
      profile: "default",
    };
    const e = new PolicyEngine(operator, { alwaysRules: [always], profile: "default" });
    expect(e.evaluate(call("resource", "filesystem", "write_file"))).toMatchObject({
      decision: "allow",
      layer: "always",
    });
    const other = new PolicyEngine(operator, { alwaysRules: [always], profile: "code-reviewer" });
    expect(other.evaluate(call("resource", "filesystem", "write_file")).decision).toBe("ask");
    e.rememberForSession("filesystem", "write_file", "deny");
    expect(e.evaluate(call("resource", "filesystem", "write_file"))).toMatchObject({
      decision: "deny",
      layer: "session",
    });
  });

  it("forSession starts without session verdicts but keeps ALWAYS rules", () => {
    const e = new PolicyEngine(operator);
    e.addAlwaysRule({
      name: "always:x",
      match: { provider: "filesystem", tool_name: "edit_file" },
      action: "allow",
      origin: "always",
      order: 0,
    });
    e.rememberForSession("filesystem", "write_file", "allow");
    const child = e.forSession();
    expect(child.evaluate(call("resource", "filesystem", "write_file")).decision).toBe("ask");
    expect(child.evaluate(call("resource", "filesystem", "edit_file")).decision).toBe("allow");
  });
});

describe("wire conversions", () => {
  it("maps tool kinds, risk classes and decisions", () => {
    expect(callKindOf(ToolKind.RESOURCE)).toBe("resource");
    expect(callKindOf(ToolKind.DATA_SOURCE)).toBe("data_source");
    expect(callKindOf(ToolKind.INTERACTIVE)).toBe("interactive");
    expect(callKindOf(ToolKind.UNSPECIFIED)).toBeUndefined();
    expect(riskNameOf(RiskClass.CRITICAL)).toBe("critical");
    expect(riskNameOf(RiskClass.READ_ONLY)).toBe("read_only");
    expect(riskNameOf(RiskClass.UNSPECIFIED)).toBeUndefined();
    expect(toPlanDecision("allow")).toBe(PlanDecision.ALLOW);
    expect(toPlanDecision("ask")).toBe(PlanDecision.ASK);
    expect(toPlanDecision("deny")).toBe(PlanDecision.DENY);
  });
});
