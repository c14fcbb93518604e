// Bounded stalls in the loop: a model call that delivers nothing (before its first event or
// mid-answer) is cut after settings.stream_idle_timeout_ms and retried as overloaded; a
// vendor's "buffering" notice pauses that clock; the wall-clock bound ends the run during a
// stall and never waits out a retry-after that would outlast it; an error the plugin marks
// not retryable is not retried, though the chain still falls back.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, describe, expect, it } from "vitest";
import { Harness, modelError, reply, type TestKernel, text, usage } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

function hcl(options: {
  idleMs?: number;
  wallClockS?: number;
  maxRetryDelayMs?: number;
  maxModelWaitMs?: number;
}): string {
  return `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
    fallback {
      provider = "model"
      id       = "beta"
    }
  }
  tools = ["tools.*"]
  ${options.wallClockS !== undefined ? `max_wall_clock_s = ${options.wallClockS}` : ""}
}
settings {
  ${options.idleMs !== undefined ? `stream_idle_timeout_ms = ${options.idleMs}` : ""}
  ${options.maxRetryDelayMs !== undefined ? `max_retry_delay_ms = ${options.maxRetryDelayMs}` : ""}
  ${options.maxModelWaitMs !== undefined ? `max_model_wait_ms = ${options.maxModelWaitMs}` : ""}
  retry {
    base_delay_ms  = 100
    backoff_factor = 2
    max_retries    = 2
  }
}`;
}

let current: TestKernel | undefined;
async function kernel(options: {
  idleMs?: number;
  wallClockS?: number;
  maxRetryDelayMs?: number;
  maxModelWaitMs?: number;
}): Promise<TestKernel> {
  await current?.close();
  current = await h.kernel({ hcl: hcl(options), headlessAsk: "allow" });
  return current;
}

async function run(k: TestKernel, scenario: string, script: unknown) {
  k.script(scenario, script);
  const before = k.clock.sleeps.length;
  const started = Date.now();
  const s = await k.kernel.startSession({ prompt: `[${scenario}] go` });
  const status = await s.idle();
  return {
    id: s.id,
    status,
    elapsedMs: Date.now() - started,
    sleeps: k.clock.sleeps.slice(before),
    models: k.requests(scenario).map((r) => r.model),
    meta: k.file(s.id).meta,
    failures: k.logs.filter((l) => l.sessionId === s.id && l.message.startsWith("model call failed")),
    /** Why the run stopped, as the kernel logged it (the status update's detail). */
    stopped: k.logs.find((l) => l.sessionId === s.id && l.message.startsWith("stopping: "))?.message ?? "",
  };
}

describe("stream idle timeout", () => {
  it("cuts a call that sends nothing before its first event, and retries it", async () => {
    const k = await kernel({ idleMs: 500 });
    const r = await run(k, "stall-before", { turns: [[{ events: [{ waitCancel: true }] }, reply("ok")]] });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.models).toEqual(["alpha", "alpha"]);
    expect(r.failures.map((f) => [f.message, f.fields?.["error"]])).toEqual([
      [
        "model call failed: overloaded",
        "no data from model/alpha for 0.5 s before its answer began; the stalled stream was cut",
      ],
    ]);
    expect(r.sleeps).toEqual([75]);
  });

  it("cuts a call that goes quiet mid-answer, and keeps the partial answer out of the conversation", async () => {
    const k = await kernel({ idleMs: 500 });
    const r = await run(k, "stall-mid", {
      turns: [[{ events: [text("half an ans"), { waitCancel: true }] }, reply("whole answer")]],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.models).toEqual(["alpha", "alpha"]);
    expect(String(r.failures[0]?.fields?.["error"])).toMatch(/mid-answer/);
    const f = k.file(r.id);
    const texts = f
      .messages()
      .filter((m) => !m.syntheticReason.startsWith("attempt_failed:"))
      .flatMap((m) => m.message?.content ?? [])
      .flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []));
    expect(texts).toContain("whole answer");
    expect(texts.join("|")).not.toContain("half an ans");
    // The cut attempt is on record all the same, outside the conversation, its usage estimated.
    const cut = f.messages().find((m) => m.syntheticReason === "attempt_failed:overloaded");
    expect(cut?.usage.map((u) => u.estimated)).toEqual([true]);
    expect(f.ledger).toHaveLength(2);
  });

  it("does not count a silence the vendor announced (buffering) as a stall", async () => {
    const k = await kernel({ idleMs: 500 });
    const r = await run(k, "buffering", {
      turns: [
        {
          events: [
            { buffering: true },
            { pause: 1_500 },
            text("reviewed"),
            usage(5, 5),
            { stop: "end_turn" },
          ],
        },
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.models).toEqual(["alpha"]);
    expect(r.failures).toEqual([]);
  });

  it("gives up on the same request when every retry stalls, then falls back", async () => {
    const k = await kernel({ idleMs: 400 });
    const r = await run(k, "stall-chain", {
      turns: [{ models: { alpha: { events: [{ waitCancel: true }] }, beta: reply("from beta") } }],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.models).toEqual(["alpha", "alpha", "alpha", "beta"]);
  });
});

describe("the total wait for an answer to begin (max_model_wait_ms)", () => {
  it("gives the call up once its silences and retry waits reach the total: no more retries, no fallback", async () => {
    const k = await kernel({ idleMs: 400, maxModelWaitMs: 600 });
    const r = await run(k, "wait-total", {
      turns: [{ models: { alpha: { events: [{ waitCancel: true }] }, beta: reply("from beta") } }],
    });
    expect(r.status).toBe(SessionStatus.FAILED);
    // 400 ms silent, a 75 ms retry wait, then the second attempt is cut at what is left.
    expect(r.models).toEqual(["alpha", "alpha"]);
    expect(r.elapsedMs).toBeLessThan(5_000);
    expect(String(r.failures.at(-1)?.fields?.["error"])).toBe(
      "no data from model/alpha: model/alpha did not begin answering within 0.6 s of waiting in all (settings.max_model_wait_ms); the call was given up",
    );
  });
});

describe("retryability the plugin states", () => {
  it("does not retry an error marked not retryable (x-should-retry: false), but falls back", async () => {
    const k = await kernel({});
    const r = await run(k, "no-retry", {
      turns: [
        { models: { alpha: modelError("overloaded", { retryable: false }), beta: reply("from beta") } },
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.models).toEqual(["alpha", "beta"]);
    expect(r.sleeps).toEqual([]);
  });
});

describe("the wall-clock bound during model waits", () => {
  it("ends the run when the time runs out during a stall, without waiting for the idle timeout", async () => {
    const k = await kernel({ wallClockS: 1 });
    const r = await run(k, "wall-stall", { turns: [{ events: [text("thinking…"), { waitCancel: true }] }] });
    expect(r.status).toBe(SessionStatus.ERROR_MAX_WALL_CLOCK);
    expect(r.elapsedMs).toBeLessThan(10_000);
    expect(r.models).toEqual(["alpha"]);
    expect(r.stopped).toMatch(/^stopping: max_wall_clock_s: .*while waiting for model\/alpha/);
  });

  it("never waits out a retry-after longer than the time left: the run ends at once", async () => {
    const k = await kernel({ wallClockS: 10 });
    const r = await run(k, "wall-retry-after", {
      turns: [
        {
          models: {
            alpha: modelError("rate_limited", { retryAfter: 3600 }),
            beta: modelError("rate_limited", { retryAfter: 3600 }),
          },
        },
      ],
    });
    expect(r.status).toBe(SessionStatus.ERROR_MAX_WALL_CLOCK);
    // The fallback was tried first; no backoff was slept.
    expect(r.models).toEqual(["alpha", "beta"]);
    expect(r.sleeps).toEqual([]);
    expect(r.elapsedMs).toBeLessThan(5_000);
    expect(r.stopped).toMatch(/asked to wait 3600 s before a retry, and only \d+ s were left/);
  });
});

describe("a vendor's retry-after without a configured bound", () => {
  // The defect: retry-after: 3600 made the kernel sleep the hour (the fake clock recorded
  // 3600000 ms). Now a wait is cut to settings.max_retry_delay_ms (default 60 s), retried,
  // and the cut is logged and shown as a notice.
  it("waits at most the default minute, then retries, and says it cut the wait", async () => {
    const k = await kernel({});
    k.script("retry-after-hour", {
      turns: [[modelError("rate_limited", { retryAfter: 3600 }), reply("after the minute")]],
    });
    const before = k.clock.sleeps.length;
    const c = k.client({ interactive: false });
    const id = await c.create("[retry-after-hour] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    expect(k.requests("retry-after-hour").map((q) => q.model)).toEqual(["alpha", "alpha"]);
    expect(k.clock.sleeps.slice(before)).toEqual([60_000]);
    const cut = k.logs.find((l) => l.sessionId === id && l.message.startsWith("retry-after cut"));
    expect(cut?.fields).toMatchObject({ askedMs: 3_600_000, waitMs: 60_000 });
    const notices = c
      .of("render", id)
      .map((e) => JSON.stringify(e.event.value.content?.content?.root?.node.value ?? {}));
    expect(notices.join("\n")).toContain(
      "model/alpha is rate limited; the vendor asked to wait 3600 s, waiting at most 60 s (settings.max_retry_delay_ms); retry 1 of 2 in 60s",
    );
  });

  it("follows a configured bound, and an unbounded hint from a plugin is cut the same way", async () => {
    const k = await kernel({ maxRetryDelayMs: 1_500 });
    const r = await run(k, "retry-after-configured", {
      turns: [
        [
          modelError("overloaded", { retryAfter: 1e308 }),
          modelError("rate_limited", { retryAfter: 1 }),
          reply("ok"),
        ],
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(r.sleeps).toEqual([1_500, 1_000]);
  });
});
