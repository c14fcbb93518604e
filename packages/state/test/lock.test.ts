// One writer per session across processes: a second writer is refused at once, naming
// the holder; a holder killed with SIGKILL leaves no stale lock behind; prune never
// deletes a session another process has open.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  assertNoOtherWriter,
  createSession,
  openSessionReader,
  openSessionWriter,
  pruneSessions,
  readLockHolder,
  SessionLockedError,
  type StateLogEntry,
  WriterAlreadyOpenError,
} from "../src/index.ts";
import { scratchDir } from "./helpers.ts";

const CHILD = new URL("./children/held-writer.ts", import.meta.url).pathname;

let dir: string;
let cleanup: () => void;
let child: ChildProcess | undefined;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir("state-lock-"));
});
afterEach(() => {
  child?.kill("SIGKILL");
  cleanup();
});

/** A child process holding the session's writer; resolves once it is open. */
function holder(sessionId: string): Promise<ChildProcess> {
  const proc = spawn(process.execPath, [CHILD, dir, sessionId], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), "pluggableharness-state-compile-cache") },
  });
  child = proc;
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("ready")) resolve(proc);
    });
    proc.on("exit", (code) => reject(new Error(`writer child exited ${code} before it was ready`)));
  });
}

function newSession(): string {
  const w = createSession({ profile: "p", depth: 0 }, { dir, durability: "normal" });
  const id = w.sessionId;
  w.close();
  return id;
}

describe("session writer lock", () => {
  it("refuses a second writer at once, naming the holding process and since when", async () => {
    const id = newSession();
    const proc = await holder(id);
    const started = Date.now();
    let caught: unknown;
    try {
      openSessionWriter(id, { dir });
    } catch (err) {
      caught = err;
    }
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(caught).toBeInstanceOf(SessionLockedError);
    const e = caught as SessionLockedError;
    expect(e.holder?.pid).toBe(proc.pid);
    expect(Date.parse(e.holder!.since)).toBeLessThanOrEqual(Date.now());
    expect(e.message).toMatch(new RegExp(`pid ${proc.pid}.*since `));
    // The quick check before start-up says the same, and takes nothing.
    expect(() => assertNoOtherWriter(id, { dir })).toThrow(SessionLockedError);
    // Readers are never refused: `agent sessions show` works on a live session.
    const r = openSessionReader(id, { dir });
    expect(r.meta().status).toBe(SessionStatus.RUNNING);
    r.close();
  });

  it("takes over the lock of a process killed while holding it, and says so", async () => {
    const id = newSession();
    const proc = await holder(id);
    const dead = proc.pid;
    proc.kill("SIGKILL");
    await new Promise((resolve) => proc.on("exit", resolve));
    expect(readLockHolder(join(dir, `${id}.sqlite`))?.pid).toBe(dead);
    expect(() => assertNoOtherWriter(id, { dir })).not.toThrow();
    const logs: StateLogEntry[] = [];
    const w = openSessionWriter(id, { dir, log: (e) => logs.push(e) });
    expect(logs.map((l) => l.code)).toContain("stale_lock_taken_over");
    expect(readLockHolder(join(dir, `${id}.sqlite`))?.pid).toBe(process.pid);
    // The same process cannot open a second writer either.
    expect(() => openSessionWriter(id, { dir })).toThrow(WriterAlreadyOpenError);
    w.close();
    // A clean close removes the owner record, so nothing names a holder any more.
    expect(readLockHolder(join(dir, `${id}.sqlite`))).toBeUndefined();
    openSessionWriter(id, { dir }).close();
  });

  it("prune skips a session another process has open, whatever its status", async () => {
    const id = newSession();
    await holder(id);
    const r = pruneSessions({ ids: [id], includeRunning: true }, { dir });
    expect(r.deleted).toEqual([]);
    expect(r.skipped[0]?.reason).toMatch(/open in another process \(pid \d+/);
    expect(existsSync(join(dir, `${id}.sqlite`))).toBe(true);
    child!.kill("SIGKILL");
    await new Promise((resolve) => child!.on("exit", resolve));
    const after = pruneSessions({ ids: [id], includeRunning: true }, { dir });
    expect(after.deleted.map((d) => d.sessionId)).toEqual([id]);
    for (const suffix of ["", "-wal", "-shm", ".lock", ".owner"])
      expect(existsSync(join(dir, `${id}.sqlite${suffix}`))).toBe(false);
  });
});
