import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fromBinary } from "@bufbuild/protobuf";
import { MessageEventSchema, ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CURRENT_SCHEMA_VERSION,
  createSession,
  kernelProducer,
  listSessions,
  openSessionReader,
  openSessionWriter,
  SchemaTooNewError,
  StateError,
} from "../src/index.ts";
import { collectLog, scratchDir, toolCallEvent } from "./helpers.ts";
import { SPEC_SHAPE, shapeOf } from "./schema-shape.ts";

const V1_ID = "01JB0Z5V8X6QK2W3R4T5Y6B7J8";
const V1_SQL = readFileSync(new URL("./fixtures/session-v1.sql", import.meta.url), "utf8");

let dir: string;
let cleanup: () => void;

/** Materializes the checked-in version-1 fixture as a session file. */
function writeV1File(): string {
  const path = join(dir, `${V1_ID}.sqlite`);
  const db = new DatabaseSync(path);
  db.exec(V1_SQL);
  db.close();
  return path;
}

function sha256(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => cleanup());

describe("schema migration", () => {
  it("the fixture really is a version-1 file", () => {
    const shape = shapeOf(writeV1File());
    expect(shape.userVersion).toBe(1);
    expect(shape.tables.producers).toBeUndefined();
    expect(shape.tables.cost_ledger?.columns).not.toContain("cache_read_tokens INTEGER NOT NULL DEFAULT 0");
  });

  it("upgrades a version-1 file step by step to the current layout before anything else", () => {
    const path = writeV1File();
    const { entries, log } = collectLog();
    const w = openSessionWriter(V1_ID, { dir, log, durability: "normal" });
    try {
      expect(w.migrations).toEqual([
        { from: 1, to: 2, description: expect.any(String) },
        { from: 2, to: 3, description: expect.any(String) },
        { from: 3, to: 4, description: expect.any(String) },
      ]);
      expect(entries.map((e) => e.code)).toEqual(["session_migrated"]);
      // An old file records neither directory nor title: both read as absent.
      expect(w.meta().workingDirectory).toBeUndefined();
      expect(w.info()).toMatchObject({
        workingDirectory: "",
        title: "",
        model: "openai/gpt-4.1",
        modelOverridden: false,
      });
      // Same shape as a file created fresh at the current version.
      const fresh = createSession({ profile: "p", depth: 0 }, { dir });
      fresh.close();
      expect(shapeOf(path)).toEqual(shapeOf(fresh.path));
      expect(shapeOf(path).tables).toEqual(SPEC_SHAPE);
      expect(shapeOf(path).userVersion).toBe(CURRENT_SCHEMA_VERSION);

      const r = w.openReader();
      // Producers manifest backfilled from the log, first sighting each.
      expect(r.producers().map((p) => [p.categoryText, p.name, p.version, p.firstSeenSequence])).toEqual([
        ["tool", "fs", "1.0.0", 1],
        ["kernel", "kernel", "0.0.9", 2],
        ["tool", "fs", "1.1.0", 6],
      ]);
      // Old ledger rows kept, the new columns at their defaults.
      expect(
        r.costLedger().map((c) => [c.sequence, c.eventSequence, c.inputTokens, c.cacheReadTokens, c.costUsd]),
      ).toEqual([
        [1, 2, 1200, 0, 0.0081],
        [2, 5, 800, 0, 0.0039],
        [3, 5, 50, 0, 0.0002],
      ]);
      expect(r.info().costUsd).toBeCloseTo(0.0122, 12);
      expect(r.planItems().map((p) => p.decisionText)).toEqual(["allow", "deny"]);
      const events = r.readEvents();
      expect(events.map((e) => e.kind)).toEqual([
        EventKind.TOOL_CALL,
        EventKind.MESSAGE,
        EventKind.TOOL_RESULT,
        EventKind.PLAN,
        EventKind.MESSAGE,
        EventKind.TOOL_CALL,
      ]);
      const message = fromBinary(MessageEventSchema, events[1]?.payload ?? new Uint8Array());
      expect(message.message?.content[0]?.block).toMatchObject({
        case: "text",
        value: { text: "The build is green." },
      });
      expect(fromBinary(ToolCallEventSchema, events[0]?.payload ?? new Uint8Array()).call?.toolName).toBe(
        "read_file",
      );
      r.close();

      // The upgraded file keeps counting where version 1 stopped.
      expect(w.append(toolCallEvent(7)).sequence).toBe(7);
      w.setStatus(SessionStatus.RUNNING); // completed may be re-opened
      const next = w.append({
        kind: EventKind.MESSAGE,
        producer: kernelProducer("0.1.0"),
        schemaVersion: "1",
        payload: new Uint8Array([1]),
        costs: [
          { providerName: "anthropic", modelId: "claude-x", inputTokens: 1, outputTokens: 1, costUsd: 0.001 },
        ],
      });
      const r2 = w.openReader();
      expect(r2.costLedger().at(-1)).toMatchObject({ sequence: 4, eventSequence: next.sequence });
      r2.close();
    } finally {
      w.close();
    }
  });

  it("upgrades an old file found by a read-only listing or reader too", () => {
    writeV1File();
    const { log } = collectLog();
    const listing = listSessions({ dir, log });
    expect(listing.unreadable).toEqual([]);
    expect(listing.sessions.map((s) => [s.sessionId, s.status, s.costUsd])).toEqual([
      [V1_ID, SessionStatus.COMPLETED, expect.closeTo(0.0122, 12)],
    ]);
    expect(shapeOf(join(dir, `${V1_ID}.sqlite`)).userVersion).toBe(CURRENT_SCHEMA_VERSION);
    const r = openSessionReader(V1_ID, { dir, log });
    expect(r.migrations).toEqual([]); // already current
    expect(r.eventCount()).toBe(6);
    r.close();
  });

  it("refuses a file from a newer kernel with SchemaTooNewError and leaves it untouched", () => {
    const w = createSession({ profile: "p", depth: 0 }, { dir });
    w.append(toolCallEvent(1));
    w.close();
    const raw = new DatabaseSync(w.path);
    raw.exec(`PRAGMA user_version = ${CURRENT_SCHEMA_VERSION + 1}`);
    raw.close();
    const before = sha256(w.path);

    let caught: unknown;
    try {
      openSessionWriter(w.sessionId, { dir });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SchemaTooNewError);
    expect(caught).toBeInstanceOf(StateError);
    expect(caught).toMatchObject({
      code: "schema_too_new",
      fileVersion: CURRENT_SCHEMA_VERSION + 1,
      supportedVersion: CURRENT_SCHEMA_VERSION,
    });
    expect(() => openSessionReader(w.sessionId, { dir })).toThrow(SchemaTooNewError);
    const listing = listSessions({ dir });
    expect(listing.sessions).toEqual([]);
    expect(listing.unreadable).toEqual([
      expect.objectContaining({ sessionId: w.sessionId, reason: "schema_too_new" }),
    ]);
    expect(sha256(w.path)).toBe(before);
  });
});
