// context-assemble: the Contribute chain in declaration order, each provider within its
// budget (agent.hcl's token_budget, else its declared default). Over-budget and
// non-text sections are dropped and logged, a provider touching another's section has
// its answer discarded, a failing provider is skipped; the turn goes on regardless.
import { fromBinary } from "@bufbuild/protobuf";
import { ContextContributionEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, expect, it } from "vitest";
import { Harness, type Loose, reply, type TestKernel } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const ctx = (name: string, label: string, mode: string, extra: Record<string, string> = {}) => ({
  name,
  fixture: "context" as const,
  attrs: {
    label: JSON.stringify(label),
    text: JSON.stringify(`${label} text`),
    mode: JSON.stringify(mode),
    ...extra,
  },
});

function contributions(k: TestKernel, sessionId: string) {
  return k
    .file(sessionId)
    .events.filter((e) => e.kind === EventKind.CONTEXT_CONTRIBUTION)
    .map((e) => {
      const c = fromBinary(ContextContributionEventSchema, e.payload);
      return { provider: e.producer.name, labels: c.sections.map((s) => s.label), dropped: c.droppedLabels };
    });
}

it("drops an over-budget section and discards a provider that edits another's section", async () => {
  const k = await h.kernel({
    providers: [ctx("c1", "ONE", "ok"), ctx("c2", "TWO", "over"), ctx("c3", "THREE", "violate")],
    scripts: { ctx1: { turns: [reply("ok")] } },
  });
  const s = await k.kernel.startSession({ prompt: "[ctx1] go" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  const sent = k.requests("ctx1")[0]!.request.assembledContext.map((x: Loose) => [x.provider, x.label]);
  expect(sent).toEqual([["c1", "ONE"]]);
  expect(contributions(k, s.id)).toEqual([
    { provider: "test-context", labels: ["ONE"], dropped: [] },
    { provider: "test-context", labels: [], dropped: ["TWO"] },
  ]);
  expect(k.logs.some((l) => l.level === "warn" && l.message.includes('"c2" exceeded its budget'))).toBe(true);
  // What --verbose shows of each firing: the budget, what came back, and why it was refused.
  const over = k
    .file(s.id)
    .events.filter((e) => e.kind === EventKind.CONTEXT_CONTRIBUTION)
    .map((e) => fromBinary(ContextContributionEventSchema, e.payload))[1]!;
  expect([over.tokenBudget, over.returnedTokens]).toEqual([500n, 501n]);
  expect(over.notes).toEqual([
    'context provider "c2" exceeded its budget (501 > 500 tokens); its sections are dropped',
  ]);
  expect(
    k.logs.some((l) => l.level === "warn" && l.message.includes('"c3" changed sections it does not own')),
  ).toBe(true);
  await k.close();
});

it("skips a failing provider, drops non-text content and honours agent.hcl's token_budget", async () => {
  const k = await h.kernel({
    providers: [
      ctx("c1", "ONE", "fail"),
      ctx("c2", "TWO", "nontext"),
      ctx("c3", "THREE", "ok", { token_budget: "123" }),
    ],
    scripts: { ctx2: { turns: [reply("ok")] } },
  });
  const s = await k.kernel.startSession({ prompt: "[ctx2] go" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  const sent = k.requests("ctx2")[0]!.request.assembledContext.map((x: Loose) => x.label);
  expect(sent).toEqual(["THREE"]);
  expect(contributions(k, s.id).map((c) => [c.labels, c.dropped])).toEqual([
    [[], ["TWO"]],
    [["THREE"], []],
  ]);
  const budgets = k.hookLog("context.jsonl").map((e) => [e["label"], e["budget"]]);
  expect(budgets).toEqual([
    ["ONE", 500],
    ["TWO", 500],
    ["THREE", 123],
  ]);
  expect(k.logs.some((l) => l.message.includes('"c1" failed'))).toBe(true);
  await k.close();
});
