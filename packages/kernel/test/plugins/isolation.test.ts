// The isolation constraint, end to end: a first-party plugin on the worker transport that
// blocks its event loop, throws, exhausts its heap or never answers does not stall or crash
// the session. The kernel's own event loop keeps running (a timer-lag probe in this process,
// which is the kernel's), other sessions' frontend events keep flowing and an interrupt is
// honoured while the plugin is stuck; its calls end as process_crashed (or timeout, for the
// one that never answers); the next call relaunches it. The plugin is resolved as an
// installed first-party package, so it runs on its default transport, a worker thread.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const HAZARD = fileURLToPath(new URL("../../../runtime/test/fixtures/hazard", import.meta.url));
// Set before any worker starts: a plugin must never see it.
const CANARY = "kernel-env-canary-5d1e";
process.env["PH_KERNEL_CANARY"] = CANARY;

const h = new Harness({
  workerOptions: {
    watchdog: { stallTimeoutMs: 1_000, cancelGraceMs: 500, heapLimitMb: 64 },
  },
});
afterAll(async () => {
  await h.dispose();
  delete process.env["PH_KERNEL_CANARY"];
});

function hazardKernel(): Promise<TestKernel> {
  return h.kernel({
    providers: [{ name: "hazard", fixture: "installed", firstParty: "task" }],
    install: { task: HAZARD },
    limits: { crashBreaker: 10 },
    // The plugin sandbox off: a sandboxed tool provider would run as a process
    // (transport-choice.test.ts), and this file is about the worker transport.
    hcl: `
settings {
  default_tool_timeout_ms = 5000
  sandbox                 = "off"
}

agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["hazard.*"]
}`,
  });
}

/** The largest delay of a 10 ms timer in this process (the kernel's) while it runs. */
function lagProbe(): { stop(): number } {
  let last = performance.now();
  let max = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - 10);
    last = now;
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return max;
    },
  };
}

async function until(pred: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

function outcomes(k: TestKernel, id: string): Array<string | number> {
  return k
    .file(id)
    .toolResults()
    .map((r) => (r.outcome.case === "error" ? r.outcome.value.category : "result"));
}

function errorMessages(k: TestKernel, id: string): string[] {
  return k
    .file(id)
    .toolResults()
    .flatMap((r) => (r.outcome.case === "error" ? [r.outcome.value.message] : []));
}

describe("a first-party plugin on the worker transport", () => {
  it("runs in a worker thread by default", async () => {
    const k = await hazardKernel();
    expect(k.kernel.listProviders().find((p) => p.name === "hazard")).toMatchObject({
      origin: "first_party",
      isolation: "worker",
    });
    // The scripted model is a dev override: always a process.
    expect(k.kernel.listProviders().find((p) => p.name === "model")?.isolation).toBe("process");
    await k.close();
  });

  it("blocks its event loop: the kernel stays responsive, other sessions run, the call ends as process_crashed", async () => {
    const k = await hazardKernel();
    k.script("busy", { turns: [calls(tool("b1", "hazard__busy", { ms: 30_000 })), reply("carried on")] });
    k.script("chat", { turns: [reply("hello while the plugin is stuck")] });
    const probe = lagProbe();
    const started = Date.now();
    const busy = await k.kernel.startSession({ prompt: "[busy] go" });
    await until(() => k.traces.some((t) => t.name === "tool.invoke" && t.sessionId === busy.id));
    await new Promise((r) => setTimeout(r, 200));
    // Frontend events of another session keep flowing while the plugin's thread is stuck.
    const client = k.client();
    const other = await client.create("[chat] hi");
    expect(await client.finished(other)).toBe(SessionStatus.COMPLETED);
    expect(client.events.filter((e) => e.sessionId === other).length).toBeGreaterThan(2);
    expect(busy.status()).toBe(SessionStatus.RUNNING);

    expect(await busy.idle()).toBe(SessionStatus.COMPLETED);
    const lag = probe.stop();
    expect(outcomes(k, busy.id)).toEqual([ToolErrorCategory.PROCESS_CRASHED]);
    expect(errorMessages(k, busy.id)[0]).toMatch(/stopped answering: its event loop was blocked/);
    // Ended by the watchdog after about a second, not after the plugin's 30 s loop.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(lag).toBeLessThan(1_000);
    // The model saw the error and the session went on.
    expect(k.requests("busy")).toHaveLength(2);

    // The next call relaunches the plugin.
    k.script("after", { turns: [calls(tool("o1", "hazard__ok", {})), reply("fine")] });
    const after = await k.kernel.startSession({ prompt: "[after] go" });
    expect(await after.idle()).toBe(SessionStatus.COMPLETED);
    expect(outcomes(k, after.id)).toEqual(["result"]);
    await k.close();
  });

  it("honours an interrupt during the busy loop at once", async () => {
    const k = await hazardKernel();
    k.script("stuck", { turns: [calls(tool("b2", "hazard__busy", { ms: 30_000 })), reply("never")] });
    const probe = lagProbe();
    const s = await k.kernel.startSession({ prompt: "[stuck] go" });
    await until(() => k.traces.some((t) => t.name === "tool.invoke" && t.sessionId === s.id));
    await new Promise((r) => setTimeout(r, 200));
    const at = Date.now();
    s.interrupt();
    expect(await s.idle()).toBe(SessionStatus.CANCELLED);
    expect(Date.now() - at).toBeLessThan(2_000);
    expect(probe.stop()).toBeLessThan(1_000);
    // The stuck thread is ended after the cancellation grace; the next call runs on a new one.
    k.script("next", { turns: [calls(tool("o2", "hazard__ok", {})), reply("fine")] });
    const next = await k.kernel.startSession({ prompt: "[next] go" });
    expect(await next.idle()).toBe(SessionStatus.COMPLETED);
    expect(outcomes(k, next.id)).toEqual(["result"]);
    await k.close();
  });

  it("throws (from a callback, and as an unhandled rejection) or exhausts its heap: process_crashed, relaunched each time", async () => {
    const k = await hazardKernel();
    k.script("hazards", {
      turns: [
        calls(tool("t1", "hazard__throw_sync", {})),
        calls(tool("t2", "hazard__throw_async", {})),
        calls(tool("t3", "hazard__oom", {})),
        calls(tool("t4", "hazard__ok", {})),
        reply("survived"),
      ],
    });
    const probe = lagProbe();
    const s = await k.kernel.startSession({ prompt: "[hazards] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(probe.stop()).toBeLessThan(2_000);
    expect(outcomes(k, s.id)).toEqual([
      ToolErrorCategory.PROCESS_CRASHED,
      ToolErrorCategory.PROCESS_CRASHED,
      ToolErrorCategory.PROCESS_CRASHED,
      "result",
    ]);
    const messages = errorMessages(k, s.id);
    expect(messages[0]).toContain("hazard: thrown from a timer");
    expect(messages[1]).toContain("hazard: unhandled rejection");
    expect(messages[2]).toMatch(/ran out of memory: \d+ MiB of heap, over its 64 MiB limit/);
    await k.close();
  });

  it("never answers: the call times out as it would from a process, and the plugin is not restarted", async () => {
    const k = await hazardKernel();
    k.script("hang", {
      turns: [calls(tool("h1", "hazard__hang", {})), calls(tool("h2", "hazard__ok", {})), reply("ok")],
    });
    const s = await k.kernel.startSession({ prompt: "[hang] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(outcomes(k, s.id)).toEqual([ToolErrorCategory.TIMEOUT, "result"]);
    expect(k.logs.some((l) => /plugin failed|keeps failing/.test(l.message))).toBe(false);
    await k.close();
  });

  it("sees only the allowlisted environment, never the kernel's", async () => {
    {
      const k = await hazardKernel();
      k.script("env", { turns: [calls(tool("e1", "hazard__env", {})), reply("ok")] });
      const s = await k.kernel.startSession({ prompt: "[env] go" });
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
      const result = k
        .file(s.id)
        .events.filter((e) => e.kind === EventKind.TOOL_RESULT)
        .map((e) => fromBinary(ToolResultEventSchema, e.payload))[0]!;
      expect(result.outcome.case).toBe("result");
      const env = JSON.parse(
        String((result.outcome.value as { payload?: { env?: string } }).payload?.env ?? "{}"),
      ) as Record<string, string>;
      expect(env["PATH"]).toBe(process.env["PATH"]);
      expect(env["PH_KERNEL_CANARY"]).toBeUndefined();
      for (const f of readdirSync(k.stateDir)) {
        expect(readFileSync(join(k.stateDir, f)).includes(CANARY), f).toBe(false);
      }
      await k.close();
    }
  });
});
