// Failures and compaction on the exported trace (issue 36, point 2): the kernel's real
// OpenTelemetry SDK exports over OTLP/gRPC to the loopback receiver (decoded with the
// OpenTelemetry project's own protobuf code) while the in-process loop runs scripted
// failures. Each failed span has status ERROR and `error.type` = the spec's category: a
// model error's (rate_limited), a crashed tool plugin's (process_crashed), a failed hook
// subscriber's (observe_failed, with the plugin call's own failure as hook.error.cause).
// Compaction is a span with a child per compactor asked, and `agent.compactions` counts it.
import { fileURLToPath } from "node:url";
import {
  type OtlpReceiver,
  type ReceivedSpan,
  spanTree,
  startOtlpReceiver,
} from "@pluggableharness/otlp-receiver";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { calls, Harness, modelError, reply, tool } from "./harness.ts";

const COMPACTOR = fileURLToPath(new URL("../../../../providers/compactor", import.meta.url));

const h = new Harness();
let receiver: OtlpReceiver;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await h.dispose();
  await receiver?.close();
});

const observability = () => `
  observability {
    endpoint           = "${receiver.grpcEndpoint}"
    protocol           = "grpc"
    sampling_ratio     = 1.0
    traces_enabled     = true
    metrics_enabled    = true
    logs_enabled       = false
    export_interval_ms = 60000
    service_name       = "loop-telemetry"
  }`;

const ERROR = 2;

function only(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  if (found.length !== 1) throw new Error(`${found.length} spans "${name}" in\n${spanTree(spans)}`);
  return found[0]!;
}

describe("telemetry of failures and compaction", () => {
  it("records model, tool-crash and hook failures with the spec's error category", async () => {
    const k = await h.kernel({
      // What a fleet worker passes for each task (packages/fleet/src/run-task.ts).
      telemetryResource: { "fleet.batch_id": "b-7", "fleet.task_id": "t-3" },
      providers: [
        { name: "crashy", fixture: "tools-plain" },
        {
          name: "first",
          fixture: "hooks",
          attrs: { behavior: JSON.stringify(JSON.stringify({ "post-model-response": "fail" })) },
        },
      ],
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["crashy.*"]
}
hook "post-model-response" {
  provider = "first"
  mode     = "observe"
}
settings {${observability()}
}`,
    });
    k.script("fails", {
      turns: [[modelError("rate_limited"), calls(tool("c1", "crashy__crash", {}))], reply("done")],
    });
    const s = await k.kernel.startSession({ prompt: "[fails] go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const traceIds = new Set<string>();
    await k.close();
    const spans = receiver.spans.filter((x) => x.resource["service.name"] === "loop-telemetry");
    for (const x of spans) traceIds.add(x.traceId);
    expect(traceIds.size).toBe(1);
    // Every span names the kernel's batch and task, beside observability{}'s own resource.
    expect(
      new Set(spans.map((x) => `${x.resource["fleet.batch_id"]}/${x.resource["fleet.task_id"]}`)),
    ).toEqual(new Set(["b-7/t-3"]));

    // The first model attempt failed as rate_limited, the retry succeeded.
    const chats = spans
      .filter((x) => x.name === "chat alpha")
      .sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    expect(chats.map((c) => [c.statusCode, c.attributes["error.type"]])).toEqual([
      [ERROR, "rate_limited"],
      [0, undefined],
      [0, undefined],
    ]);
    // The crashed tool plugin: process_crashed on the execute_tool span.
    const crash = only(spans, "execute_tool crashy.crash");
    expect(crash.statusCode).toBe(ERROR);
    expect(crash.attributes["error.type"]).toBe("process_crashed");
    expect(crash.attributes["tool.outcome"]).toBe("process_crashed");
    // The failing observer: the hook's category, and what the plugin call did under it.
    const failed = spans.filter((x) => x.name === "hook.subscriber first");
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect(f.statusCode).toBe(ERROR);
      expect(f.attributes["error.type"]).toBe("observe_failed");
      expect(f.attributes["hook.error.cause"]).toBe("internal");
    }
    expect(
      receiver.points
        .filter((p) => p.metric === "agent.model.retries" && p.attributes["error.type"] === "rate_limited")
        .reduce((a, p) => a + p.value, 0),
    ).toBe(1);
  });

  it("spans a compaction with a child per compactor and counts it", async () => {
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
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
}
settings {
  sandbox = "off"
  compaction {
    context_window = 2000
    threshold      = "95%"
  }${observability().replace("loop-telemetry", "loop-compaction")}
}`,
      headlessAsk: "allow",
    });
    // The summary request cannot fit the window: the compactor fails and the kernel drops
    // the oldest turns (compaction-bounds.test.ts) — one compaction, by the kernel.
    k.script("big", { turns: ["one", "two", "three", "four"].map((t) => reply(t, [5000, 5])) });
    k.script("default", { turns: [reply("a summary")] });
    const words = "a fairly long prompt that fills the small window quickly. ".repeat(10);
    const s = await k.kernel.startSession({ prompt: `[big] ${words}` });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    for (let i = 0; i < 3; i++) {
      s.send(`[big] ${words}`);
      expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    }
    await k.close();
    const spans = receiver.spans.filter((x) => x.resource["service.name"] === "loop-compaction");
    const compactions = spans.filter((x) => x.name === "compaction");
    const done = compactions.filter((c) => c.attributes["compaction.outcome"] === "compacted");
    expect(done, spanTree(spans)).toHaveLength(1);
    expect(done[0]!.attributes["compaction.reason"]).toBe("threshold");
    // In the turn's context-assembly step, with the compactor it asked as a child.
    const step = spans.find((x) => x.spanId === done[0]!.parentSpanId);
    expect(step?.name).toBe("step 1 context-assemble");
    expect(spans.find((x) => x.spanId === step!.parentSpanId)?.name).toBe("turn");
    const asked = spans.find(
      (x) => x.parentSpanId === done[0]!.spanId && x.name === "compaction.compactor compactor",
    );
    expect(asked, spanTree(spans)).toBeDefined();
    const counted = receiver.points.filter(
      (p) => p.metric === "agent.compactions" && p.resource["service.name"] === "loop-compaction",
    );
    expect(counted.reduce((a, p) => a + p.value, 0)).toBe(1);
    expect(counted[0]!.attributes).toMatchObject({
      "compaction.reason": "threshold",
      "compaction.by": "kernel",
    });
  }, 60_000);

  it("puts a compactor's summary model call under its compactor span, in the session's trace", async () => {
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
      hcl: `
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
}
settings {
  sandbox = "off"${observability().replace("loop-telemetry", "loop-summary")}
}`,
      headlessAsk: "allow",
    });
    k.script("talk", { turns: [reply("first answer"), reply("second answer")] });
    // The summary request names no scenario: the scripted model's "default" one answers it.
    k.script("default", { turns: [reply("a summary")] });
    const s = await k.kernel.startSession({ prompt: "[talk] one" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    s.send("[talk] two");
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    expect(s.compact()).toBeUndefined();
    await s.idle();
    await k.close();
    const spans = receiver.spans.filter((x) => x.resource["service.name"] === "loop-summary");
    const asked = only(spans, "compaction.compactor compactor");
    const summary = spans.find((x) => x.name === "chat alpha" && x.parentSpanId === asked.spanId);
    expect(summary, spanTree(spans)).toBeDefined();
    // Up the tree: compaction, then the session run that /compact started.
    const up = (x: ReceivedSpan) => spans.find((y) => y.spanId === x.parentSpanId);
    expect(up(asked)?.name).toBe("compaction");
    expect(up(up(asked)!)?.name).toBe("session");
  }, 60_000);
});
