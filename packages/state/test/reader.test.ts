import { readdirSync } from "node:fs";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createSession,
  kernelProducer,
  type NewEvent,
  openSessionReader,
  replaySession,
  SessionNotFoundError,
  type SessionWriter,
  StoreClosedError,
} from "../src/index.ts";
import { modelProducer, payloadFor, sameBytes, scratchDir, toolCallEvent, toolProducer } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
let writer: SessionWriter;

const openFds = () => readdirSync("/proc/self/fd").length;

beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
  writer = createSession({ profile: "coder", depth: 0 }, { dir, durability: "normal" });
});
afterEach(() => {
  writer.close();
  cleanup();
});

function fill(n: number): void {
  const events: NewEvent[] = [];
  for (let i = 0; i < n; i++) {
    const kind = i % 3 === 0 ? EventKind.MESSAGE : i % 3 === 1 ? EventKind.TOOL_CALL : EventKind.TOOL_RESULT;
    const producer =
      kind === EventKind.MESSAGE ? kernelProducer("0.1.0") : i % 2 ? toolProducer : modelProducer;
    events.push({ kind, producer, schemaVersion: "1", payload: payloadFor(i, 32) });
  }
  writer.appendBatch(events);
}

describe("replay", () => {
  it("yields a 10,000-event session in sequence order with producer identity and schema version", () => {
    fill(10_000);
    const reader = openSessionReader(writer.sessionId, { dir });
    let expected = 1;
    let bad = 0;
    for (const e of reader.events()) {
      if (
        e.sequence !== expected ||
        !sameBytes(e.payload, payloadFor(expected - 1, 32)) ||
        e.schemaVersion !== "1"
      ) {
        bad++;
      }
      expected++;
    }
    expect(bad).toBe(0);
    expect(expected - 1).toBe(10_000);
    expect(reader.eventCount()).toBe(10_000);
    expect(reader.lastSequence()).toBe(10_000);
    const first = reader.event(1);
    expect(first?.producer).toMatchObject({
      category: PluginCategory.KERNEL,
      name: "kernel",
      version: "0.1.0",
    });
    expect(reader.event(2)?.producer).toMatchObject({ category: PluginCategory.TOOL, name: "fs" });
    reader.close();
    expect(() => reader.eventCount()).toThrow(StoreClosedError);
  });

  it("selects by sequence range and kind", () => {
    fill(30);
    const reader = openSessionReader(writer.sessionId, { dir });
    const seqs = (range: Parameters<typeof reader.readEvents>[0]) =>
      reader.readEvents(range).map((e) => e.sequence);
    expect(seqs({ afterSequence: 27 })).toEqual([28, 29, 30]);
    expect(seqs({ afterSequence: 5, throughSequence: 8 })).toEqual([6, 7, 8]);
    expect(seqs({ kinds: [EventKind.MESSAGE], throughSequence: 10 })).toEqual([1, 4, 7, 10]);
    expect(seqs({ kinds: [] })).toEqual([]);
    reader.close();
  });

  it("streams one snapshot while the writer keeps appending, then sees the new events", () => {
    fill(100);
    const reader = writer.openReader();
    const stream = reader.events();
    expect(stream.next().value?.sequence).toBe(1);
    writer.append(toolCallEvent(100)); // not blocked by the open read
    let seen = 1;
    for (const _ of stream) seen++;
    expect(seen).toBe(100); // the snapshot the stream started on
    expect(reader.readEvents({ afterSequence: 100 }).map((e) => e.sequence)).toEqual([101]);
    reader.close();
  });

  it("replaySession closes its reader even when the consumer stops early", () => {
    fill(50);
    // SQLite defers closing a file's descriptors while another connection of this process
    // holds locks on it, so measure without the writer.
    writer.close();
    const baseline = openFds();
    let taken = 0;
    for (const e of replaySession(writer.sessionId, { dir, afterSequence: 10 })) {
      expect(e.sequence).toBe(11 + taken);
      if (++taken === 3) break;
    }
    expect(taken).toBe(3);
    expect(openFds()).toBe(baseline);
    expect(() => [...replaySession("01ARZ3NDEKTSV4RRFFQ69G5FAV", { dir })]).toThrow(SessionNotFoundError);
  });
});

describe("what is missing to re-render", () => {
  it("diffs the producer manifest against installed plugins on exact versions", () => {
    fill(6);
    writer.append({ ...toolCallEvent(0), producer: { ...toolProducer, version: "1.3.0" } });
    const reader = openSessionReader(writer.sessionId, { dir });
    const installed = [toolProducer, { ...modelProducer, version: "2.1.0" }];
    expect(reader.missingProducers(installed).map((p) => `${p.categoryText}/${p.name}@${p.version}`)).toEqual(
      ["model/anthropic@2.0.1", "tool/fs@1.3.0"],
    );
    expect(reader.missingProducers(installed, { includeKernel: true }).map((p) => p.name)).toEqual([
      "kernel",
      "anthropic",
      "fs",
    ]);
    expect(
      reader.missingProducers([toolProducer, modelProducer, { ...toolProducer, version: "1.3.0" }]),
    ).toEqual([]);
    reader.close();
  });
});
