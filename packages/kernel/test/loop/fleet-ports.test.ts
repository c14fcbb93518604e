// The two narrow ports fleet mode runs sessions through (docs/decisions/fleet.md): the
// shared vendor throttle, asked before every model attempt and told of every rate limit
// with the vendor's retry-after, and the `turn.end` trace event, the turn boundary at
// which a worker ships the session file.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, modelError, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const SETTINGS = `
settings {
  sandbox = "off"
  retry {
    base_delay_ms  = 100
    backoff_factor = 2
    max_retries    = 2
  }
}`;

describe("fleet ports", () => {
  it("asks the throttle before each attempt and reports a 429's retry-after to it", async () => {
    const log: string[] = [];
    const k = await h.kernel({
      hcl: SETTINGS,
      headlessAsk: "allow",
      vendorThrottle: {
        async wait(provider) {
          log.push(`wait ${provider}`);
        },
        rateLimited(provider, ms) {
          log.push(`limited ${provider} ${ms}`);
        },
      },
    });
    try {
      k.script("throttle", { turns: [[modelError("rate_limited", { retryAfter: 3 }), reply("ok")]] });
      const s = await k.kernel.startSession({ prompt: "[throttle] go" });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      expect(log).toEqual(["wait model", "limited model 3000", "wait model"]);
    } finally {
      await k.close();
    }
  });

  it("an aborted wait cancels the run without calling the model", async () => {
    let waits = 0;
    const k = await h.kernel({
      hcl: SETTINGS,
      headlessAsk: "allow",
      vendorThrottle: {
        wait: (_p, signal) =>
          new Promise<void>((resolve) => {
            waits++;
            signal.addEventListener("abort", () => resolve(), { once: true });
          }),
        rateLimited() {},
      },
    });
    try {
      k.script("held", { turns: [[reply("never")]] });
      const s = await k.kernel.startSession({ prompt: "[held] go" });
      const until = Date.now() + 5_000;
      while (waits === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      expect(waits).toBe(1);
      s.interrupt();
      expect(await s.idle()).toBe(SessionStatus.CANCELLED);
      expect(k.requests("held")).toHaveLength(0);
    } finally {
      await k.close();
    }
  });

  it("traces turn.end once per turn, after the turn's records are in the file", async () => {
    const k = await h.kernel({ hcl: SETTINGS, headlessAsk: "allow" });
    try {
      k.script("turns", { turns: [calls(tool("r", "tools__read", { path: "a" })), reply("done")] });
      const s = await k.kernel.startSession({ prompt: "[turns] go" });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      const ends = k.traces.filter((e) => e.name === "turn.end" && e.sessionId === s.id);
      expect(ends.map((e) => e.attrs?.["outcome"])).toEqual(["continue", "done"]);
      const begins = k.traces.filter((e) => e.name === "turn.begin" && e.sessionId === s.id);
      expect(ends.map((e) => e.turnId)).toEqual(begins.map((e) => e.turnId));
    } finally {
      await k.close();
    }
  });
});
