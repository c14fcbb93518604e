// A finished session is one self-contained file: copying the .sqlite alone loses nothing,
// once a run has ended, even while the writer (or a reader) still has the file open.
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSession, openSessionReader, tidySessionFile } from "../src/index.ts";
import { payloadFor, scratchDir, toolProducer } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir("state-wal-"));
});
afterEach(() => cleanup());

const TOOL_CALL = 2;

function copyAlone(id: string): string {
  const other = join(dir, "copy");
  mkdirSync(other, { recursive: true });
  copyFileSync(join(dir, `${id}.sqlite`), join(other, `${id}.sqlite`));
  return other;
}

function eventsIn(id: string, where: string): number {
  const r = openSessionReader(id, { dir: where });
  try {
    return r.readEvents().length;
  } finally {
    r.close();
  }
}

describe("self-contained session files", () => {
  it("a run's end puts everything in the main file while the writer stays open", () => {
    const w = createSession({ profile: "p", depth: 0 }, { dir });
    for (let i = 0; i < 50; i++)
      w.append({
        kind: TOOL_CALL as never,
        producer: toolProducer,
        schemaVersion: "1",
        payload: payloadFor(i),
      });
    w.setStatus(SessionStatus.COMPLETED);
    expect(eventsIn(w.sessionId, copyAlone(w.sessionId))).toBe(50);
    w.close();
  });

  it("closing with a reader still open leaves the main file complete, and tidying removes the sidecars", () => {
    const w = createSession({ profile: "p", depth: 0 }, { dir });
    const id = w.sessionId;
    const reader = openSessionReader(id, { dir });
    for (let i = 0; i < 20; i++)
      w.append({
        kind: TOOL_CALL as never,
        producer: toolProducer,
        schemaVersion: "1",
        payload: payloadFor(i),
      });
    w.close();
    expect(eventsIn(id, copyAlone(id))).toBe(20);
    reader.close();
    tidySessionFile(id, { dir });
    expect(existsSync(join(dir, `${id}.sqlite-wal`))).toBe(false);
    expect(existsSync(join(dir, `${id}.sqlite-shm`))).toBe(false);
    expect(eventsIn(id, dir)).toBe(20);
  });
});
