import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createSession,
  kernelProducer,
  listSessions,
  type NewEvent,
  openSessionReader,
  openSessionWriter,
  pruneSessions,
  SessionUnreadableError,
} from "../src/index.ts";
import { collectLog, modelProducer, payloadFor, sameBytes, scratchDir, toolProducer } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => cleanup());

const TOTAL = 2000;
const PAYLOAD = 900;

/** A real session of TOTAL events (every 10th a message with a ledger row), closed and checkpointed. */
function buildSession(): { sessionId: string; path: string } {
  const w = createSession({ profile: "coder", depth: 0 }, { dir, durability: "normal" });
  const events: NewEvent[] = [];
  for (let i = 0; i < TOTAL; i++) {
    const message = i % 10 === 0;
    events.push({
      kind: message ? EventKind.MESSAGE : EventKind.TOOL_RESULT,
      producer: message ? kernelProducer("0.1.0") : i < TOTAL / 2 ? toolProducer : modelProducer,
      schemaVersion: "1",
      payload: payloadFor(i, PAYLOAD),
      ...(message
        ? {
            costs: [
              { providerName: "anthropic", modelId: "m", inputTokens: i, outputTokens: 1, costUsd: 0.001 },
            ],
          }
        : {}),
    });
  }
  w.appendBatch(events);
  const out = { sessionId: w.sessionId, path: w.path };
  w.close();
  expect(existsSync(`${w.path}-wal`)).toBe(false);
  return out;
}

/** Overwrites two whole pages in the middle of the events table with garbage. */
function corruptMiddle(path: string): void {
  const db = new DatabaseSync(path, { readOnly: true });
  const pageSize = (db.prepare("PRAGMA page_size").get() as { page_size: number }).page_size;
  const leaves = (
    db
      .prepare("SELECT pageno FROM dbstat WHERE name = 'events' AND pagetype = 'leaf' ORDER BY pageno")
      .all() as {
      pageno: number;
    }[]
  ).map((r) => r.pageno);
  db.close();
  const page = leaves[Math.floor(leaves.length / 2)] ?? 0;
  const bytes = readFileSync(path);
  expect(page * pageSize).toBeLessThan(bytes.length - pageSize);
  bytes.fill(0xa5, (page - 1) * pageSize, (page + 1) * pageSize);
  writeFileSync(path, bytes);
}

const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("corruption recovery", () => {
  it("salvages a file with corrupt bytes in the middle, keeping the original as .corrupt", () => {
    const { sessionId, path } = buildSession();
    corruptMiddle(path);
    const damaged = sha256(path);
    const { entries, log } = collectLog();

    const w = openSessionWriter(sessionId, { dir, log, durability: "normal" });
    try {
      const report = w.recovery;
      expect(report).toBeDefined();
      expect(report?.corruptPath).toBe(`${path}.corrupt`);
      expect(report?.integrityErrors.length).toBeGreaterThan(0);
      expect(report?.tables.session_meta).toEqual({ recovered: 1, lost: 0 });
      expect(report?.tables.events.lost).toBeGreaterThan(0);
      expect(report?.tables.events.recovered).toBeGreaterThan(TOTAL - 40);
      expect(report?.tables.events.recovered).toBeLessThan(TOTAL);
      // Loud: an integrity failure and a recovery, both at error level, naming the file.
      expect(entries.map((e) => [e.level, e.code])).toEqual([
        ["error", "integrity_check_failed"],
        ["error", "session_recovered"],
      ]);
      expect(entries[1]?.message).toContain(path);
      expect(entries[1]?.recovery).toBe(report);

      // The damaged original is kept byte for byte.
      expect(sha256(`${path}.corrupt`)).toBe(damaged);

      // The replacement is sound and everything in it is intact.
      const check = new DatabaseSync(path, { readOnly: true });
      expect(check.prepare("PRAGMA integrity_check").all()).toEqual([{ integrity_check: "ok" }]);
      check.close();
      const r = w.openReader();
      const events = r.readEvents();
      expect(events.length).toBe(report?.tables.events.recovered);
      const damagedPayloads = events.filter(
        (e) => !sameBytes(e.payload, payloadFor(e.sequence - 1, PAYLOAD)),
      );
      expect(damagedPayloads).toEqual([]);
      expect(r.meta().profile).toBe("coder");
      // Ledger rows survive even when the message they rode on was lost: they are what was paid.
      expect(r.costLedger().length).toBe(TOTAL / 10);
      const present = new Set(events.map((e) => e.sequence));
      const orphans = r.costLedger().filter((c) => !present.has(c.eventSequence)).length;
      expect(report?.orphanedRows).toBe(orphans);
      expect(r.producers().map((p) => p.name)).toEqual(["kernel", "fs", "anthropic"]);
      r.close();

      // Lost sequence numbers are never handed out again.
      expect(
        w.append({
          kind: EventKind.TOOL_CALL,
          producer: toolProducer,
          schemaVersion: "1",
          payload: new Uint8Array(),
        }).sequence,
      ).toBe(TOTAL + 1);
    } finally {
      w.close();
    }
    // Sound now: the next open does not salvage again.
    const again = openSessionReader(sessionId, { dir, log });
    expect(again.recovery).toBeUndefined();
    again.close();
    expect(entries).toHaveLength(2);
  });

  it("flags a file it cannot salvage as unreadable, leaves it untouched, and listings skip it", () => {
    const { sessionId, path } = buildSession();
    const healthy = createSession({ profile: "p", depth: 0 }, { dir });
    healthy.close();
    const bytes = readFileSync(path);
    bytes.fill(0x5a, 0, 100); // the database header
    writeFileSync(path, bytes);
    const before = sha256(path);
    const { entries, log } = collectLog();

    expect(() => openSessionReader(sessionId, { dir, log })).toThrow(SessionUnreadableError);
    expect(entries.map((e) => e.code)).toEqual(["integrity_check_failed", "session_unreadable"]);
    expect(existsSync(`${path}.unreadable`)).toBe(true);
    expect(existsSync(`${path}.corrupt`)).toBe(false);
    expect(sha256(path)).toBe(before);
    // Later opens refuse at once, without another salvage attempt.
    expect(() => openSessionWriter(sessionId, { dir, log })).toThrow(/flagged unreadable/);
    expect(entries).toHaveLength(2);

    const listing = listSessions({ dir, log });
    expect(listing.sessions.map((s) => s.sessionId)).toEqual([healthy.sessionId]);
    expect(listing.unreadable).toEqual([
      expect.objectContaining({ sessionId, reason: "flagged_unreadable" }),
    ]);

    // Only an explicit prune removes it.
    const pruned = pruneSessions({ ids: [sessionId] }, { dir });
    expect(pruned.deleted.map((d) => d.sessionId)).toEqual([sessionId]);
    expect(existsSync(path)).toBe(false);
    expect(existsSync(`${path}.unreadable`)).toBe(false);
  });

  it("a checking scan salvages damaged files and reports them; a plain listing reports without repairing", () => {
    const { sessionId, path } = buildSession();
    corruptMiddle(path);
    const { log } = collectLog();
    const plain = listSessions({ dir, log });
    // The meta row is still readable, so a plain listing shows the session.
    expect(plain.sessions.map((s) => s.sessionId)).toEqual([sessionId]);
    expect(existsSync(`${path}.corrupt`)).toBe(false);

    const checked = listSessions({ dir, log, integrityCheck: true });
    expect(checked.recovered.map((r) => r.sessionId)).toEqual([sessionId]);
    expect(checked.sessions[0]?.costUsd).toBeCloseTo((TOTAL / 10) * 0.001, 9);
    expect(existsSync(`${path}.corrupt`)).toBe(true);
  });
});
