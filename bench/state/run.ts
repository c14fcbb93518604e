// State backend benchmark: append throughput (one transaction per event, and batched)
// and replay read throughput for a 10,000-event session.
//
//   npm run bench:state            (optional: --dir <path> to measure another filesystem)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EventKind } from "@pluggableharness/protocol/kernel";
import { createSession, type Durability, type NewEvent, openSessionReader } from "@pluggableharness/state";

const TOOL_RESULT = 3 as EventKind; // kernel.v1.EventKind; a literal keeps the protobuf runtime out
const PAYLOAD_BYTES = 512;
const REPLAY_EVENTS = 10_000;

const dirArg = process.argv.indexOf("--dir");
const base = dirArg > 0 ? (process.argv[dirArg + 1] ?? tmpdir()) : tmpdir();
const dir = mkdtempSync(join(base, "state-bench-"));

const payload = new Uint8Array(PAYLOAD_BYTES).map((_, i) => (i * 31) & 0xff);
const event: NewEvent = {
  kind: TOOL_RESULT,
  producer: { category: 2, name: "fs", version: "1.0.0" } as NewEvent["producer"],
  schemaVersion: "1",
  payload,
};

function rate(count: number, ms: number): string {
  return `${Math.round((count / ms) * 1000).toLocaleString("en-US")} events/s`;
}

function timed<T>(fn: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = fn();
  return { ms: performance.now() - start, value };
}

const rows: [string, string, string][] = [];

function appendSingles(durability: Durability, count: number): void {
  const w = createSession({ profile: "bench", depth: 0 }, { dir, durability });
  const { ms } = timed(() => {
    for (let i = 0; i < count; i++) w.append(event);
  });
  w.close();
  rows.push([
    `append, 1 event per transaction (${durability})`,
    `${count} events in ${ms.toFixed(0)} ms`,
    rate(count, ms),
  ]);
}

function appendBatches(durability: Durability, count: number, batch: number): void {
  const w = createSession({ profile: "bench", depth: 0 }, { dir, durability });
  const events = Array.from({ length: batch }, () => event);
  const { ms } = timed(() => {
    for (let i = 0; i < count; i += batch) w.appendBatch(events);
  });
  w.close();
  rows.push([
    `append, ${batch} events per transaction (${durability})`,
    `${count} events in ${ms.toFixed(0)} ms`,
    rate(count, ms),
  ]);
}

function replay(): void {
  const w = createSession({ profile: "bench", depth: 0 }, { dir, durability: "normal" });
  const events = Array.from({ length: 1_000 }, () => event);
  for (let i = 0; i < REPLAY_EVENTS; i += 1_000) w.appendBatch(events);
  const sessionId = w.sessionId;
  w.close();

  const opened = timed(() => openSessionReader(sessionId, { dir }));
  rows.push([
    "open for reading (integrity_check included)",
    `${REPLAY_EVENTS} events, ${opened.ms.toFixed(1)} ms`,
    "",
  ]);
  const reader = opened.value;
  const streamed: number[] = [];
  const loaded: number[] = [];
  for (let round = 0; round < 5; round++) {
    const s = timed(() => {
      let bytes = 0;
      let n = 0;
      for (const e of reader.events()) {
        bytes += e.payload.byteLength;
        n++;
      }
      if (n !== REPLAY_EVENTS || bytes !== REPLAY_EVENTS * PAYLOAD_BYTES)
        throw new Error("replay lost events");
    });
    streamed.push(s.ms);
    const l = timed(() => reader.readEvents().length);
    loaded.push(l.ms);
  }
  reader.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  rows.push([
    "replay, streamed (iterator)",
    `${REPLAY_EVENTS} events in ${median(streamed).toFixed(1)} ms (median of 5)`,
    rate(REPLAY_EVENTS, median(streamed)),
  ]);
  rows.push([
    "replay, loaded at once (readEvents)",
    `${REPLAY_EVENTS} events in ${median(loaded).toFixed(1)} ms (median of 5)`,
    rate(REPLAY_EVENTS, median(loaded)),
  ]);
}

try {
  appendSingles("full", 2_000);
  appendSingles("normal", 10_000);
  appendBatches("full", 10_000, 100);
  appendBatches("full", 10_000, 10_000);
  appendBatches("normal", 10_000, 100);
  replay();
  console.log(
    `state backend benchmark — node ${process.version}, ${PAYLOAD_BYTES}-byte payloads, files in ${base}`,
  );
  const width = Math.max(...rows.map((r) => r[0].length));
  const width2 = Math.max(...rows.map((r) => r[1].length));
  for (const [what, detail, throughput] of rows) {
    console.log(`  ${what.padEnd(width)}  ${detail.padEnd(width2)}  ${throughput}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
