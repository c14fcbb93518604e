// Units of the sub-agent machinery (issue 20): the kernel-wide ToolLocks (cross-session
// exclusion, keyed locks, re-entry for descendants, FIFO, abort), the cost/turn roll-up
// along the session tree, and the ToolSchema rules of spawn-capable operations.
import { KernelCallbackService, RunSessionRequestSchema } from "@pluggableharness/protocol/kernel";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { type LockClaim, type LockOwner, ToolLocks } from "../../src/domain/scheduler.ts";
import { ToolSchemaRule, validateToolSchemas } from "../../src/domain/tool-schema.ts";
import { CostNode, checkBounds } from "../../src/loop/turn/bounds.ts";
import { childRemainingDepth } from "../../src/subagents/risk.ts";
import { objectSchema, resource, schemaResponse } from "./fixtures.ts";

const flush = () => new Promise<void>((r) => setImmediate(r));
const exclusive: LockClaim = { provider: "p", providerExclusive: true, interactive: false };
const key = (k: string): LockClaim => ({
  provider: "p",
  providerExclusive: false,
  key: k,
  interactive: false,
});
const root = (s: string): LockOwner => ({ session: s, ancestors: [] });
const child = (s: string, ...ancestors: string[]): LockOwner => ({ session: s, ancestors });

/** Acquires and records when the grant came. */
function track(locks: ToolLocks, claim: LockClaim, owner: LockOwner, log: string[], name: string) {
  const waited: string[] = [];
  const p = locks.acquire(claim, owner, { onWait: () => waited.push(name) }).then((release) => {
    log.push(name);
    return release;
  });
  return { p, waited };
}

describe("ToolLocks: one lock table for every session of a kernel", () => {
  it("an exclusive provider claim of one session blocks another session's call", async () => {
    const locks = new ToolLocks();
    const log: string[] = [];
    const a = track(locks, exclusive, root("A"), log, "a");
    const b = track(locks, exclusive, root("B"), log, "b");
    await flush();
    expect(log).toEqual(["a"]);
    expect(b.waited).toEqual(["b"]);
    (await a.p)();
    await flush();
    expect(log).toEqual(["a", "b"]);
    (await b.p)();
    expect(locks.heldCount).toBe(0);
  });

  it("equal keys exclude each other across sessions; distinct keys do not", async () => {
    const locks = new ToolLocks();
    const log: string[] = [];
    const a = track(locks, key("k1"), root("A"), log, "a");
    const b = track(locks, key("k1"), root("B"), log, "b");
    const c = track(locks, key("k2"), root("C"), log, "c");
    await flush();
    expect(log).toEqual(["a", "c"]);
    // A provider-wide claim waits for every keyed one, and keys wait behind it (FIFO).
    const d = track(locks, exclusive, root("D"), log, "d");
    (await a.p)();
    await flush();
    expect(log).toEqual(["a", "c", "b"]);
    (await c.p)();
    (await b.p)();
    await flush();
    expect(log).toEqual(["a", "c", "b", "d"]);
    (await d.p)();
  });

  it("a later root session's call does not overtake an earlier waiter it conflicts with", async () => {
    const locks = new ToolLocks();
    const log: string[] = [];
    const a = track(locks, key("k1"), root("A"), log, "a");
    const b = track(locks, exclusive, root("B"), log, "b");
    const c = track(locks, key("k2"), root("C"), log, "c");
    await flush();
    // k2 is free, but B waits for the provider first.
    expect(log).toEqual(["a"]);
    (await a.p)();
    await flush();
    expect(log).toEqual(["a", "b"]);
    (await b.p)();
    await flush();
    expect(log).toEqual(["a", "b", "c"]);
    (await c.p)();
  });

  it("a descendant is not blocked by what its ancestor's spawning call holds", async () => {
    const locks = new ToolLocks();
    const log: string[] = [];
    const parent = track(locks, exclusive, root("P"), log, "parent");
    const other = track(locks, exclusive, root("X"), log, "other");
    // The child of P (waiting inside P's call) gets the provider; X keeps waiting.
    const kid = track(locks, exclusive, child("C", "P"), log, "child");
    await flush();
    expect(log).toEqual(["parent", "child"]);
    (await kid.p)();
    (await parent.p)();
    await flush();
    expect(log).toEqual(["parent", "child", "other"]);
    (await other.p)();
  });

  it("an abort while waiting withdraws the claim", async () => {
    const locks = new ToolLocks();
    const log: string[] = [];
    const a = track(locks, exclusive, root("A"), log, "a");
    const ac = new AbortController();
    const b = locks.acquire(exclusive, root("B"), { signal: ac.signal });
    await flush();
    expect(locks.waitingCount).toBe(1);
    ac.abort(new Error("interrupted"));
    await expect(b).rejects.toThrow("interrupted");
    expect(locks.waitingCount).toBe(0);
    (await a.p)();
    expect(locks.heldCount).toBe(0);
  });
});

describe("bounds roll up the session tree", () => {
  it("a child's spend and turns count at every ancestor; the tightest remainder wins", () => {
    const rootNode = new CostNode(1.0, undefined, 10);
    const mid = new CostNode(undefined, rootNode, undefined);
    const leaf = new CostNode(5.0, mid, 50);
    leaf.charge(0.75, { input: 100, output: 20 });
    leaf.chargeTurn();
    expect([rootNode.spentUsd, mid.spentUsd, leaf.spentUsd]).toEqual([0.75, 0.75, 0.75]);
    expect([rootNode.inputTokens, rootNode.outputTokens]).toEqual([100, 20]);
    expect(leaf.remainingUsd()).toBeCloseTo(0.25, 9);
    expect(leaf.remainingTurns()).toBe(9);
    mid.charge(0.3);
    // The root's budget is gone: the leaf stops though its own bound is far off.
    expect(checkBounds({ turns: 1, elapsedMs: 0, cost: leaf })).toBe("max_cost_usd");
    for (let i = 0; i < 9; i++) mid.chargeTurn();
    const fresh = new CostNode(undefined, new CostNode(undefined, undefined, 10));
    fresh.parent!.charge(0);
    for (let i = 0; i < 10; i++) fresh.chargeTurn();
    expect(checkBounds({ turns: 1, elapsedMs: 0, cost: fresh })).toBe("max_turns");
  });

  it("remaining depth only shrinks going down", () => {
    expect(childRemainingDepth(2, { max_depth: undefined } as never)).toBe(1);
    expect(childRemainingDepth(3, { max_depth: 1 } as never)).toBe(1);
    // A generous profile deep in the tree cannot widen its ancestor's budget.
    expect(childRemainingDepth(1, { max_depth: 10 } as never)).toBe(0);
  });
});

describe("spawn-capable operations (ToolSchema.spawns)", () => {
  const spawnTool = (over: Record<string, unknown> = {}) =>
    resource({
      name: "spawn",
      risk: RiskClass.MODERATE,
      inputSchema: objectSchema({ profile: SchemaType.STRING, prompt: SchemaType.STRING }, [
        "profile",
        "prompt",
      ]),
      concurrency: { safe: true },
      spawns: { profileField: "profile" },
      ...over,
    });
  const rules = (t: ReturnType<typeof resource>) => {
    try {
      validateToolSchemas("agent", schemaResponse([t]));
      return [];
    } catch (err) {
      return (err as { violations: { rule: string }[] }).violations.map((v) => v.rule);
    }
  };

  it("accepts a resource naming a required string profile field, safe: true", () => {
    expect(rules(spawnTool())).toEqual([]);
  });

  it("refuses a spawn on a data source, an unknown or optional profile field, or a provider lock", () => {
    expect(rules(spawnTool({ kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY }))).toContain(
      ToolSchemaRule.spawnResourceOnly,
    );
    expect(rules(spawnTool({ spawns: { profileField: "nope" } }))).toEqual([
      ToolSchemaRule.spawnProfileFieldIsString,
    ]);
    expect(
      rules(
        spawnTool({
          inputSchema: objectSchema({ profile: SchemaType.STRING, prompt: SchemaType.STRING }, ["prompt"]),
        }),
      ),
    ).toEqual([ToolSchemaRule.spawnProfileFieldIsString]);
    expect(rules(spawnTool({ concurrency: { safe: false } }))).toEqual([
      ToolSchemaRule.spawnNotProviderLocked,
    ]);
  });
});

describe("RunSession's wire shape", () => {
  it("offers no sibling-to-sibling channel: a request names a profile, a prompt and its own parent only", () => {
    expect(RunSessionRequestSchema.fields.map((f) => f.localName).sort()).toEqual(
      [
        "parentSessionId",
        "profile",
        "prompt",
        "remainingCostBudgetUsd",
        "remainingDepth",
        "scopedProviders",
        "toolCallId",
      ].sort(),
    );
    // Unary, like every callback but none bidirectional: nothing streams between sessions.
    const method = KernelCallbackService.method.runSession;
    expect(method.methodKind).toBe("unary");
    expect(Object.keys(KernelCallbackService.method).filter((m) => /message|send|mailbox/i.test(m))).toEqual(
      [],
    );
  });
});
