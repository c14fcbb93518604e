// A tool step's writes go to the session file in at most two transactions (issue 32,
// point 5): the assistant message with its tool_call events (and the plan, for a resource)
// commit together, and are synced to disk before the tool runs; the results, the apply
// record and the user message carrying them commit together after. Commits are counted at
// node:sqlite's own COMMIT, so a write path that opens a transaction per event fails here.
import { DatabaseSync } from "node:sqlite";
import { fromBinary } from "@bufbuild/protobuf";
import { ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { SessionWriter } from "@pluggableharness/state";
import { afterAll, expect, it, vi } from "vitest";
import { calls, Harness, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

it("commits each tool step's events in at most two transactions, the call's before the tool runs", async () => {
  const k = await h.kernel({
    // As `agent run` writes: every durable point synced to disk.
    durability: "full",
    hcl: `
policy "writes_ok" {
  match  = { provider = "tools", tool_name = "write" }
  action = "allow"
}`,
    scripts: {
      steps: {
        turns: [
          calls(tool("r1", "tools__read", { path: "a.txt" })),
          calls(tool("w1", "tools__write", { path: "a.txt", content: "x" })),
          calls(tool("r2", "tools__read", { path: "b.txt" })),
          reply("done"),
        ],
      },
    },
  });
  // Every COMMIT of any session file: the last event sequence it made durable, and how
  // many trace events the kernel had emitted by then (to place tool invocations).
  const commits: { through: number; traced: number }[] = [];
  const exec = DatabaseSync.prototype.exec;
  const spy = vi.spyOn(DatabaseSync.prototype, "exec").mockImplementation(function (
    this: DatabaseSync,
    sql: string,
  ) {
    if (sql === "COMMIT") {
      const row = this.prepare("SELECT coalesce(max(sequence), 0) AS s FROM events").get() as { s: number };
      commits.push({ through: Number(row.s), traced: k.traces.length });
    }
    return exec.call(this, sql);
  });
  // Whether the session file was on stable storage when each tool was invoked: the writer's
  // state right after each sync(), with the trace events emitted by then.
  const synced: { traced: number; synced: boolean; through: number }[] = [];
  const sync = SessionWriter.prototype.sync;
  const syncSpy = vi.spyOn(SessionWriter.prototype, "sync").mockImplementation(function (
    this: SessionWriter,
  ) {
    sync.call(this);
    synced.push({ traced: k.traces.length, synced: this.synced, through: this.lastSequence() });
  });
  let status: SessionStatus;
  let id: string;
  try {
    const c = k.client();
    id = await c.create("[steps] go");
    status = await c.finished(id);
  } finally {
    spy.mockRestore();
    syncSpy.mockRestore();
  }
  expect(status).toBe(SessionStatus.COMPLETED);
  const events = k.file(id).events;
  const kinds = events.map((e) => e.kindText);
  expect(kinds).toEqual([
    "message", // the prompt
    ...["message", "tool_call", "tool_result", "message"],
    ...["message", "tool_call", "plan", "tool_result", "apply", "message"],
    ...["message", "tool_call", "tool_result", "message"],
    "message", // the answer
  ]);

  // The commit that made an event durable: the first whose range reaches its sequence.
  const commitOf = (sequence: number) => commits.findIndex((c) => c.through >= sequence);
  const seq = (i: number) => events[i]!.sequence;
  // Each tool step: from its assistant message to the user message carrying its results.
  const steps = [
    [1, 4],
    [5, 10],
    [11, 14],
  ] as const;
  for (const [from, to] of steps) {
    const used = new Set<number>();
    for (let i = from; i <= to; i++) used.add(commitOf(seq(i)));
    expect(used.has(-1), `every event of step ${from}..${to} committed`).toBe(false);
    expect(used.size, `transactions of the step ${kinds.slice(from, to + 1).join(", ")}`).toBeLessThanOrEqual(
      2,
    );
  }

  // Before each tool ran, its tool_call event (and the write's plan) were on disk.
  const invoked = k.traces.flatMap((t, at) => (t.name === "tool.invoke" ? [{ at, t }] : []));
  expect(invoked).toHaveLength(3);
  for (const { at, t } of invoked) {
    const callId = (t.attrs as { callId: string }).callId;
    const call = events.find(
      (e) => e.kind === EventKind.TOOL_CALL && fromBinary(ToolCallEventSchema, e.payload).call?.id === callId,
    )!;
    const durable = Math.max(0, ...commits.filter((c) => c.traced <= at).map((c) => c.through));
    expect(durable, `tool_call of ${callId} committed before the tool ran`).toBeGreaterThanOrEqual(
      call.sequence,
    );
    // ...and synced: the last sync before the invocation left nothing unsynced behind it.
    const last = synced.filter((s) => s.traced <= at).at(-1);
    expect(last?.synced, `synced before ${callId} ran`).toBe(true);
    expect(last!.through).toBeGreaterThanOrEqual(call.sequence);
  }
  const plan = events.find((e) => e.kind === EventKind.PLAN)!;
  const write = invoked[1]!.at;
  expect(Math.max(...commits.filter((c) => c.traced <= write).map((c) => c.through))).toBeGreaterThanOrEqual(
    plan.sequence,
  );
});
