// Loop bounds and guards: max_turns, max_cost_usd, max_wall_clock_s, the doom-loop
// detector and the denial breaker all take the same path: exactly one more turn with
// every tool spec withheld and the kernel's final-answer instruction, then the session
// ends with the status naming what fired.
import { ClientDecision } from "@pluggableharness/protocol/frontend";
import { PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { type Ev, Harness, type Loose, reply, stop, type TestKernel, tool, usage } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const profile = (extra: string) => `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*"]
  ${extra}
}`;

const turn = (call: Ev, u: [number, number] = [20, 10]) => ({
  events: [call, usage(u[0], u[1]), stop("tool_use")],
});

/** The request of the final-answer turn: no tools, and the instruction as the last user message. */
function expectFinalAnswerTurn(k: TestKernel, scenario: string, expectedRequests: number, phrase: string) {
  const reqs = k.requests(scenario);
  expect(reqs).toHaveLength(expectedRequests);
  for (const r of reqs.slice(0, -1)) expect((r.request.tools ?? []).length).toBeGreaterThan(0);
  const final = reqs.at(-1)!.request;
  expect(final.tools ?? []).toEqual([]);
  const last = final.messages.at(-1);
  expect(last.role).toBe("ROLE_USER");
  const instruction = last.content.map((b: Loose) => b.text?.text ?? "").join("");
  expect(instruction).toContain("[kernel] Stop:");
  expect(instruction).toContain(phrase);
  expect(instruction).toContain("No tools are available");
}

describe("bounds", () => {
  it("max_turns: one final-answer turn after the bound, then error_max_turns", async () => {
    const k = await h.kernel({
      hcl: profile("max_turns = 2"),
      headlessAsk: "allow",
      scripts: {
        turns: {
          turns: [
            turn(tool("a", "tools__read", { path: "1" })),
            turn(tool("b", "tools__read", { path: "2" })),
            reply("my final answer"),
          ],
        },
      },
    });
    const s = await k.kernel.startSession({ prompt: "[turns] go" });
    expect(await s.idle()).toBe(SessionStatus.ERROR_MAX_TURNS);
    expectFinalAnswerTurn(k, "turns", 3, "maximum number of turns");
    const f = k.file(s.id);
    expect(f.meta.status).toBe(SessionStatus.ERROR_MAX_TURNS);
    expect(
      f
        .messages()
        .map((m) => m.syntheticReason)
        .filter(Boolean),
    ).toEqual(["limit_reached:max_turns", "final_answer:max_turns"]);
    await k.close();
  });

  it("max_cost_usd: usage is priced at receipt and charged; the bound fires at zero remaining", async () => {
    const k = await h.kernel({
      hcl: profile("max_cost_usd = 0.5"),
      scripts: {
        cost: {
          turns: [
            turn(tool("a", "tools__read", { path: "1" }), [100_000, 0]),
            turn(tool("b", "tools__read", { path: "2" }), [100_000, 0]),
            reply("out of budget", [1000, 100]),
          ],
        },
      },
    });
    const c = k.client({ interactive: false });
    const id = await c.create("[cost] go");
    expect(await c.finished(id)).toBe(SessionStatus.ERROR_MAX_BUDGET_USD);
    expectFinalAnswerTurn(k, "cost", 3, "cost budget");
    const updates = c.of("usageUpdate", id).map((e) => e.event.value);
    // $3 per million input tokens: 0.3 per turn; remaining budget 0.5 -> 0.2 -> -0.1.
    expect(updates.map((u) => u.costUsd)).toEqual([0.3, 0.3, expect.closeTo(0.0045, 10)]);
    expect(updates[0]!.remainingCostBudgetUsd).toBeCloseTo(0.2, 10);
    expect(updates[1]!.remainingCostBudgetUsd).toBeCloseTo(-0.1, 10);
    expect(updates[1]!.sessionCostUsd).toBeCloseTo(0.6, 10);
    expect(k.file(id).ledger.map((l) => l.costUsd)).toEqual([0.3, 0.3, expect.closeTo(0.0045, 10)]);
    await k.close();
  });

  it("max_wall_clock_s: measured on the kernel's clock; the bound fires at step 17", async () => {
    const k = await h.kernel({
      hcl: profile("max_wall_clock_s = 60"),
      scripts: {
        clock: {
          turns: [turn(tool("w", "tools__write", { path: "a", content: "1" })), reply("late answer")],
        },
      },
    });
    const c = k.client();
    const id = await c.create("[clock] go");
    const req = await c.next("permissionRequest");
    k.clock.advance(61_000);
    c.send({
      sessionId: id,
      event: {
        case: "planDecision",
        value: {
          planItemId: req.planItem!.id,
          decision: ClientDecision.ALLOW,
          scope: PlanDecisionScope.ONCE,
        },
      },
    });
    expect(await c.finished(id)).toBe(SessionStatus.ERROR_MAX_WALL_CLOCK);
    expectFinalAnswerTurn(k, "clock", 2, "time limit");
    await k.close();
  });
});

describe("guards", () => {
  it("detects a doom loop after `doom_loop_threshold` identical calls (configurable)", async () => {
    const k = await h.kernel({
      hcl: `${profile("")}
settings {
  sandbox = "off"
  doom_loop_threshold = 4
}`,
      scripts: {
        doom: {
          turns: [
            turn(tool("a", "tools__read", { path: "same" })),
            turn(tool("b", "tools__read", { path: "same" })),
            turn(tool("c", "tools__read", { path: "same" })),
            turn(tool("d", "tools__read", { path: "same" })),
            reply("I was going in circles"),
          ],
        },
      },
    });
    const c = k.client({ interactive: false });
    const id = await c.create("[doom] go");
    expect(await c.finished(id)).toBe(SessionStatus.FAILED);
    const update = c.of("sessionStatusUpdate", id).at(-1)!.event.value;
    expect(update.detail).toContain("doom_loop");
    expectFinalAnswerTurn(k, "doom", 5, "same tool call was repeated");
    await k.close();
  });

  it("trips the circuit breaker after consecutive denials", async () => {
    const k = await h.kernel({
      limits: { denialBreaker: 3 },
      hcl: `${profile("")}
policy "no_writes" {
  match  = { provider = "tools", tool_name = "write" }
  action = "deny"
}`,
      scripts: {
        breaker: {
          turns: [
            turn(tool("a", "tools__write", { path: "1", content: "x" })),
            turn(tool("b", "tools__write", { path: "2", content: "x" })),
            turn(tool("c", "tools__write", { path: "3", content: "x" })),
            reply("I could not write anything"),
          ],
        },
      },
    });
    const c = k.client({ interactive: false });
    const id = await c.create("[breaker] go");
    expect(await c.finished(id)).toBe(SessionStatus.FAILED);
    expect(c.of("sessionStatusUpdate", id).at(-1)!.event.value.detail).toContain("denial_breaker");
    expectFinalAnswerTurn(k, "breaker", 4, "too many tool calls in a row were denied");
    expect(k.file(id).planItems.map((p) => p.decisionText)).toEqual(["deny", "deny", "deny"]);
    await k.close();
  });
});
