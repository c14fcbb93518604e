// Every model attempt is in the cost ledger (issue 31, point 8). The defect: an attempt the
// kernel killed (an interrupt, an idle stall, the run's deadline) before the vendor
// reported usage left no ledger row, so neither `sessions list` nor the budget counted it.
// Now such an attempt carries the kernel's estimate (the request's size as input, what
// streamed as output), priced, and marked `estimated` in the file; usage the stream did
// report before the cut is kept as reported.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { Harness, reply, text, usage } from "./harness.ts";

const COMPACTOR = fileURLToPath(new URL("../../../../providers/compactor", import.meta.url));

const h = new Harness();
afterAll(() => h.dispose());

const PROFILE = (extra = "", idleMs = 400) => `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["tools.*"]
  ${extra}
}
settings {
  sandbox                = "off"
  stream_idle_timeout_ms = ${idleMs}
  retry {
    base_delay_ms  = 100
    backoff_factor = 2
    max_retries    = 1
  }
}`;

describe("a killed model attempt", () => {
  it("is in the ledger with its estimated usage when interrupted before the vendor reported any", async () => {
    const k = await h.kernel({ hcl: PROFILE(), headlessAsk: "allow" });
    k.script("interrupted", { turns: [{ events: [text("partial answer"), { waitCancel: true }] }] });
    const c = k.client();
    const id = await c.create("[interrupted] go");
    await c.next("streamDelta", (v, e) => e.sessionId === id && v.text === "partial answer");
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id)).toBe(SessionStatus.CANCELLED);
    const f = k.file(id);
    expect(f.ledger).toHaveLength(1);
    const row = f.ledger[0]!;
    expect(row.modelId).toBe("alpha");
    expect(Number(row.inputTokens)).toBeGreaterThan(0);
    // "partial answer" is 14 bytes: 4 tokens at the kernel's 4 bytes a token.
    expect(Number(row.outputTokens)).toBe(4);
    // alpha costs 3 and 15 USD per million input and output tokens.
    expect(row.costUsd).toBeCloseTo((Number(row.inputTokens) * 3 + 4 * 15) / 1e6, 12);
    const cut = f.messages().find((m) => m.syntheticReason === "cancelled")!;
    expect(cut.usage.map((u) => u.estimated)).toEqual([true]);
    expect(cut.costUsd).toBe(row.costUsd);
    await k.close();
  });

  it("keeps the usage the stream reported before the cut, as reported", async () => {
    const k = await h.kernel({ hcl: PROFILE(), headlessAsk: "allow" });
    k.script("reported", { turns: [{ events: [usage(50, 3), text("half"), { waitCancel: true }] }] });
    const c = k.client();
    const id = await c.create("[reported] go");
    await c.next("streamDelta", (v, e) => e.sessionId === id && v.text === "half");
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id)).toBe(SessionStatus.CANCELLED);
    const f = k.file(id);
    expect(f.ledger.map((r) => [Number(r.inputTokens), Number(r.outputTokens)])).toEqual([[50, 3]]);
    expect(f.messages().find((m) => m.syntheticReason === "cancelled")!.usage[0]!.estimated).toBe(false);
    await k.close();
  });

  it("is in the ledger when an idle stall cut it, before its first event, and the retry is too", async () => {
    const k = await h.kernel({ hcl: PROFILE(), headlessAsk: "allow" });
    k.script("stalled", { turns: [[{ events: [{ waitCancel: true }] }, reply("ok", [10, 5])]] });
    const s = await k.kernel.startSession({ prompt: "[stalled] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const f = k.file(s.id);
    const rows = f.ledger.map((r) => [Number(r.inputTokens) > 0, Number(r.outputTokens)]);
    expect(rows).toEqual([
      [true, 0],
      [true, 5],
    ]);
    const stalled = f.messages().find((m) => m.syntheticReason === "attempt_failed:overloaded")!;
    expect(stalled.usage[0]!.estimated).toBe(true);
    expect(stalled.costUsd).toBeGreaterThan(0);
    await k.close();
  });

  it("is in the ledger when the run's deadline cut it mid-answer", async () => {
    const k = await h.kernel({ hcl: PROFILE("max_wall_clock_s = 1", 60_000), headlessAsk: "allow" });
    k.script("deadline", { turns: [{ events: [text("thinking…"), { waitCancel: true }] }] });
    const s = await k.kernel.startSession({ prompt: "[deadline] go" });
    expect(await s.idle()).toBe(SessionStatus.ERROR_MAX_WALL_CLOCK);
    const f = k.file(s.id);
    expect(f.ledger).toHaveLength(1);
    const cut = f.messages().find((m) => m.syntheticReason === "limit_reached:max_wall_clock_s")!;
    expect(cut.usage.map((u) => u.estimated)).toEqual([true]);
    expect(f.ledger[0]!.costUsd).toBeGreaterThan(0);
    await k.close();
  });
});

describe("a killed compaction summary call", () => {
  it("is in the ledger too, as a failed attempt with its estimated usage", async () => {
    const k = await h.kernel({
      providers: [
        {
          name: "compactor",
          fixture: "installed",
          firstParty: "compactor",
          attrs: { keep_recent_tokens: "1" },
        },
      ],
      install: { compactor: COMPACTOR },
      hcl: PROFILE(),
      headlessAsk: "allow",
    });
    k.script("compact-cut", { turns: [reply("first answer"), reply("second answer")] });
    // The summary request names no scenario: it is the scripted model's "default" one.
    k.script("default", { turns: [{ events: [text("summ"), { waitCancel: true }] }] });
    const s = await k.kernel.startSession({ prompt: "[compact-cut] one" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    s.send("[compact-cut] two");
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const before = k.file(s.id).ledger.length;
    expect(s.compact()).toBeUndefined();
    // Interrupt once the summary request reached the model.
    for (let i = 0; i < 200 && !existsSync(join(k.scriptDir, "default.requests.jsonl")); i++)
      await new Promise((r) => setTimeout(r, 20));
    s.interrupt();
    await s.idle();
    // The cut summary call ends a moment after the run (its callback unwinds on its own).
    const recorded = () =>
      k
        .file(s.id)
        .messages()
        .some((m) => m.syntheticReason === "attempt_failed:cancelled");
    for (let i = 0; i < 100 && !recorded(); i++) await new Promise((r) => setTimeout(r, 50));
    const f = k.file(s.id);
    expect(f.ledger).toHaveLength(before + 1);
    const cut = f.messages().find((m) => m.syntheticReason === "attempt_failed:cancelled")!;
    expect(cut.usage.map((u) => u.estimated)).toEqual([true]);
    expect(f.ledger.at(-1)!.costUsd).toBeGreaterThan(0);
    await k.close();
  });
});
