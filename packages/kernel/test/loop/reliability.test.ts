// Reliability (issue 15, part A): bad input is an error and the session goes on, a failed
// turn leaves the session open, breakers that count, and a session resumed after its
// kernel died mid-turn is a valid conversation. Real plugin subprocesses, fake clock.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import {
  calls,
  Harness,
  modelError,
  reply,
  type TestKernel,
  tool,
  toolUsePairing,
  usage,
} from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

let current: TestKernel | undefined;
async function freshKernel(spec: Parameters<Harness["kernel"]>[0] = {}): Promise<TestKernel> {
  await current?.close();
  current = await h.kernel({ headlessAsk: "allow", ...spec });
  return current;
}

/** `{"a":{"a":…{"x":1}…}}` nested `depth` objects deep, as argument JSON text. */
function nestedArgs(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{"x":1}${"}".repeat(depth - 1)}`;
}

describe("tool arguments nested deeper than the wire carries", () => {
  for (const depth of [48, 1000, 100_000]) {
    it(`depth ${depth}: the call gets invalid_arguments, and the session goes on`, async () => {
      const k = await freshKernel();
      const scenario = `deep${depth}`;
      k.script(scenario, {
        turns: [
          {
            events: [
              { toolRaw: { id: "c1", name: "tools__read", args: nestedArgs(depth) } },
              usage(5, 5),
              { stop: "tool_use" },
            ],
          },
          reply("recovered"),
          reply("still here"),
        ],
      });
      const s = await k.kernel.startSession({ prompt: `[${scenario}] go` });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      const file = k.file(s.id);
      const [result] = file.toolResults();
      expect(result?.outcome.case).toBe("error");
      expect(result?.outcome.value).toMatchObject({
        category: ToolErrorCategory.INVALID_ARGUMENTS,
        message: expect.stringMatching(/nested more than 32 levels/),
      });
      // Nothing deep reached the history: the second request carries the call with empty input.
      const second = k.requests(scenario)[1]?.request;
      expect(JSON.stringify(second).length).toBeLessThan(20_000);
      expect(toolUsePairing(file.messages())).toEqual({ uses: ["c1"], results: ["c1"] });
      // The session takes the next message, and the model sees the whole history again.
      s.send("and now?");
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      expect(k.requests(scenario)).toHaveLength(3);
    });
  }
});

describe("a failed turn is not a dead session", () => {
  it("a new kernel resumes a session whose turn failed, and the next message runs", async () => {
    const k = await freshKernel();
    k.script("failedturn", { turns: [[modelError("auth_error"), reply("works now")]] });
    const s = await k.kernel.startSession({ prompt: "[failedturn] hello" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    await k.close();
    current = await h.kernel({ headlessAsk: "allow", reuse: k });
    const again = await current.kernel.resumeSession(s.id);
    again.send("[failedturn] the key is fixed");
    expect(await again.idle()).toBe(SessionStatus.COMPLETED);
    const messages = current.requests("failedturn")[1]!.request.messages;
    // The failure record is not part of the conversation.
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["ROLE_USER", "ROLE_USER"]);
  });
});

describe("breakers that count", () => {
  const NO_WRITES = `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools     = ["tools.*"]
  max_turns = 45
}
policy "no_writes" {
  match  = { provider = "tools", tool_name = "write" }
  action = "deny"
}`;

  it("a denied call interleaved with allowed ones still trips the denial breaker", async () => {
    const k = await freshKernel({ hcl: NO_WRITES });
    k.script("interleave", {
      turns: [
        calls(
          tool("w", "tools__write", { path: "x", content: "1" }),
          tool("r", "tools__read", { path: "a" }),
        ),
      ],
      repeat: true,
    });
    const s = await k.kernel.startSession({ prompt: "[interleave] go" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    const file = k.file(s.id);
    expect(file.planItems.filter((p) => p.decisionText === "deny")).toHaveLength(3);
    expect(k.requests("interleave")).toHaveLength(4); // three turns, then the final-answer turn
  });

  it("different denied calls half the time trip the window", async () => {
    const k = await freshKernel({ hcl: NO_WRITES });
    const turns = [];
    for (let i = 0; i < 40; i++)
      turns.push(
        calls(
          tool(`w${i}`, "tools__write", { path: `f${i}`, content: "1" }),
          tool(`r${i}`, "tools__read", { path: "a" }),
        ),
      );
    k.script("halfdenied", { turns });
    const s = await k.kernel.startSession({ prompt: "[halfdenied] go" });
    expect(await s.idle()).toBe(SessionStatus.FAILED);
    expect(k.file(s.id).planItems.filter((p) => p.decisionText === "deny")).toHaveLength(10);
  });
});
