// context-assemble with memory providers and the session's files_touched: Recall is
// translated into "memory:<type>:<id>" sections at the provider's declaration position and
// held to the same budget rules as Contribute (an answer over budget is refused whole, and
// so is a budget_exceeded failure); pending drafts and another session's session-scoped
// records never reach the prompt; every provider gets the files the session's successful
// tool calls named. Each firing's budget and returned tokens are persisted for --verbose.
import { fromBinary } from "@bufbuild/protobuf";
import { ContextContributionEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterAll, expect, it } from "vitest";
import { calls, Harness, type Loose, reply, type TestKernel, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

const memory = (name: string, id: string, mode: string, extra: Record<string, string> = {}) => ({
  name,
  fixture: "memory" as const,
  attrs: { id: JSON.stringify(id), text: JSON.stringify(`${id} text`), mode: JSON.stringify(mode), ...extra },
});
const context = (name: string, label: string) => ({
  name,
  fixture: "context" as const,
  attrs: { label: JSON.stringify(label), text: JSON.stringify(`${label} text`), mode: '"ok"' },
});

function contributions(k: TestKernel, sessionId: string) {
  return k
    .file(sessionId)
    .events.filter((e) => e.kind === EventKind.CONTEXT_CONTRIBUTION)
    .map((e) => {
      const c = fromBinary(ContextContributionEventSchema, e.payload);
      return {
        labels: c.sections.map((s) => s.label),
        dropped: c.droppedLabels,
        budget: Number(c.tokenBudget),
        returned: Number(c.returnedTokens),
        notes: c.notes,
      };
    });
}

it("puts recalled records at the provider's position and refuses what breaks the rules", async () => {
  const k = await h.kernel({
    providers: [
      context("c1", "ONE"),
      memory("m1", "fact-one", "ok"),
      memory("m2", "too-big", "over"),
      memory("m3", "draft", "pending"),
      memory("m4", "elsewhere", "foreign"),
      memory("m5", "nothing-fits", "exhausted"),
      memory("m6", "capped", "ok", { token_budget: "77" }),
      context("c2", "TWO"),
    ],
    scripts: { mem1: { turns: [reply("ok")] } },
  });
  const s = await k.kernel.startSession({ prompt: "[mem1] go" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  const sent = k.requests("mem1")[0]!.request.assembledContext.map((x: Loose) => [x.provider, x.label]);
  expect(sent).toEqual([
    ["c1", "ONE"],
    ["m1", "memory:project:fact-one"],
    ["m6", "memory:project:capped"],
    ["c2", "TWO"],
  ]);
  const events = contributions(k, s.id);
  expect(events.map((e) => [e.labels, e.dropped, e.budget])).toEqual([
    [["ONE"], [], 500],
    [["memory:project:fact-one"], [], 300],
    [[], ["memory:project:too-big"], 300],
    [[], ["memory:project:draft"], 300],
    [[], ["memory:project:elsewhere"], 300],
    [[], [], 300],
    [["memory:project:capped"], [], 77],
    [["TWO"], [], 500],
  ]);
  expect(events[2]!.returned).toBe(301);
  expect(events[2]!.notes.join()).toContain('"m2" exceeded its budget (301 > 300 tokens)');
  expect(events[3]!.notes.join()).toContain("pending draft");
  expect(events[4]!.notes.join()).toContain("scoped to another session");
  expect(events[5]!.notes.join()).toContain("budget_exceeded");
  const recalls = k.hookLog("memory.jsonl");
  expect(recalls.every((r) => r["includePending"] === false && r["target"] === "alpha")).toBe(true);
  expect(k.logs.some((l) => l.level === "warn" && l.message.includes('"m2" exceeded its budget'))).toBe(true);
  // The config-load lint: a static provider after a dynamic one (recall is dynamic).
  expect(
    k.logs.filter((l) => l.message.includes("(dynamic) is declared before")).map((l) => l.message),
  ).toEqual([
    'context provider "m1" (dynamic) is declared before "c2" (static); its changes invalidate the prompt-cache prefix for "c2"',
  ]);
  await k.close();
});

it("gives every provider the files the session's successful tool calls named", async () => {
  const k = await h.kernel({
    providers: [context("c1", "ONE"), memory("m1", "fact", "ok")],
    scripts: {
      touch: {
        turns: [
          calls(
            tool("a", "tools__read", { path: "src/a.ts" }),
            tool("b", "tools__read", { path: "/elsewhere/b.md" }),
            tool("c", "tools__nope", { path: "never.ts" }),
          ),
          calls(
            tool("d", "tools__read", { path: "src/a.ts" }),
            tool("e", "tools__read", { path: "docs/c.md" }),
          ),
          reply("done"),
        ],
      },
    },
  });
  const s = await k.kernel.startSession({ prompt: "[touch] go" });
  expect(await s.idle()).toBe(SessionStatus.COMPLETED);
  const seen = (file: string) => k.hookLog(file).map((r) => r["filesTouched"]);
  const expected = [[], ["src/a.ts", "/elsewhere/b.md"], ["/elsewhere/b.md", "src/a.ts", "docs/c.md"]];
  expect(seen("context.jsonl")).toEqual(expected);
  expect(seen("memory.jsonl")).toEqual(expected);
  await k.close();
});
