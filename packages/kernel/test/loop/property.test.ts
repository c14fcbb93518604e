// Properties of the plan/apply gate over random policies, human decisions and tool
// mixes, with the real loop and real plugin processes:
// - no resource call ever executes without an allow decision (policy, human or headless);
// - every tool_use gets exactly one tool_result, in tool_use order;
// - a data source runs only when the precheck allowed it.
import { ClientDecision } from "@pluggableharness/protocol/frontend";
import { PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import fc from "fast-check";
import { afterAll, expect, it } from "vitest";
import { calls, Harness, reply, tool, toolUsePairing } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

type Action = "allow" | "ask" | "deny" | "none";
type Human = "allow" | "deny" | "edit" | "bad-edit" | "allow-session";

const callArb = fc.oneof(
  fc.record({ tool: fc.constant("read" as const), path: fc.constantFrom("a", "b", "c") }),
  fc.record({ tool: fc.constant("write" as const), path: fc.constantFrom("a", "b", "c") }),
  fc.record({ tool: fc.constant("remove" as const), path: fc.constantFrom("a", "b") }),
  fc.record({ tool: fc.constant("ask" as const), path: fc.constant("q") }),
  fc.record({ tool: fc.constant("nope" as const), path: fc.constant("x") }),
);

const caseArb = fc.record({
  turns: fc.array(fc.array(callArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 2 }),
  policy: fc.record({
    read: fc.constantFrom<Action>("none", "allow", "deny", "ask"),
    write: fc.constantFrom<Action>("none", "allow", "ask", "deny"),
    remove: fc.constantFrom<Action>("none", "allow", "ask", "deny"),
  }),
  humans: fc.array(fc.constantFrom<Human>("allow", "deny", "edit", "bad-edit", "allow-session"), {
    maxLength: 8,
  }),
  interactive: fc.boolean(),
  headlessAllow: fc.boolean(),
});

let counter = 0;

it("never executes a resource call without an allow, and answers every tool_use exactly once", async () => {
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const scenario = `prop${++counter}`;
      const policies = Object.entries(c.policy)
        .filter(([, a]) => a !== "none")
        .map(
          ([name, a]) => `
policy "p_${name}" {
  match  = { provider = "tools", tool_name = "${name}" }
  action = "${a}"
}`,
        )
        .join("\n");
      let id = 0;
      const turns = c.turns.map((t) =>
        calls(
          ...t.map((call) =>
            tool(
              `t${++id}`,
              `tools__${call.tool}`,
              call.tool === "ask"
                ? { question: "?" }
                : call.tool === "read" || call.tool === "remove"
                  ? { path: call.path }
                  : { path: call.path, content: "v" },
            ),
          ),
        ),
      );
      const k = await h.kernel({
        hcl: policies,
        headlessAsk: c.headlessAllow ? "allow" : "deny",
        scripts: { [scenario]: { turns: [...turns, reply("done")] } },
      });
      try {
        const client = k.client({ interactive: c.interactive });
        const sessionId = await client.create(`[${scenario}] go`);
        // Answer every question as it comes, until the session ends.
        let humanIndex = 0;
        let cursor = 0;
        for (;;) {
          const e = await client.waitFor(
            (ev) =>
              ev.sessionId === sessionId &&
              (ev.event.case === "permissionRequest" ||
                ev.event.case === "interactiveRequest" ||
                (ev.event.case === "sessionStatusUpdate" && ev.event.value.status !== SessionStatus.RUNNING)),
            cursor,
          );
          cursor = client.events.indexOf(e) + 1;
          if (e.event.case === "sessionStatusUpdate") break;
          if (e.event.case === "interactiveRequest") {
            client.send({
              sessionId,
              event: {
                case: "interactiveResponse",
                value: { callId: e.event.value.callId, response: { answer: "ok" } },
              },
            });
            continue;
          }
          if (e.event.case !== "permissionRequest") continue;
          const item = e.event.value.planItem!;
          const human = c.humans[humanIndex++] ?? "allow";
          const send = (decision: ClientDecision, extra: Record<string, unknown> = {}) =>
            client.send({
              sessionId,
              event: {
                case: "planDecision",
                value: { planItemId: item.id, decision, scope: PlanDecisionScope.ONCE, ...extra },
              },
            });
          if (human === "deny") send(ClientDecision.DENY);
          else if (human === "allow") send(ClientDecision.ALLOW);
          else if (human === "allow-session")
            send(ClientDecision.ALLOW, { scope: PlanDecisionScope.SESSION });
          else if (human === "edit")
            send(ClientDecision.ALLOW, { correctedInput: { ...(item.input ?? {}), path: "edited" } });
          else {
            send(ClientDecision.ALLOW, { correctedInput: { path: 7 } }); // rejected, still pending
            send(ClientDecision.DENY);
          }
        }
        const file = k.file(sessionId);
        const invocations = k.invocations().filter((e) => e["phase"] === "start");
        const applies = file.applies().flatMap((a) => a.items);
        const plans = file.plans().flatMap((p) => p.items);
        for (const inv of invocations) {
          if (inv["tool"] !== "write" && inv["tool"] !== "remove") continue;
          const applied = applies.find((a) => a.toolCallId === inv["callId"]);
          expect(applied?.decision).toBe(PlanDecision.ALLOW);
          const planned = plans.find((p) => p.toolCallId === inv["callId"]);
          expect(planned?.decision).not.toBe(PlanDecision.DENY);
          if (c.policy[inv["tool"] as "write" | "remove"] === "deny")
            throw new Error("a denied resource ran");
        }
        for (const inv of invocations.filter((e) => e["tool"] === "read")) {
          expect(["none", "allow"]).toContain(c.policy.read);
          expect(inv["sessionId"]).toBe(sessionId);
        }
        const { uses, results } = toolUsePairing(file.messages());
        expect(results).toEqual(uses);
        expect(new Set(uses).size).toBe(uses.length);
        expect(uses).toHaveLength(c.turns.flat().length);
      } finally {
        await k.close();
      }
    }),
    { numRuns: 24, seed: 20260101 },
  );
}, 120_000);
