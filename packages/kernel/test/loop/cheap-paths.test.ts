// Cheap paths stay cheap: what crosses to a plugin on an ordinary turn is what it uses.
// - a compactor is sent the conversation only when the kernel asks it to compact;
// - a context contribution identical to the provider's last one is not persisted (nor
//   published) again, while the model request stays byte for byte the same;
// - a widget that declared its feed gets only that: no response text, no other tools'
//   results (a 1 MB one included).
// Spies are in-process plugins: the in-process transport hands them a wire copy of each
// request, so the bytes counted are the bytes a worker or process would receive.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { StatusError, service } from "@pluggableharness/plugin-sdk";
import { HookPoint } from "@pluggableharness/protocol/common";
import { Stability } from "@pluggableharness/protocol/content";
import { ContextRequestSchema, ContextService } from "@pluggableharness/protocol/context";
import { ContextContributionEventSchema } from "@pluggableharness/protocol/event";
import { DispatchHookRequestSchema, HookSubscriberService } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { Region } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { WidgetService } from "@pluggableharness/protocol/widget";
import { afterAll, expect, it } from "vitest";
import type { InProcessPluginFactory } from "../../src/index.ts";
import { calls, Harness, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

interface CompactorSeen {
  historyMessages: number;
  requestBytes: number;
  compaction: boolean;
}

/** A compactor that leaves the chain alone and records what each Contribute carried. */
function spyCompactor(seen: CompactorSeen[]): InProcessPluginFactory {
  return () => ({
    packageJson: { name: "spy-compactor", version: "1.0.0", pluggableharness: { name: "spy-compactor" } },
    services: [
      service(ContextService, {
        getCapabilities: () => ({
          capabilities: {
            defaultTokenBudget: 0n,
            stability: Stability.DYNAMIC,
            compactor: true,
            configSchema: { attributes: [] },
          },
        }),
        configure: () => ({ result: {} }),
        contribute: (req) => {
          seen.push({
            historyMessages: req.conversationHistory.length,
            requestBytes: toBinary(ContextRequestSchema, create(ContextRequestSchema, req)).length,
            compaction: req.compaction !== undefined,
          });
          return { sections: req.priorSections };
        },
      }),
    ],
  });
}

it("sends a compactor no conversation on ordinary turns and records an unchanged contribution once", async () => {
  const seen: CompactorSeen[] = [];
  const k = await h.kernel({
    providers: [
      {
        name: "rules",
        fixture: "context",
        attrs: { label: '"RULES"', text: '"always the same"', mode: '"ok"' },
      },
      { name: "squash", fixture: "context", factory: spyCompactor(seen) },
    ],
    scripts: { cheap: { turns: [reply("one"), reply("two"), reply("three")] } },
  });
  const s = await k.kernel.startSession({ prompt: "[cheap] first" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  s.send("[cheap] second");
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  s.send("[cheap] third");
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);

  // Three ordinary turns: the compactor fired three times, never asked to compact, and
  // was sent no conversation (before: 1, 3 and 5 messages).
  expect(seen.map((x) => [x.compaction, x.historyMessages])).toEqual([
    [false, 0],
    [false, 0],
    [false, 0],
  ]);

  // One context_contribution per provider: the later firings returned the same thing.
  const contributions = k
    .file(s.id)
    .events.filter((e) => e.kind === EventKind.CONTEXT_CONTRIBUTION)
    .map((e) => fromBinary(ContextContributionEventSchema, e.payload).sections.map((x) => x.label));
  expect(contributions).toEqual([["RULES"], []]);

  // The model still gets the same context on every request.
  const sent = k.requests("cheap").map((r) => JSON.stringify(r.request.assembledContext));
  expect(sent).toHaveLength(3);
  expect(new Set(sent).size).toBe(1);
  expect(sent[0]).toContain("always the same");
  await k.close();
});

interface WidgetSeen {
  point: string;
  tool: string;
  bytes: number;
  hasMessage: boolean;
}

/** A widget that records every dispatch; with `declared`, it declares the feed it draws from. */
function spyWidget(seen: WidgetSeen[], declared: boolean): InProcessPluginFactory {
  return () => ({
    packageJson: { name: "spy-widget", version: "1.0.0", pluggableharness: { name: "spy-widget" } },
    services: [
      service(WidgetService, {
        getCapabilities: () => ({
          capabilities: {
            regions: [Region.INPUT_BAR],
            configSchema: { attributes: [] },
            supportedHookPoints: [HookPoint.POST_MODEL_RESPONSE, HookPoint.POST_TOOL_CALL],
            ...(declared ? { feed: { tools: ["write"], usageOnly: true } } : {}),
          },
        }),
        configure: () => ({ result: {} }),
        async *attach(req, ctx) {
          if (!req.sessionId) throw new StatusError(3, "Attach needs a session_id");
          await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
        },
      }),
      service(HookSubscriberService, {
        dispatchHook(req) {
          const p = req.payload?.point;
          seen.push({
            point: p?.case ?? "",
            tool: p?.case === "postToolCall" ? (p.value.call?.toolName ?? "") : "",
            bytes: toBinary(DispatchHookRequestSchema, create(DispatchHookRequestSchema, req)).length,
            hasMessage: p?.case === "postModelResponse" && p.value.message !== undefined,
          });
          return { outcome: { case: "observe", value: {} } };
        },
      }),
    ],
  });
}

it("sends a widget only what it draws: no 1 MB tool result, no response text", async () => {
  const seen: WidgetSeen[] = [];
  const whole: WidgetSeen[] = [];
  const MB = 1024 * 1024;
  const k = await h.kernel({
    providers: [
      { name: "gauge", fixture: "context", factory: spyWidget(seen, true) },
      // A widget declaring no feed: whole payloads, as before feeds existed.
      { name: "legacy", fixture: "context", factory: spyWidget(whole, false) },
    ],
    scripts: {
      big: {
        turns: [
          calls(tool("r", "tools__read", { path: "huge", bytes: MB })),
          calls(tool("w", "tools__write", { path: "a", content: "1" })),
          reply("the answer ".repeat(10_000)),
        ],
      },
    },
    headlessAsk: "allow",
  });
  const s = await k.kernel.startSession({ prompt: "[big] go" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  // The read's 1 MB result reached the widget without a feed, with the response's text.
  expect(whole.find((x) => x.tool === "read")!.bytes).toBeGreaterThan(MB);
  expect(whole.filter((x) => x.hasMessage)).toHaveLength(3);

  // Three model responses, each as usage only; of the tool calls, only the one it draws.
  expect(seen.filter((x) => x.point === "postModelResponse")).toHaveLength(3);
  expect(seen.some((x) => x.hasMessage)).toBe(false);
  expect(seen.filter((x) => x.point === "postToolCall").map((x) => x.tool)).toEqual(["write"]);
  const total = seen.reduce((n, x) => n + x.bytes, 0);
  expect(total).toBeLessThan(4_000);
  await k.close();
});
