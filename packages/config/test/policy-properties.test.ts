// Property tests: load-time conflict detection agrees with a brute-force search
// over every call shape, and the engine agrees with a brute-force most-specific pick.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CallKind,
  findPolicyConflicts,
  loadConfigSource,
  matchesCall,
  type PolicyCall,
  PolicyEngine,
  type PolicyMatch,
  type PolicyRule,
  type RiskName,
  specificity,
} from "../src/index.ts";

const PROVIDERS = ["filesystem", "exec"];
const TOOLS = ["read_file", "write_file"];
const RISKS: RiskName[] = ["read_only", "low", "moderate", "high", "critical"];
const KINDS: CallKind[] = ["resource", "data_source", "interactive"];

// Every call shape: each field either one of the values rules use or a value none uses.
const CALLS: PolicyCall[] = [];
for (const kind of KINDS)
  for (const provider of [...PROVIDERS, "other"])
    for (const tool_name of [...TOOLS, "other"])
      for (const risk of [...RISKS, undefined]) {
        CALLS.push(risk === undefined ? { kind, provider, tool_name } : { kind, provider, tool_name, risk });
      }

const matchArb: fc.Arbitrary<PolicyMatch> = fc
  .record(
    {
      kind: fc.constantFrom("resource" as const, "data_source" as const),
      provider: fc.constantFrom(...PROVIDERS),
      tool_name: fc.constantFrom(...TOOLS),
      risk: fc.constantFrom(...RISKS),
    },
    { requiredKeys: [] },
  )
  .map((m) => ({ ...m }));

const rulesArb = fc
  .array(fc.tuple(matchArb, fc.constantFrom("allow" as const, "ask" as const, "deny" as const)), {
    maxLength: 6,
  })
  .map((xs) =>
    xs.map(
      ([match, action], i): PolicyRule => ({ name: `r${i}`, match, action, origin: "operator", order: i }),
    ),
  );

const sameTuple = (a: PolicyMatch, b: PolicyMatch) => specificity(a).join() === specificity(b).join();

/** Brute force: some call matches both rules and they are equally specific. */
function bruteConflict(a: PolicyMatch, b: PolicyMatch): boolean {
  return sameTuple(a, b) && CALLS.some((c) => matchesCall(a, c) && matchesCall(b, c));
}

function toHcl(rules: PolicyRule[]): string {
  return rules
    .map((r) => {
      const fields = Object.entries(r.match).map(([k, v]) => `${k} = "${v}"`);
      return `policy "${r.name}" {\n  match  = { ${fields.join(", ")} }\n  action = "${r.action}"\n}\n`;
    })
    .join("\n");
}

describe("conflict detection", () => {
  it("flags a pair iff some call matches both with equal specificity", () => {
    fc.assert(
      fc.property(matchArb, matchArb, (a, b) => {
        const flagged = findPolicyConflicts([
          { name: "a", match: a, action: "allow", origin: "operator", order: 0 },
          { name: "b", match: b, action: "deny", origin: "operator", order: 1 },
        ]);
        expect(flagged.length === 1).toBe(bruteConflict(a, b));
      }),
      { numRuns: 2000 },
    );
  });

  it("rejects a loaded agent.hcl exactly when brute force finds a conflicting pair", () => {
    fc.assert(
      fc.property(rulesArb, (rules) => {
        const expected: string[] = [];
        for (let j = 0; j < rules.length; j++)
          for (let i = 0; i < j; i++) {
            if (bruteConflict(rules[i]!.match, rules[j]!.match))
              expected.push(`${rules[i]!.name}/${rules[j]!.name}`);
          }
        const r = loadConfigSource(toHcl(rules), "agent.hcl", "/p");
        const reported = r.ok
          ? []
          : r.diagnostics
              .filter((d) => d.category === "policy_conflict")
              .map((d) => {
                const m = /^Policy "(r\d+)" conflicts with policy "(r\d+)"$/.exec(d.summary)!;
                return `${m[2]}/${m[1]}`;
              });
        expect(reported.sort()).toEqual(expected.sort());
        if (!r.ok)
          expect(
            r.diagnostics
              .filter((d) => d.severity === "error")
              .every((d) => d.category === "policy_conflict"),
          ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe("evaluation", () => {
  const rank = (m: PolicyMatch) => specificity(m).reduce((acc, b) => acc * 2 + (b ? 1 : 0), 0);

  it("agrees with a brute-force most-specific pick on conflict-free rule sets", () => {
    fc.assert(
      fc.property(rulesArb, fc.constantFrom(...CALLS), (rules, c) => {
        fc.pre(findPolicyConflicts(rules).length === 0);
        const got = new PolicyEngine(rules).evaluate(c);
        const matching = rules.filter((r) => matchesCall(r.match, c));
        let want: { decision: string; rule: string };
        if (matching.length === 0) {
          want = { decision: c.kind === "resource" ? "ask" : "allow", rule: "default" };
        } else {
          const top = Math.max(...matching.map((r) => rank(r.match)));
          const winners = matching.filter((r) => rank(r.match) === top);
          expect(winners).toHaveLength(1); // conflict-free means a unique winner
          want = { decision: winners[0]!.action, rule: winners[0]!.name };
        }
        const downgrade = c.kind !== "resource" && want.decision === "ask";
        expect(got.rule).toBe(want.rule);
        expect(got.decision).toBe(downgrade ? "deny" : want.decision);
        expect(got.downgraded === true).toBe(downgrade);
      }),
      { numRuns: 2000 },
    );
  });

  it("is deterministic regardless of rule order, even with ties", () => {
    fc.assert(
      fc.property(rulesArb, fc.constantFrom(...CALLS), (rules, c) => {
        const forward = new PolicyEngine(rules).evaluate(c);
        const backward = new PolicyEngine([...rules].reverse()).evaluate(c);
        expect(backward).toEqual(forward);
      }),
      { numRuns: 1000 },
    );
  });
});
