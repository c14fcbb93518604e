import { statSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { PluginCategory, ProducerRefSchema } from "@pluggableharness/protocol/common";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { HookErrorSchema } from "@pluggableharness/protocol/hook";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { PlanDecision, PlanSchema } from "@pluggableharness/protocol/plan";
import { SessionInfoSchema, SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AsyncTransactionError,
  CURRENT_SCHEMA_VERSION,
  costEntriesFromMessage,
  createSession,
  hookErrorProducer,
  InvalidArgumentError,
  InvalidEventKindError,
  InvalidStatusTransitionError,
  kernelProducer,
  listSessions,
  type NewEvent,
  openSessionReader,
  openSessionWriter,
  planItemEntriesFromPlan,
  SessionExistsError,
  type SessionWriter,
  STORABLE_EVENT_KINDS,
  StoreClosedError,
  WriterAlreadyOpenError,
} from "../src/index.ts";
import {
  messagePayload,
  modelProducer,
  payloadFor,
  scratchDir,
  toolCallEvent,
  toolProducer,
} from "./helpers.ts";
import { SPEC_SHAPE, shapeOf } from "./schema-shape.ts";

let dir: string;
let cleanup: () => void;
const writers: SessionWriter[] = [];

function newWriter(init: Partial<Parameters<typeof createSession>[0]> = {}): SessionWriter {
  const w = createSession({ profile: "default", depth: 0, ...init }, { dir, durability: "normal" });
  writers.push(w);
  return w;
}

function count(w: SessionWriter, table: string): number {
  const db = new DatabaseSync(w.path, { readOnly: true });
  try {
    return Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
  } finally {
    db.close();
  }
}

beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => {
  for (const w of writers.splice(0)) w.close();
  cleanup();
});

describe("creating a session file", () => {
  it("lays out the spec's five tables in WAL mode, stamped with the current schema version", () => {
    const w = createSession({ profile: "coder", depth: 0 }, { dir }); // default durability: full
    writers.push(w);
    expect(w.path).toBe(`${dir}/${w.sessionId}.sqlite`);
    const shape = shapeOf(w.path);
    expect(shape.tables).toEqual(SPEC_SHAPE);
    expect(shape.autoincrement).toEqual(["cost_ledger", "events", "plan_items"]);
    expect(shape.userVersion).toBe(CURRENT_SCHEMA_VERSION);
    const db = new DatabaseSync(w.path, { readOnly: true });
    expect((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode).toBe("wal");
    db.close();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const meta = w.meta();
    expect(meta).toMatchObject({
      sessionId: w.sessionId,
      profile: "coder",
      status: SessionStatus.RUNNING,
      depth: 0,
    });
    expect(meta.endedAt).toBeUndefined();
    expect(meta.parentSessionId).toBeUndefined();
  });

  it("records the parent and depth of a sub-agent session", () => {
    const parent = newWriter();
    const child = newWriter({ parentSessionId: parent.sessionId, depth: 1, profile: "reviewer" });
    expect(child.info()).toMatchObject({ parentSessionId: parent.sessionId, depth: 1, profile: "reviewer" });
  });

  it("records the working directory, and the first prompt as the title (once, cut to one line)", () => {
    const w = newWriter({ workingDirectory: "/work/project" });
    expect(w.info()).toMatchObject({ workingDirectory: "/work/project", title: "" });
    expect(w.setTitleIfUnset("   \n\n  Fix   the\tbuild  \nthen run the tests")).toBe(true);
    expect(w.setTitleIfUnset("a later prompt")).toBe(false);
    expect(w.meta()).toMatchObject({ workingDirectory: "/work/project", title: "Fix the build" });
    const long = newWriter();
    long.setTitleIfUnset("é".repeat(200));
    expect([...long.meta().title!]).toHaveLength(80);
    expect(long.meta().title!.endsWith("…")).toBe(true);
    expect(long.setTitleIfUnset("  \n ")).toBe(false);
  });

  it("reports the operator's model choice as the model in use until it is cleared", () => {
    const w = newWriter();
    expect(w.info()).toMatchObject({ model: "", modelOverridden: false });
    w.setModelOverride("openai/gpt-4.1");
    expect(w.meta().modelOverride).toBe("openai/gpt-4.1");
    expect(w.info()).toMatchObject({ model: "openai/gpt-4.1", modelOverridden: true });
    expect(listSessions({ dir }).sessions.find((s) => s.sessionId === w.sessionId)).toMatchObject({
      model: "openai/gpt-4.1",
      modelOverridden: true,
    });
    w.setModelOverride(undefined);
    expect(w.meta().modelOverride).toBeUndefined();
    expect(w.info()).toMatchObject({ model: "", modelOverridden: false });
  });

  it("builds SessionInfo messages identical to protobuf-es create()", () => {
    const started = new Date("2025-03-04T05:06:07.089Z");
    const ended = new Date("2025-03-04T06:00:00.001Z");
    const w = newWriter({ startedAt: started, profile: "coder" });
    const running = w.info();
    expect(
      equals(
        SessionInfoSchema,
        running,
        create(SessionInfoSchema, {
          sessionId: w.sessionId,
          profile: "coder",
          status: SessionStatus.RUNNING,
          startedAt: timestampFromDate(started),
        }),
      ),
    ).toBe(true);
    w.setStatus(SessionStatus.COMPLETED, { at: ended });
    const done = w.info();
    const decoded = fromBinary(SessionInfoSchema, toBinary(SessionInfoSchema, done));
    expect(decoded.endedAt && timestampDate(decoded.endedAt).toISOString()).toBe(ended.toISOString());
    expect(decoded.startedAt && timestampDate(decoded.startedAt).toISOString()).toBe(started.toISOString());
    expect(
      equals(
        ProducerRefSchema,
        kernelProducer("1.0.0"),
        create(ProducerRefSchema, {
          name: "kernel",
          version: "1.0.0",
          category: PluginCategory.KERNEL,
        }),
      ),
    ).toBe(true);
  });

  it("refuses an existing id and invalid session fields", () => {
    const w = newWriter();
    expect(() => createSession({ sessionId: w.sessionId, profile: "p", depth: 0 }, { dir })).toThrow(
      SessionExistsError,
    );
    expect(() => newWriter({ profile: "" })).toThrow(InvalidArgumentError);
    expect(() => newWriter({ depth: -1 })).toThrow(InvalidArgumentError);
    expect(() => newWriter({ parentSessionId: "not-a-ulid" })).toThrow(InvalidArgumentError);
    expect(() => newWriter({ sessionId: "../../escape" })).toThrow(InvalidArgumentError);
  });
});

describe("appending events", () => {
  it("stores every kind except UNSPECIFIED, with payload bytes verbatim", () => {
    const w = newWriter();
    const written = STORABLE_EVENT_KINDS.map((kind, i) =>
      w.append({ kind, producer: toolProducer, schemaVersion: "1", payload: payloadFor(i, 100 + i) }),
    );
    expect(written.map((e) => e.sequence)).toEqual(written.map((_, i) => i + 1));
    const reader = w.openReader();
    const events = [...reader.events()];
    reader.close();
    expect(events.map((e) => e.kind)).toEqual([...STORABLE_EVENT_KINDS]);
    events.forEach((e, i) => {
      expect(e.id).toBe(written[i]?.id);
      expect(e.payload).toEqual(payloadFor(i, 100 + i));
      expect(e.schemaVersion).toBe("1");
      expect(e.producer).toMatchObject({ category: PluginCategory.TOOL, name: "fs", version: "1.2.0" });
    });
  });

  it("round-trips an encoded event.v1 payload and an empty one", () => {
    const w = newWriter();
    const { sequence } = w.append({
      kind: EventKind.MESSAGE,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: messagePayload("hello"),
    });
    w.append({
      kind: EventKind.APPLY,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: new Uint8Array(),
    });
    const r = w.openReader();
    const decoded = fromBinary(MessageEventSchema, r.event(sequence)?.payload ?? new Uint8Array());
    expect(decoded.message?.content[0]?.block).toEqual(expect.objectContaining({ case: "text" }));
    expect(decoded.model?.provider).toBe("anthropic");
    expect(r.event(sequence + 1)?.payload).toEqual(new Uint8Array());
    r.close();
  });

  it("rejects EVENT_KIND_UNSPECIFIED and unknown kinds without writing anything", () => {
    const w = newWriter();
    const bad = (kind: number): NewEvent => ({
      kind: kind as EventKind,
      producer: toolProducer,
      schemaVersion: "1",
      payload: new Uint8Array([1]),
    });
    expect(() => w.append(bad(EventKind.UNSPECIFIED))).toThrow(InvalidEventKindError);
    expect(() => w.append(bad(42))).toThrow(InvalidEventKindError);
    expect(() => w.appendBatch([toolCallEvent(1), bad(0)])).toThrow(/UNSPECIFIED/);
    expect(count(w, "events")).toBe(0);
    expect(count(w, "producers")).toBe(0);
  });

  it("rejects malformed envelopes", () => {
    const w = newWriter();
    const base = toolCallEvent(1);
    expect(() => w.append({ ...base, schemaVersion: "" })).toThrow(InvalidArgumentError);
    expect(() => w.append({ ...base, producer: { ...toolProducer, name: "" } })).toThrow(
      InvalidArgumentError,
    );
    expect(() =>
      w.append({ ...base, producer: { ...toolProducer, category: PluginCategory.UNSPECIFIED } }),
    ).toThrow(InvalidArgumentError);
    expect(() => w.append({ ...base, payload: "text" as unknown as Uint8Array })).toThrow(
      InvalidArgumentError,
    );
    expect(() => w.append({ ...base, timestamp: new Date(Number.NaN) })).toThrow(InvalidArgumentError);
    expect(count(w, "events")).toBe(0);
  });

  it("orders by sequence alone: timestamps are stored for display and may run backwards", () => {
    const w = newWriter();
    const late = new Date("2030-01-01T00:00:00.000Z");
    const early = new Date("2020-01-01T00:00:00.000Z");
    const a = w.append({ ...toolCallEvent(1), timestamp: late });
    const b = w.append({ ...toolCallEvent(2), timestamp: early });
    expect(a.timestamp).toBe(late.toISOString());
    const r = w.openReader();
    expect([...r.events()].map((e) => [e.sequence, e.timestamp])).toEqual([
      [a.sequence, late.toISOString()],
      [b.sequence, early.toISOString()],
    ]);
    r.close();
  });

  it("records each producer once, at its first sighting", () => {
    const w = newWriter();
    const tool13 = { ...toolProducer, version: "1.3.0" };
    const seqs = [toolProducer, modelProducer, toolProducer, tool13, modelProducer].map(
      (producer, i) => w.append({ ...toolCallEvent(i), producer }).sequence,
    );
    const r = w.openReader();
    expect(r.producers().map((p) => [p.categoryText, p.name, p.version, p.firstSeenSequence])).toEqual([
      ["tool", "fs", "1.2.0", seqs[0]],
      ["model", "anthropic", "2.0.1", seqs[1]],
      ["tool", "fs", "1.3.0", seqs[3]],
    ]);
    r.close();
  });
});

describe("cost ledger and plan items", () => {
  it("writes a message's ledger rows with it and sums cost_usd at read time", () => {
    const w = newWriter();
    const message = create(MessageEventSchema, {
      model: { provider: "anthropic", id: "claude-x" },
      usage: [
        { usage: { inputTokens: 1000n, outputTokens: 200n, cacheReadTokens: 50n }, costUsd: 0.0125 },
        { usage: { inputTokens: 10n, outputTokens: 5n, cacheWriteTokens: 7n }, costUsd: 0.0005 },
      ],
      costUsd: 0.013,
    });
    const costs = costEntriesFromMessage(message);
    const { sequence } = w.append({
      kind: EventKind.MESSAGE,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: messagePayload("x"),
      costs,
    });
    w.append({
      kind: EventKind.MESSAGE,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: messagePayload("y"),
      costs: [{ providerName: "openai", modelId: "gpt", inputTokens: 1, outputTokens: 1, costUsd: 0.25 }],
    });
    const r = w.openReader();
    expect(r.costLedger()).toEqual([
      expect.objectContaining({
        eventSequence: sequence,
        providerName: "anthropic",
        modelId: "claude-x",
        inputTokens: 1000,
        outputTokens: 200,
        cacheReadTokens: 50,
        cacheWriteTokens: 0,
        costUsd: 0.0125,
      }),
      expect.objectContaining({ eventSequence: sequence, cacheWriteTokens: 7, costUsd: 0.0005 }),
      expect.objectContaining({ eventSequence: sequence + 1, providerName: "openai", costUsd: 0.25 }),
    ]);
    expect(r.costUsd()).toBeCloseTo(0.263, 12);
    expect(w.info().costUsd).toBeCloseTo(0.263, 12);
    r.close();
  });

  it("keeps ledger and plan rows on the kinds that carry them, and validates them before writing", () => {
    const w = newWriter();
    const cost = { providerName: "p", modelId: "m", inputTokens: 1, outputTokens: 1, costUsd: 1 };
    expect(() => w.append({ ...toolCallEvent(1), costs: [cost] })).toThrow(/message events/);
    expect(() =>
      w.append({ ...toolCallEvent(1), kind: EventKind.MESSAGE, costs: [{ ...cost, inputTokens: -1 }] }),
    ).toThrow(InvalidArgumentError);
    expect(() =>
      w.append({ ...toolCallEvent(1), kind: EventKind.MESSAGE, costs: [{ ...cost, costUsd: Number.NaN }] }),
    ).toThrow(InvalidArgumentError);
    expect(count(w, "events")).toBe(0);
    expect(count(w, "cost_ledger")).toBe(0);
  });

  it("writes a plan's items with the plan event, queryable by decision", () => {
    const w = newWriter();
    const plan = create(PlanSchema, {
      turnId: "T1",
      items: [
        {
          id: "i1",
          toolCallId: "c1",
          provider: "fs",
          toolName: "write",
          decision: PlanDecision.ALLOW,
          decidedBy: "allow-writes",
        },
        {
          id: "i2",
          toolCallId: "c2",
          provider: "shell",
          toolName: "exec",
          decision: PlanDecision.DENY,
          decidedBy: "no-shell",
        },
        {
          id: "i3",
          toolCallId: "c3",
          provider: "fs",
          toolName: "delete",
          decision: PlanDecision.ASK,
          decidedBy: "ask-deletes",
        },
      ],
    });
    const { sequence } = w.append({
      kind: EventKind.PLAN,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: new Uint8Array([9]),
      planItems: planItemEntriesFromPlan(plan),
    });
    const r = w.openReader();
    expect(
      r.planItems().map((p) => [p.eventSequence, p.turnId, p.toolCallId, p.decisionText, p.decidedBy]),
    ).toEqual([
      [sequence, "T1", "c1", "allow", "allow-writes"],
      [sequence, "T1", "c2", "deny", "no-shell"],
      [sequence, "T1", "c3", "ask", "ask-deletes"],
    ]);
    expect(r.planItems({ decision: PlanDecision.DENY }).map((p) => p.toolName)).toEqual(["exec"]);
    r.close();
    const pending = planItemEntriesFromPlan(
      create(PlanSchema, {
        turnId: "T2",
        items: [
          { toolCallId: "c", provider: "p", toolName: "t", decision: PlanDecision.PENDING, decidedBy: "x" },
        ],
      }),
    );
    expect(() => w.append({ ...toolCallEvent(0), kind: EventKind.PLAN, planItems: pending })).toThrow(
      /PENDING/,
    );
    expect(() => w.append({ ...toolCallEvent(0), planItems: planItemEntriesFromPlan(plan) })).toThrow(
      /plan events/,
    );
  });
});

describe("transactions and serialization", () => {
  it("commits a batch as a whole with consecutive sequences", () => {
    const w = newWriter();
    w.append(toolCallEvent(0));
    const batch = w.appendBatch([toolCallEvent(1), toolCallEvent(2), toolCallEvent(3)]);
    expect(batch.map((b) => b.sequence)).toEqual([2, 3, 4]);
    expect(w.appendBatch([])).toEqual([]);
  });

  it("rolls back everything a failing transaction wrote", () => {
    const w = newWriter();
    expect(() =>
      w.transaction(() => {
        w.append(toolCallEvent(1));
        w.appendBatch([toolCallEvent(2), toolCallEvent(3)]);
        throw new Error("boom");
      }),
    ).toThrow("boom");
    expect(count(w, "events")).toBe(0);
    expect(count(w, "producers")).toBe(0);
  });

  it("rolls back only the failed inner step of a nested transaction", () => {
    const w = newWriter();
    w.transaction(() => {
      w.append(toolCallEvent(1));
      expect(() =>
        w.transaction(() => {
          w.append(toolCallEvent(2));
          throw new Error("inner");
        }),
      ).toThrow("inner");
      w.append(toolCallEvent(3));
    });
    const r = w.openReader();
    expect(r.readEvents().map((e) => e.payload)).toEqual([payloadFor(1), payloadFor(3)]);
    r.close();
  });

  it("groups appends into one transaction from hold() to commit(), each append still all or nothing", () => {
    const w = newWriter();
    w.hold();
    expect(w.holding).toBe(true);
    w.append(toolCallEvent(1));
    expect(() =>
      w.transaction(() => {
        w.append(toolCallEvent(2));
        throw new Error("inner");
      }),
    ).toThrow("inner");
    w.appendBatch([toolCallEvent(3), toolCallEvent(4)]);
    // This writer sees its own appends; another connection only what is committed.
    expect(w.lastSequence()).toBe(3);
    expect(count(w, "events")).toBe(0);
    w.commit();
    expect(w.holding).toBe(false);
    expect(count(w, "events")).toBe(3);
    w.commit(); // nothing held: a no-op
    // A status change, a reader and the close each commit what is held first.
    w.hold();
    w.append(toolCallEvent(5));
    const r = w.openReader();
    expect(r.readEvents().map((e) => e.payload)).toEqual([1, 3, 4, 5].map((i) => payloadFor(i)));
    r.close();
    w.hold();
    w.append(toolCallEvent(6));
    w.setStatus(SessionStatus.COMPLETED);
    expect(count(w, "events")).toBe(5);
    w.hold();
    w.append(toolCallEvent(7));
    w.close();
    expect(count(w, "events")).toBe(6);
  });

  it("commits a group without a sync to disk, and syncs it at sync(), a synced commit or close", () => {
    // The default durability: every plain commit syncs.
    const w = createSession({ profile: "default", depth: 0 }, { dir });
    writers.push(w);
    expect(w.synced).toBe(true);
    w.hold();
    w.append(toolCallEvent(1));
    w.commit();
    expect(w.synced).toBe(false);
    expect(count(w, "events")).toBe(1); // in the file (a crash keeps it), not yet synced
    w.sync();
    expect(w.synced).toBe(true);
    w.hold();
    w.append(toolCallEvent(2));
    w.commit();
    w.append(toolCallEvent(3)); // a synced commit takes the earlier frames along
    expect(w.synced).toBe(true);
    w.hold();
    w.append(toolCallEvent(4));
    w.close();
    expect(count(w, "events")).toBe(4);
  });

  it("refuses an async transaction callback and rolls back what it wrote synchronously", async () => {
    const w = newWriter();
    expect(() =>
      w.transaction(async () => {
        w.append(toolCallEvent(1));
      }),
    ).toThrow(AsyncTransactionError);
    expect(count(w, "events")).toBe(0);
    w.append(toolCallEvent(2)); // the writer is still usable
    expect(count(w, "events")).toBe(1);
  });

  it("serializes appends issued concurrently from async tasks", async () => {
    const w = newWriter();
    const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
    const tasks = Array.from({ length: 200 }, async (_, i) => {
      for (let k = 0; k < i % 5; k++) await tick();
      if (i === 100) return w.appendBatch([toolCallEvent(1000), toolCallEvent(1001), toolCallEvent(1002)]);
      return [w.append(toolCallEvent(i))];
    });
    const results = await Promise.all(tasks);
    const sequences = results.flat().map((r) => r.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(Array.from({ length: 202 }, (_, i) => i + 1));
    const batch = results[100]?.map((r) => r.sequence) ?? [];
    expect(batch[1]).toBe((batch[0] ?? 0) + 1);
    expect(batch[2]).toBe((batch[0] ?? 0) + 2);
    const r = w.openReader();
    const bySequence = new Map(r.readEvents().map((e) => [e.sequence, e.payload]));
    results.forEach((res, i) => {
      if (i !== 100) expect(bySequence.get(res[0]?.sequence ?? -1)).toEqual(payloadFor(i));
    });
    expect(new Set(results.flat().map((x) => x.id)).size).toBe(202);
    r.close();
  });

  it("allows one writer per file and refuses use after close", () => {
    const w = newWriter();
    expect(() => openSessionWriter(w.sessionId, { dir })).toThrow(WriterAlreadyOpenError);
    w.append(toolCallEvent(1));
    w.close();
    expect(() => w.append(toolCallEvent(2))).toThrow(StoreClosedError);
    const again = openSessionWriter(w.sessionId, { dir, durability: "normal" });
    writers.push(again);
    expect(again.append(toolCallEvent(2)).sequence).toBe(2);
  });
});

describe("session status lifecycle", () => {
  it("ends, re-opens (clearing ended_at) and ends again", () => {
    const started = new Date("2025-01-01T10:00:00.000Z");
    const w = newWriter({ startedAt: started });
    const end1 = new Date("2025-01-01T11:00:00.000Z");
    expect(w.setStatus(SessionStatus.COMPLETED, { at: end1 })).toMatchObject({
      statusText: "completed",
      endedAt: end1.toISOString(),
    });
    const reopened = w.setStatus(SessionStatus.RUNNING);
    expect(reopened.status).toBe(SessionStatus.RUNNING);
    expect(reopened.endedAt).toBeUndefined();
    expect(reopened.startedAt).toBe(started.toISOString());
    w.setStatus(SessionStatus.CANCELLED);
    w.setStatus(SessionStatus.RUNNING);
    expect(w.setStatus(SessionStatus.ERROR_MAX_TURNS).statusText).toBe("error_max_turns");
    const info = openSessionReader(w.sessionId, { dir });
    expect(info.meta().statusText).toBe("error_max_turns");
    expect(info.info().endedAt).toBeDefined();
    info.close();
  });

  it("treats bound-exhausted statuses as terminal", () => {
    for (const terminal of [
      SessionStatus.ERROR_MAX_TURNS,
      SessionStatus.ERROR_MAX_BUDGET_USD,
      SessionStatus.ERROR_MAX_WALL_CLOCK,
    ]) {
      const w = newWriter();
      w.setStatus(terminal);
      for (const next of [
        SessionStatus.RUNNING,
        SessionStatus.COMPLETED,
        SessionStatus.CANCELLED,
        terminal,
      ]) {
        let caught: unknown;
        try {
          w.setStatus(next);
        } catch (err) {
          caught = err;
        }
        expect(caught).toBeInstanceOf(InvalidStatusTransitionError);
        expect((caught as InvalidStatusTransitionError).fromTerminal).toBe(true);
      }
      expect(w.meta().status).toBe(terminal);
    }
  });

  it("re-opens a failed session like a completed or cancelled one", () => {
    const w = newWriter();
    w.setStatus(SessionStatus.FAILED);
    expect(w.meta().endedAt).toBeDefined();
    expect(w.setStatus(SessionStatus.RUNNING).endedAt).toBeUndefined();
    expect(() => w.setStatus(SessionStatus.RUNNING)).toThrow(InvalidStatusTransitionError);
    w.setStatus(SessionStatus.FAILED);
    expect(() => w.setStatus(SessionStatus.COMPLETED)).toThrow(/re-opened/);
  });

  it("refuses terminal-to-terminal, running-to-running and UNSPECIFIED", () => {
    const w = newWriter();
    expect(() => w.setStatus(SessionStatus.RUNNING)).toThrow(InvalidStatusTransitionError);
    expect(() => w.setStatus(SessionStatus.UNSPECIFIED)).toThrow(InvalidArgumentError);
    w.setStatus(SessionStatus.COMPLETED);
    expect(() => w.setStatus(SessionStatus.CANCELLED)).toThrow(/re-opened/);
    expect(() => w.setStatus(SessionStatus.FAILED)).toThrow(InvalidStatusTransitionError);
    expect(w.meta().status).toBe(SessionStatus.COMPLETED);
  });
});

describe("producer identities of kernel-written kinds", () => {
  it("names the kernel for its own kinds and the failing subscriber for hook_error", () => {
    expect(kernelProducer("0.1.0")).toMatchObject({
      category: PluginCategory.KERNEL,
      name: "kernel",
      version: "0.1.0",
    });
    const error = create(HookErrorSchema, {
      subscriber: { category: PluginCategory.CONTEXT, name: "repo-map", version: "0.3.0" },
      message: "timed out",
    });
    const w = newWriter();
    w.append({
      kind: EventKind.HOOK_ERROR,
      producer: hookErrorProducer(error),
      schemaVersion: "1",
      payload: new Uint8Array(),
    });
    const r = w.openReader();
    expect(r.producers()).toEqual([
      expect.objectContaining({ categoryText: "context", name: "repo-map", version: "0.3.0" }),
    ]);
    r.close();
    expect(() => hookErrorProducer(create(HookErrorSchema, {}))).toThrow(InvalidArgumentError);
  });
});
