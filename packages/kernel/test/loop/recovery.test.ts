// Recovery mid-loop: each ModelError category, backoff with jitter and retry_after,
// capability-aware routing and the fallback chain, a crashing model plugin, a crashing
// or killed tool plugin (and the crash breaker), tool retries, and cancellation while
// the model streams and while a tool runs. Backoffs go through the fake clock: they are
// recorded, never waited for.
import { PluginCategory } from "@pluggableharness/protocol/common";
import { StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { ApplyOutcome } from "@pluggableharness/protocol/plan";
import { Region, TextStyle } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import {
  calls,
  Harness,
  modelError,
  reply,
  type TestKernel,
  text,
  tool,
  toolUsePairing,
  usage,
} from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const CHAIN = `
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
}
settings {
  sandbox = "off"
  retry {
    base_delay_ms  = 100
    backoff_factor = 2
    max_retries    = 2
  }
}`;

// Plugin processes are shared by the whole file, and each kernel configures them when it
// starts, so every test uses its own (fresh) kernel.
let current: TestKernel | undefined;
async function chainKernel(): Promise<TestKernel> {
  await current?.close();
  current = await h.kernel({ hcl: CHAIN, headlessAsk: "allow" });
  return current;
}

async function runHeadless(k: TestKernel, scenario: string, script: unknown, profile?: string) {
  k.script(scenario, script);
  const before = k.clock.sleeps.length;
  const s = await k.kernel.startSession({ prompt: `[${scenario}] go`, ...(profile ? { profile } : {}) });
  const status = await s.idle();
  const statusUpdate = () => k.file(s.id).meta;
  return {
    id: s.id,
    status,
    sleeps: k.clock.sleeps.slice(before),
    requests: k.requests(scenario),
    meta: statusUpdate(),
  };
}

const models = (reqs: Array<{ model: string }>) => reqs.map((r) => r.model);

describe("model errors", () => {
  it("retries rate_limited with exponential backoff and jitter, never sooner than retry_after", async () => {
    const k = await chainKernel();
    const r = await runHeadless(k, "ratelimit", {
      turns: [[modelError("rate_limited", { retryAfter: 3 }), modelError("rate_limited"), reply("ok")]],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(models(r.requests)).toEqual(["alpha", "alpha", "alpha"]);
    // base 100 ms x 2^n, equal jitter at random() = 0.5 -> 75, 150; retry_after 3 s wins over 75.
    expect(r.sleeps).toEqual([3000, 150]);
  });

  it("tells frontends in the top bar while it waits to retry a rate-limited call", async () => {
    const k = await chainKernel();
    k.script("ratelimit-notice", { turns: [[modelError("rate_limited", { retryAfter: 3 }), reply("ok")]] });
    const c = k.client({ interactive: false });
    const id = await c.create("[ratelimit-notice] go");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const notice = c.events.find(
      (e) => e.event.case === "render" && e.event.value.content?.region === Region.TOP_BAR,
    );
    expect(notice?.event.value).toMatchObject({
      content: {
        replace: true,
        content: {
          root: {
            node: {
              value: { content: "model/alpha is rate limited; retry 1 of 2 in 3s", style: TextStyle.WARNING },
            },
          },
        },
      },
    });
  });

  it("falls back to the next eligible model once retries of overloaded are spent", async () => {
    const k = await chainKernel();
    const r = await runHeadless(k, "overloaded", {
      turns: [{ models: { alpha: modelError("overloaded"), beta: reply("from beta") } }],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(models(r.requests)).toEqual(["alpha", "alpha", "alpha", "beta"]);
    expect(r.sleeps).toEqual([75, 150]);
    const f = k.file(r.id);
    expect(f.messages().at(-1)!.model?.id).toBe("beta");
    // Every attempt is in the ledger; the vendor refused the three overloaded ones outright,
    // so they are on record at no cost (their usage marked estimated in the file).
    expect(f.ledger.map((l) => [l.modelId, l.inputTokens, l.costUsd])).toEqual([
      ["alpha", 0, 0],
      ["alpha", 0, 0],
      ["alpha", 0, 0],
      ["beta", 10, expect.any(Number)],
    ]);
    expect(
      f
        .messages()
        .filter((m) => m.syntheticReason === "attempt_failed:overloaded")
        .map((m) => m.usage.map((u) => u.estimated)),
    ).toEqual([[true], [true], [true]]);
  });

  for (const category of [
    "auth_error",
    "invalid_request",
    "context_length_exceeded",
    "content_filtered",
    "unknown",
  ]) {
    it(`never retries or falls back on ${category}: the session fails with that category`, async () => {
      const k = await chainKernel();
      const r = await runHeadless(k, `fail-${category}`, {
        turns: [modelError(category, { retryable: false })],
      });
      expect(r.status).toBe(SessionStatus.FAILED);
      expect(models(r.requests)).toEqual(["alpha"]);
      expect(r.sleeps).toEqual([]);
      expect(r.meta.status).toBe(SessionStatus.FAILED);
      const failure = k.logs.find(
        (l) => l.sessionId === r.id && l.message === `model call failed: ${category}`,
      );
      expect(failure).toBeDefined();
    });
  }

  it("reads a bare RESOURCE_EXHAUSTED status as context_length_exceeded and does not retry it", async () => {
    const k = await chainKernel();
    const r = await runHeadless(k, "grpcstatus", {
      turns: [{ events: [{ grpcError: { code: 8, message: "too long" } }] }],
    });
    expect(r.status).toBe(SessionStatus.FAILED);
    expect(models(r.requests)).toEqual(["alpha"]);
    expect(
      k.logs.some((l) => l.sessionId === r.id && l.message === "model call failed: context_length_exceeded"),
    ).toBe(true);
  });

  it("persists a billed attempt that then failed, keeping it out of the conversation", async () => {
    const k = await chainKernel();
    const r = await runHeadless(k, "billed", {
      turns: [
        [
          { events: [text("partial"), usage(100, 7), { error: { category: "overloaded" } }] },
          reply("ok", [10, 2]),
        ],
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    const f = k.file(r.id);
    expect(f.ledger.map((l) => [l.inputTokens, l.outputTokens])).toEqual([
      [100, 7],
      [10, 2],
    ]);
    expect(f.messages().map((m) => m.syntheticReason)).toEqual(["", "attempt_failed:overloaded", ""]);
    const second = r.requests[1]!.request;
    expect(second.messages).toHaveLength(1);
  });

  it("routes past candidates that cannot serve the turn (context window, tool use)", async () => {
    const k = await h.kernel({
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "tiny"
    }
    fallback {
      provider = "model"
      id       = "notools"
    }
    fallback {
      provider = "model"
      id       = "beta"
    }
  }
  tools = ["tools.*"]
}`,
    });
    const r = await runHeadless(k, "routing", { turns: [reply("served")] });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(models(r.requests)).toEqual(["beta"]);
    await k.close();
  });

  it("routes each turn once, and again only to fall back from a failed candidate", async () => {
    const k = await chainKernel();
    const before = k.traces.length;
    const r = await runHeadless(k, "routeonce", {
      turns: [
        calls(tool("r", "tools__read", { path: "a" })),
        { models: { alpha: modelError("overloaded", { retryable: false }), beta: reply("done") } },
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(models(r.requests)).toEqual(["alpha", "alpha", "beta"]);
    const routes = k.traces.slice(before).filter((t) => t.name === "model.route");
    // Turn 1: one routing. Turn 2: one routing, then one from the candidate after alpha.
    expect(routes.map((t) => t.attrs?.["start"])).toEqual([0, 0, 1]);
    expect(new Set(routes.map((t) => t.turnId)).size).toBe(2);
  });

  it("treats a crashed model plugin as process_crashed: retried once, then the fallback", async () => {
    const k = await h.kernel({
      providers: [{ name: "crashmodel", fixture: "model" }],
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "crashmodel"
      id       = "alpha"
    }
    fallback {
      provider = "crashmodel"
      id       = "beta"
    }
  }
}`,
    });
    const r = await runHeadless(k, "modelcrash", {
      turns: [{ models: { alpha: { events: [text("hm"), { crash: true }] }, beta: reply("recovered") } }],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    expect(models(r.requests)).toEqual(["alpha", "alpha", "beta"]);
    expect(k.file(r.id).messages().at(-1)!.model?.id).toBe("beta");
    expect(k.logs.some((l) => l.message === "model call failed: process_crashed")).toBe(true);
    await k.close();
  });
});

describe("provider_options", () => {
  it("copies each candidate's provider_options into the requests routed to it, untouched", async () => {
    await current?.close();
    current = undefined;
    const k = await h.kernel({
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider         = "model"
      id               = "alpha"
      provider_options = {
        service_tier = "priority"
        seed         = 7
        nested       = { list = [1, "two", true, null], ratio = 0.25 }
      }
    }
    fallback {
      provider         = "model"
      id               = "beta"
      provider_options = { beta_flag = true }
    }
    fallback {
      provider = "model"
      id       = "serial"
    }
  }
}
settings {
  sandbox = "off"
  retry {
    base_delay_ms  = 100
    backoff_factor = 2
    max_retries    = 1
  }
}`,
    });
    const r = await runHeadless(k, "options", {
      turns: [
        {
          models: {
            alpha: modelError("overloaded"),
            beta: modelError("overloaded"),
            serial: reply("from serial"),
          },
        },
      ],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    const alpha = {
      service_tier: "priority",
      seed: 7,
      nested: { list: [1, "two", true, null], ratio: 0.25 },
    };
    // A candidate without provider_options sends none (no empty object either).
    expect(r.requests.map((q) => [q.model, q.request.providerOptions])).toStrictEqual([
      ["alpha", alpha],
      ["alpha", alpha],
      ["beta", { beta_flag: true }],
      ["beta", { beta_flag: true }],
      ["serial", undefined],
    ]);
    await k.close();
  });
});

describe("tool failures", () => {
  it("retries a retryable data-source failure as the seed rules allow", async () => {
    const k = await chainKernel();
    const r = await runHeadless(k, "flaky", {
      turns: [calls(tool("f", "tools__flaky", { key: "flaky-1" })), reply("ok")],
    });
    expect(r.status).toBe(SessionStatus.COMPLETED);
    const result = k.file(r.id).toolResults()[0]!;
    expect(result.outcome.case).toBe("result");
    expect(result.attempts).toBe(2);
    expect(r.sleeps).toEqual([75, 150]);
  });

  it("turns a crashed tool plugin into an error tool_result and trips the breaker when crashes repeat", async () => {
    const k = await h.kernel({
      providers: [{ name: "crashy", fixture: "tools-plain" }],
      limits: { crashBreaker: 2 },
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["crashy.*"]
}`,
    });
    const r = await runHeadless(k, "toolcrash", {
      turns: [
        calls(tool("x1", "crashy__crash", {})),
        calls(tool("x2", "crashy__crash", {})),
        reply("giving up"),
      ],
    });
    expect(r.status).toBe(SessionStatus.FAILED);
    const f = k.file(r.id);
    const results = f.toolResults();
    expect(results.map((x) => x.outcome.case === "error" && x.outcome.value.category)).toEqual([
      ToolErrorCategory.PROCESS_CRASHED,
      ToolErrorCategory.PROCESS_CRASHED,
    ]);
    // The model saw an error result carrying what the tool printed before it died.
    const seen = r.requests[1]!.request.messages.at(-1).content[0].toolResult;
    expect(seen.isError).toBe(true);
    expect(seen.content[0].text.text).toContain("about to crash");
    // Breaker tripped: one final turn without tools, then the session ended.
    expect(r.requests).toHaveLength(3);
    expect(r.requests[2]!.request.tools ?? []).toEqual([]);
    expect(k.logs.some((l) => l.message.includes("stopping: a tool provider crashed repeatedly"))).toBe(true);
    await k.close();
  });

  it("reports a tool plugin killed mid-call as process_crashed, and the next call relaunches it", async () => {
    // A real process, killed by a signal from outside: the runtime notices and relaunches.
    const k = await h.kernel({
      transport: "process",
      providers: [{ name: "victim", fixture: "tools-plain" }],
      headlessAsk: "allow",
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["victim.*"]
}`,
      scripts: {
        killed: {
          turns: [
            calls(tool("s", "victim__slow", { ms: 60000 })),
            calls(tool("r", "victim__read", { path: "a" })),
            reply("ok"),
          ],
        },
      },
    });
    const c = k.client({ interactive: false });
    const id = await c.create("[killed] go");
    await c.next("streamDelta", (v) => v.kind === StreamDeltaKind.TOOL_OUTPUT);
    const pid = k.invocations().find((e) => e["tool"] === "slow")!["pid"] as number;
    process.kill(pid, "SIGKILL");
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const results = k.file(id).toolResults();
    expect(results[0]!.outcome.case === "error" && results[0]!.outcome.value.category).toBe(
      ToolErrorCategory.PROCESS_CRASHED,
    );
    expect(results[1]!.outcome.case).toBe("result");
    expect(k.file(id).applies()[0]!.items[0]!.outcome).toBe(ApplyOutcome.FAILED);
    // The relaunched process was configured again before serving the next call.
    const read = k.invocations().find((e) => e["tool"] === "read");
    expect(read?.["pid"]).not.toBe(pid);
    expect(k.logs.some((l) => l.message === 'provider "victim" relaunched and configured again')).toBe(true);
    await k.close();
  });
});

describe("cancellation", () => {
  it("closes the model stream on interrupt and records cancelled", async () => {
    const k = await chainKernel();
    k.script("cancelstream", { turns: [{ events: [text("let me think"), { waitCancel: true }] }] });
    const c = k.client();
    const id = await c.create("[cancelstream] go");
    await c.next("streamDelta", (v, e) => e.sessionId === id && v.text === "let me think");
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id)).toBe(SessionStatus.CANCELLED);
    const f = k.file(id);
    expect(f.meta.status).toBe(SessionStatus.CANCELLED);
    const last = f.messages().at(-1)!;
    expect(last.syntheticReason).toBe("cancelled");
    expect(last.message?.content[0]?.block.case === "text" && last.message.content[0].block.value.text).toBe(
      "let me think",
    );
  });

  it("gives tool calls named before an interrupt mid-stream a cancelled result, in history and in the file", async () => {
    const k = await chainKernel();
    k.script("cancelcalls", {
      turns: [
        {
          events: [
            text("reading"),
            tool("t1", "tools__read", { path: "a" }),
            text(" then"),
            { waitCancel: true },
          ],
        },
      ],
    });
    const c = k.client();
    const id = await c.create("[cancelcalls] go");
    // The stream is ordered: once " then" arrived, the kernel has the whole tool call.
    await c.next("streamDelta", (v, e) => e.sessionId === id && v.text === " then");
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id)).toBe(SessionStatus.CANCELLED);
    const f = k.file(id);
    expect(k.invocations()).toEqual([]);
    expect(f.kinds()).toEqual(["message", "message", "tool_result", "message"]);
    const r = f.toolResults()[0]!;
    expect([
      f.vendorId(r.toolCallId),
      r.toolName,
      r.outcome.case === "error" && r.outcome.value.category,
    ]).toEqual(["t1", "tools__read", ToolErrorCategory.CANCELLED]);
    expect(toolUsePairing(f.messages())).toEqual({ uses: ["t1"], results: ["t1"] });
  });

  it("cancels through the API as well: SessionHandle.interrupt()", async () => {
    const k = await chainKernel();
    k.script("apicancel", { turns: [{ events: [text("working"), { waitCancel: true }] }] });
    const handle = await k.kernel.startSession();
    const watcher = k.client({ interactive: false });
    watcher.send({ event: { case: "attachSession", value: { requestId: "w", sessionId: handle.id } } });
    await watcher.next("backfillComplete");
    handle.send("[apicancel] go");
    await watcher.next("streamDelta", (v) => v.text === "working");
    handle.interrupt();
    expect(await handle.idle()).toBe(SessionStatus.CANCELLED);
    expect(k.file(handle.id).meta.status).toBe(SessionStatus.CANCELLED);
  });

  it("cancels a running tool on interrupt; the result reports what already happened", async () => {
    const k = await chainKernel();
    k.script("cancelfool", {
      turns: [
        calls(
          tool("r", "tools__read", { path: "a" }),
          tool("s", "tools__slow", { ms: 60000 }),
          tool("w", "tools__write", { path: "z", content: "1" }),
        ),
      ],
    });
    const c = k.client();
    const id = await c.create("[cancelfool] go");
    const perm = await c.next("permissionRequest", (v) => v.planItem?.toolName === "slow");
    c.send({
      sessionId: id,
      event: { case: "planDecision", value: { planItemId: perm.planItem!.id, decision: 1, scope: 1 } },
    });
    await c.next("streamDelta", (v, e) => e.sessionId === id && v.kind === StreamDeltaKind.TOOL_OUTPUT);
    c.send({ sessionId: id, event: { case: "interrupt", value: {} } });
    expect(await c.finished(id)).toBe(SessionStatus.CANCELLED);
    const f = k.file(id);
    const slow = f.toolResults().find((r) => r.toolName === "slow")!;
    expect(slow.outcome.case === "error" && slow.outcome.value.category).toBe(ToolErrorCategory.CANCELLED);
    expect(new TextDecoder().decode(slow.output[0]!.data)).toBe("started\n");
    // The plugin itself saw the cancellation.
    const waited = async () => {
      for (let i = 0; i < 100; i++) {
        if (k.invocations().some((e) => e["phase"] === "cancelled" && e["sessionId"] === id)) return true;
        await new Promise((r) => setTimeout(r, 20));
      }
      return false;
    };
    expect(await waited()).toBe(true);
    const apply = f.applies()[0]!;
    expect(apply.items.map((i) => i.outcome)).toEqual([ApplyOutcome.CANCELLED, ApplyOutcome.CANCELLED]);
    // Every tool_use still got exactly one tool_result, and the interrupted one says what ran.
    const { uses, results } = toolUsePairing(f.messages());
    expect(results).toEqual(uses);
    const lastMessage = f.messages().at(-1)!.message!;
    const slowBlock = lastMessage.content[1]!.block;
    expect(
      slowBlock.case === "toolResult" &&
        slowBlock.value.content[0]!.block.case === "text" &&
        slowBlock.value.content[0]!.block.value.text,
    ).toContain("Output before the call stopped:\nstarted");
    expect(f.events.filter((e) => e.producer.category === PluginCategory.KERNEL).length).toBeGreaterThan(0);
  });
});
