import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createSession,
  InvalidArgumentError,
  kernelProducer,
  listSessions,
  newUlid,
  pruneSessions,
  type SessionWriter,
  sessionChildren,
  sessionTree,
} from "../src/index.ts";
import { scratchDir } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => cleanup());

/** Creates a closed session with a status and a spend. */
function session(
  opts: { parent?: string; depth?: number; status?: SessionStatus; cost?: number; startedAt?: Date } = {},
): string {
  const w: SessionWriter = createSession(
    {
      profile: opts.parent ? "sub" : "main",
      depth: opts.depth ?? 0,
      ...(opts.parent ? { parentSessionId: opts.parent } : {}),
      ...(opts.startedAt ? { startedAt: opts.startedAt } : {}),
    },
    { dir, durability: "normal" },
  );
  if (opts.cost !== undefined) {
    w.append({
      kind: EventKind.MESSAGE,
      producer: kernelProducer("0.1.0"),
      schemaVersion: "1",
      payload: new Uint8Array(),
      costs: [
        { providerName: "a", modelId: "m", inputTokens: 1, outputTokens: 1, costUsd: opts.cost / 2 },
        { providerName: "a", modelId: "m", inputTokens: 1, outputTokens: 1, costUsd: opts.cost / 2 },
      ],
    });
  }
  if (opts.status !== undefined && opts.status !== SessionStatus.RUNNING) w.setStatus(opts.status);
  w.close();
  return w.sessionId;
}

describe("cross-session queries", () => {
  it("lists every session newest first with its summed cost, filtered by status, parent or roots", () => {
    const root = session({ status: SessionStatus.COMPLETED, cost: 0.5 });
    const child1 = session({ parent: root, depth: 1, status: SessionStatus.COMPLETED, cost: 0.25 });
    const child2 = session({ parent: root, depth: 1, status: SessionStatus.FAILED });
    const grandchild = session({ parent: child1, depth: 2, status: SessionStatus.CANCELLED, cost: 0.125 });
    const other = session();

    const all = listSessions({ dir });
    expect(all.unreadable).toEqual([]);
    expect(all.sessions.map((s) => s.sessionId)).toEqual([other, grandchild, child2, child1, root]);
    expect(all.sessions.map((s) => s.costUsd)).toEqual([0, 0.125, 0, 0.25, 0.5]);
    expect(all.sessions.find((s) => s.sessionId === grandchild)).toMatchObject({
      parentSessionId: child1,
      depth: 2,
    });

    const ids = (o: Parameters<typeof listSessions>[0]) =>
      listSessions({ dir, ...o }).sessions.map((s) => s.sessionId);
    expect(ids({ status: SessionStatus.COMPLETED })).toEqual([child1, root]);
    expect(ids({ status: [SessionStatus.FAILED, SessionStatus.RUNNING] })).toEqual([other, child2]);
    expect(ids({ parentSessionId: root })).toEqual([child2, child1]);
    expect(ids({ rootsOnly: true })).toEqual([other, root]);
    expect(ids({ rootsOnly: true, status: SessionStatus.RUNNING })).toEqual([other]);
    expect(() => listSessions({ dir, status: SessionStatus.UNSPECIFIED })).toThrow(InvalidArgumentError);

    expect(sessionChildren(root, { dir }).map((s) => s.sessionId)).toEqual([child1, child2]);
    expect(sessionChildren(other, { dir })).toEqual([]);

    const tree = sessionTree(root, { dir });
    const shape = (n: NonNullable<typeof tree>): unknown => [n.info.sessionId, n.children.map(shape)];
    expect(tree && shape(tree)).toEqual([
      root,
      [
        [child1, [[grandchild, []]]],
        [child2, []],
      ],
    ]);
    expect(sessionTree(newUlid(), { dir })).toBeUndefined();
  });

  it("reports files it cannot read instead of failing, and ignores other files", () => {
    const ok = session();
    const empty = newUlid();
    writeFileSync(join(dir, `${empty}.sqlite`), ""); // a creation that never committed
    writeFileSync(join(dir, "notes.txt"), "hello");
    writeFileSync(join(dir, "not-a-ulid.sqlite"), "x");
    const listing = listSessions({ dir });
    expect(listing.sessions.map((s) => s.sessionId)).toEqual([ok]);
    expect(listing.unreadable).toEqual([
      expect.objectContaining({
        sessionId: empty,
        reason: "not_a_session_file",
        message: expect.stringMatching(/empty/),
      }),
    ]);
  });

  it("lists nothing when the sessions directory does not exist yet", () => {
    expect(listSessions({ dir: join(dir, "missing") })).toEqual({
      sessions: [],
      unreadable: [],
      recovered: [],
    });
  });
});

describe("pruning", () => {
  it("never runs without a selector", () => {
    session();
    expect(() => pruneSessions({}, { dir })).toThrow(InvalidArgumentError);
    expect(() => pruneSessions({ includeRunning: true, includeCorrupt: true }, { dir })).toThrow(/selector/);
  });

  it("deletes exactly what the selectors name (all criteria must match)", () => {
    const old = new Date("2024-01-01T00:00:00Z");
    const oldDone = session({ status: SessionStatus.COMPLETED, startedAt: old });
    const oldFailed = session({ status: SessionStatus.FAILED, startedAt: old });
    const newDone = session({ status: SessionStatus.COMPLETED });
    const cutoff = new Date("2025-01-01T00:00:00Z");

    const dry = pruneSessions({ olderThan: cutoff, status: SessionStatus.COMPLETED, dryRun: true }, { dir });
    expect(dry.deleted.map((d) => d.sessionId)).toEqual([oldDone]);
    expect(existsSync(join(dir, `${oldDone}.sqlite`))).toBe(true);

    const done = pruneSessions({ olderThan: cutoff, status: SessionStatus.COMPLETED }, { dir });
    expect(done.deleted.map((d) => d.sessionId)).toEqual([oldDone]);
    expect(done.deleted[0]?.files).toContain(join(dir, `${oldDone}.sqlite`));
    expect(existsSync(join(dir, `${oldDone}.sqlite`))).toBe(false);
    expect(
      listSessions({ dir })
        .sessions.map((s) => s.sessionId)
        .sort(),
    ).toEqual([oldFailed, newDone].sort());

    expect(pruneSessions({ ids: [newDone] }, { dir }).deleted.map((d) => d.sessionId)).toEqual([newDone]);
    expect(listSessions({ dir }).sessions.map((s) => s.sessionId)).toEqual([oldFailed]);
  });

  it("skips running sessions and open writers unless told, and keeps .corrupt files unless asked", () => {
    const running = session();
    const live = createSession({ profile: "p", depth: 0 }, { dir });
    const done = session({ status: SessionStatus.COMPLETED });
    writeFileSync(join(dir, `${done}.sqlite.corrupt`), "damaged original");

    const first = pruneSessions({ ids: [running, live.sessionId, done] }, { dir });
    expect(first.deleted.map((d) => d.sessionId)).toEqual([done]);
    expect(first.skipped.map((s) => s.sessionId).sort()).toEqual([running, live.sessionId].sort());
    expect(existsSync(join(dir, `${done}.sqlite.corrupt`))).toBe(true);

    const second = pruneSessions(
      { ids: [running, live.sessionId, done], includeRunning: true, includeCorrupt: true },
      { dir },
    );
    expect(second.deleted.map((d) => d.sessionId).sort()).toEqual([done, running].sort());
    expect(second.skipped).toEqual([{ sessionId: live.sessionId, reason: expect.stringMatching(/writer/) }]);
    expect(existsSync(join(dir, `${done}.sqlite.corrupt`))).toBe(false);
    live.close();
  });
});
