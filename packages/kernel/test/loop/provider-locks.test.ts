// The kernel-wide tool locks over real plugin processes (issue 20, point 6): a
// `safe: false` provider never serves two Invokes at once, whichever sessions they come
// from; calls of a keyed operation with one key run one after another across sessions,
// and distinct keys run side by side. The tools fixture holds each call until the test
// releases it, so overlap is decided by the test, not by timing.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, type Loose, reply, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

async function until(what: string, cond: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const starts = (k: TestKernel, toolName: string) =>
  k.invocations().filter((e: Loose) => e.phase === "start" && e.tool === toolName);
const ends = (k: TestKernel, toolName: string) =>
  k.invocations().filter((e: Loose) => e.phase === "end" && e.tool === toolName);
const lockWaits = (k: TestKernel) => k.traces.filter((t) => t.name === "tool.lock_wait");
const release = (k: TestKernel, e: Loose) =>
  writeFileSync(join(k.logDir, `release-${e.sessionId}-${e.callId}`), "");

function twoSessions(name: string, args: (s: "a" | "b") => Record<string, unknown>) {
  const script = (s: "a" | "b") => ({
    turns: [calls(tool(`${s}1`, `tools__${name}`, { ...args(s), hold: true })), reply(`${s} done`)],
  });
  return h.kernel({ transport: "process", scripts: { a: script("a"), b: script("b") } });
}

describe("tool locks span the sessions of a kernel", () => {
  it("two sessions never overlap a safe:false tool of one provider process", async () => {
    const k = await twoSessions("locked", (s) => ({ label: s }));
    const c = k.client();
    const a = await c.create("[a] go");
    const b = await c.create("[b] go");
    // Both sessions reached the tool: one runs it, the other waits for the provider.
    await until("both sessions reached the locked tool", () => {
      const n = starts(k, "locked").length;
      return n >= 2 || (n === 1 && lockWaits(k).length === 1);
    });
    expect(starts(k, "locked")).toHaveLength(1);
    const first = starts(k, "locked")[0];
    const waiting = lockWaits(k)[0]!;
    expect(waiting.sessionId).not.toBe(first.sessionId);
    release(k, first);
    await until("the second call started", () => starts(k, "locked").length === 2);
    const second = starts(k, "locked")[1];
    expect(second.sessionId).toBe(waiting.sessionId);
    const firstEnd = ends(k, "locked").find((e: Loose) => e.sessionId === first.sessionId);
    expect(firstEnd!.at).toBeLessThanOrEqual(second.at);
    release(k, second);
    expect(await c.finished(a)).toBe(SessionStatus.COMPLETED);
    expect(await c.finished(b)).toBe(SessionStatus.COMPLETED);
    await k.close();
  });

  it("equal keys serialize across sessions", async () => {
    const k = await twoSessions("keyed", () => ({ key: "same" }));
    const c = k.client();
    const a = await c.create("[a] go");
    const b = await c.create("[b] go");
    await until("both sessions reached the keyed tool", () => {
      const n = starts(k, "keyed").length;
      return n >= 2 || (n === 1 && lockWaits(k).length === 1);
    });
    expect(starts(k, "keyed")).toHaveLength(1);
    release(k, starts(k, "keyed")[0]);
    await until("the second call started", () => starts(k, "keyed").length === 2);
    release(k, starts(k, "keyed")[1]);
    expect(await c.finished(a)).toBe(SessionStatus.COMPLETED);
    expect(await c.finished(b)).toBe(SessionStatus.COMPLETED);
    await k.close();
  });

  it("distinct keys run at the same time across sessions", async () => {
    const k = await twoSessions("keyed", (s) => ({ key: `key-${s}` }));
    const c = k.client();
    const a = await c.create("[a] go");
    const b = await c.create("[b] go");
    // Neither is released before both have started: only parallel calls get here.
    await until("both calls started", () => starts(k, "keyed").length === 2);
    expect(lockWaits(k)).toHaveLength(0);
    for (const e of starts(k, "keyed")) release(k, e);
    expect(await c.finished(a)).toBe(SessionStatus.COMPLETED);
    expect(await c.finished(b)).toBe(SessionStatus.COMPLETED);
    await k.close();
  });
});
