// The turn algorithm's order over a realistic two-turn session with real plugin
// subprocesses: a scripted model, a tool provider, two context providers and three hook
// subscribers (observe everywhere, a transform at pre-model-call, a veto at plan-ready).
// Turn 1 calls a data source, an interactive tool and two resources (one allowed by
// policy, one asked and approved by the attached human); turn 2 answers.
import { fromBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { ContextContributionEventSchema } from "@pluggableharness/protocol/event";
import { ClientDecision, StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestKernel, tool, toolUsePairing } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const HOOKS = `
policy "allow_writes" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}
hook "session-start" {
  provider = "recorder"
  mode     = "observe"
}
hook "pre-model-call" {
  provider = "recorder"
  mode     = "observe"
}
hook "pre-model-call" {
  provider = "editor"
  mode     = "transform"
}
hook "post-model-response" {
  provider = "recorder"
  mode     = "observe"
}
hook "pre-tool-call" {
  provider = "recorder"
  mode     = "observe"
}
hook "plan-ready" {
  provider = "gate"
  mode     = "veto"
}
hook "plan-ready" {
  provider = "recorder"
  mode     = "observe"
}
hook "post-tool-call" {
  provider = "recorder"
  mode     = "observe"
}
hook "post-apply" {
  provider = "recorder"
  mode     = "observe"
}
hook "session-end" {
  provider = "recorder"
  mode     = "observe"
}
`;

describe("a two-turn session", () => {
  let k: TestKernel;
  let id: string;
  let deltasBeforeFinalRender = false;

  beforeAll(async () => {
    k = await h.kernel({
      providers: [
        { name: "ctxa", fixture: "context", attrs: { label: '"RULES.md"', text: '"be brief"' } },
        { name: "ctxb", fixture: "context", attrs: { label: '"STATE"', text: '"branch main, clean tree"' } },
        { name: "recorder", fixture: "hooks" },
        { name: "editor", fixture: "hooks" },
        { name: "gate", fixture: "hooks" },
      ],
      hcl: HOOKS,
      scripts: {
        conformance: {
          turns: [
            calls(
              tool("c1", "tools__read", { path: "a.txt" }),
              tool("c2", "tools__ask", { question: "which branch?" }),
              tool("c3", "tools__write", { path: "b.txt", content: "hello" }),
              tool("c4", "tools__remove", { path: "c.txt" }),
            ),
            reply("All done.", [30, 8]),
          ],
        },
      },
    });
    const c = k.client();
    id = await c.create("[conformance] tidy the repo");
    const question = await c.next("interactiveRequest", (_v, e) => e.sessionId === id);
    c.send({
      sessionId: id,
      event: {
        case: "interactiveResponse",
        value: { callId: question.callId, response: { answer: "main" } },
      },
    });
    const ask = await c.next("permissionRequest", (_v, e) => e.sessionId === id);
    c.send({
      sessionId: id,
      event: {
        case: "planDecision",
        value: {
          planItemId: ask.planItem!.id,
          decision: ClientDecision.ALLOW,
          scope: PlanDecisionScope.ONCE,
        },
      },
    });
    expect(await c.finished(id)).toBe(SessionStatus.COMPLETED);
    const deltaAt = c.events.findIndex(
      (e) => e.event.case === "streamDelta" && e.event.value.text === "All done.",
    );
    const lastRender = c.events.findLastIndex((e) => e.event.case === "render");
    deltasBeforeFinalRender = deltaAt >= 0 && deltaAt < lastRender;
    expect(c.of("streamDelta").find((e) => e.event.value.text === "All done.")?.event.value.kind).toBe(
      StreamDeltaKind.TEXT,
    );
  });

  it("runs steps 1-18 in order on a tool turn and 1-6, 15, 18 on the answering turn", () => {
    const perTurn = new Map<string, string[]>();
    for (const t of k.traces) {
      if (t.sessionId !== id || t.name !== "step") continue;
      const list = perTurn.get(t.turnId!) ?? [];
      list.push(t.step!);
      perTurn.set(t.turnId!, list);
    }
    expect([...perTurn.values()]).toEqual([
      [
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "7",
        "8",
        "9",
        "9b",
        "10",
        "11",
        "12",
        "13",
        "14",
        "15",
        "16",
        "17",
        "18",
      ],
      ["1", "2", "3", "4", "5", "6", "15", "18"],
    ]);
    const bracket = k.traces
      .filter((t) => t.sessionId === id && t.name.startsWith("session."))
      .map((t) => t.name);
    expect(bracket).toEqual(["session.start", "session.end"]);
  });

  it("dispatches every hook point to its subscribers in declaration order", () => {
    const seen = k
      .hookLog()
      .map((e) => `${e["subscriber"]}:${e["point"]}${e["tool"] ? `:${e["tool"]}` : ""}`);
    expect(seen).toEqual([
      "recorder:session-start",
      "recorder:pre-model-call",
      "editor:pre-model-call",
      "recorder:post-model-response",
      "recorder:pre-tool-call:read",
      "recorder:pre-tool-call:ask",
      "recorder:pre-tool-call:write",
      "recorder:pre-tool-call:remove",
      "gate:plan-ready",
      "recorder:plan-ready",
      "recorder:post-tool-call:read",
      "recorder:post-tool-call:ask",
      "recorder:post-tool-call:write",
      "recorder:post-tool-call:remove",
      "recorder:post-apply",
      "recorder:pre-model-call",
      "editor:pre-model-call",
      "recorder:post-model-response",
      "recorder:session-end",
    ]);
    // Subscribers at plan-ready see the policy engine's per-item decisions (it runs first).
    const planReady = k.hookLog().find((e) => e["point"] === "plan-ready");
    expect(planReady?.["decisions"]).toEqual([PlanDecision.ALLOW, PlanDecision.ASK]);
    expect(k.hookLog().at(-1)?.["status"]).toBe(SessionStatus.COMPLETED);
  });

  it("chains context providers in declaration order within their budgets", () => {
    const log = k.hookLog("context.jsonl");
    expect(log.map((e) => [e["label"], e["prior"]])).toEqual([
      ["RULES.md", []],
      ["STATE", ["RULES.md"]],
      ["RULES.md", []],
      ["STATE", ["RULES.md"]],
    ]);
    expect(log[0]?.["budget"]).toBe(500);
    expect(log[0]?.["target"]).toBe("alpha");
    const request = k.requests("conformance")[0]!.request;
    expect(
      request.assembledContext.map((s: { label: string; provider: string }) => [s.provider, s.label]),
    ).toEqual([
      ["ctxa", "RULES.md"],
      ["ctxb", "STATE"],
    ]);
  });

  it("runs the data source, the interactive call and both resources, each exactly once", () => {
    const started = k
      .invocations()
      .filter((e) => e["phase"] === "start")
      .map((e) => e["tool"]);
    expect(started.sort()).toEqual(["read", "remove", "write"]);
  });

  it("records events, ledger rows, plan items and producers in the session file", () => {
    const f = k.file(id);
    expect(f.kinds()).toEqual([
      "message",
      "context_contribution",
      "context_contribution",
      "message",
      "tool_call",
      "tool_call",
      "tool_call",
      "tool_call",
      "tool_result",
      "tool_result",
      "plan",
      "tool_result",
      "tool_result",
      "apply",
      // The second call's context is what the first had: not recorded again.
      "message",
      "message",
    ]);
    // One ledger row per usage report, priced at alpha's rates ($3 / $15 per Mtok).
    expect(f.ledger.map((r) => [r.providerName, r.modelId, r.inputTokens, r.outputTokens])).toEqual([
      ["model", "alpha", 20, 10],
      ["model", "alpha", 30, 8],
    ]);
    expect(f.ledger[0]!.costUsd).toBeCloseTo(0.00021, 12);
    expect(f.ledger[1]!.costUsd).toBeCloseTo(0.00021, 12);
    expect(f.planItems.map((p) => [p.toolName, p.decisionText, p.decidedBy])).toEqual([
      ["write", "allow", "allow_writes"],
      ["remove", "ask", "policy:default"],
    ]);
    const apply = f.applies()[0]!;
    expect(apply.items.map((i) => i.decidedBy)).toEqual(["allow_writes", "human:once"]);
    expect(f.producers.map((p) => [p.categoryText, p.name]).sort()).toEqual([
      ["context", "test-context"],
      ["kernel", "kernel"],
      ["tool", "test-tools"],
    ]);
    const kernelEvents = f.events.filter((e) => ["message", "plan", "apply"].includes(e.kindText));
    expect(new Set(kernelEvents.map((e) => e.producer.category))).toEqual(new Set([PluginCategory.KERNEL]));
    const contributions = f.events
      .filter((e) => e.kind === EventKind.CONTEXT_CONTRIBUTION)
      .map((e) => fromBinary(ContextContributionEventSchema, e.payload).sections.map((s) => s.label));
    expect(contributions).toEqual([["RULES.md"], ["STATE"]]);
    expect(f.meta.status).toBe(SessionStatus.COMPLETED);
  });

  it("appends tool_result blocks in the order of the tool_use blocks", () => {
    const messages = k.file(id).messages();
    const { uses, results } = toolUsePairing(messages);
    expect(uses).toEqual(["c1", "c2", "c3", "c4"]);
    expect(results).toEqual(["c1", "c2", "c3", "c4"]);
    const second = k.requests("conformance")[1]!.request;
    const last = second.messages.at(-1);
    expect(last.role).toBe("ROLE_USER");
    expect(last.content.map((b: { toolResult: { toolUseId: string } }) => b.toolResult.toolUseId)).toEqual([
      "c1",
      "c2",
      "c3",
      "c4",
    ]);
    expect(JSON.parse(last.content[1].toolResult.content[0].text.text)).toEqual({ answer: "main" });
  });

  it("presents tools to the model as <provider>__<tool> and forwards text deltas live", () => {
    const first = k.requests("conformance")[0]!.request;
    expect(first.tools.map((t: { name: string }) => t.name)).toContain("tools__write");
    expect(deltasBeforeFinalRender).toBe(true);
  });
});
