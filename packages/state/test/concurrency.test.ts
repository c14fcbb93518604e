// WAL in practice: the kernel's writer and a reader in ANOTHER process (a CLI running
// `agent sessions show`) never wait on each other. Both sides run with busy_timeout 0,
// so any wait would surface at once as SQLITE_BUSY instead of as a delay.

import { type ChildProcess, spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSession, openSessionReader } from "../src/index.ts";
import { payloadFor, sameBytes, scratchDir } from "./helpers.ts";

const CHILD = new URL("./children/held-writer.ts", import.meta.url).pathname;

let dir: string;
let cleanup: () => void;
let child: ChildProcess | undefined;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => {
  child?.kill("SIGKILL");
  cleanup();
});

/** Starts the writer child; `expect(prefix)` resolves with the next stdout line starting with it. */
function startWriter(sessionId: string) {
  const proc = spawn(process.execPath, [CHILD, dir, sessionId], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: join(tmpdir(), "pluggableharness-state-compile-cache") },
  });
  child = proc;
  const lines: string[] = [];
  const waiters: { prefix: string; resolve: (line: string) => void; reject: (e: Error) => void }[] = [];
  let tail = "";
  let stderr = "";
  const pump = () => {
    for (let i = 0; i < waiters.length; i++) {
      const w = waiters[i];
      const at = lines.findIndex((l) => l.startsWith(w?.prefix ?? "") || l.startsWith("error"));
      if (w === undefined || at < 0) continue;
      const [line] = lines.splice(at, 1);
      waiters.splice(i--, 1);
      if (line?.startsWith("error")) w.reject(new Error(`writer child: ${line}`));
      else w.resolve(line ?? "");
    }
  };
  proc.stdout.setEncoding("utf8");
  proc.stdout.on("data", (chunk: string) => {
    tail += chunk;
    const parts = tail.split("\n");
    tail = parts.pop() ?? "";
    lines.push(...parts);
    pump();
  });
  proc.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  proc.on("exit", () => {
    for (const w of waiters.splice(0)) w.reject(new Error(`writer child exited: ${stderr}`));
  });
  return {
    send: (line: string) => proc.stdin.write(`${line}\n`),
    expectLine: (prefix: string) =>
      new Promise<string>((resolve, reject) => {
        waiters.push({ prefix, resolve, reject });
        pump();
      }),
    exited,
  };
}

const lastNumber = (line: string) => Number(line.split(" ").at(-1));

describe("a reader in another process", () => {
  it("neither waits for nor holds up the writer", { timeout: 30_000 }, async () => {
    const created = createSession({ profile: "coder", depth: 0 }, { dir });
    const { sessionId, path } = created;
    created.close();
    const writer = startWriter(sessionId);
    await writer.expectLine("ready");
    writer.send("burst 20");
    expect(lastNumber(await writer.expectLine("burst-done"))).toBe(20);

    // 1. The writer holds an open write transaction with 5 uncommitted events.
    writer.send("hold 5");
    await writer.expectLine("holding");
    const probe = new DatabaseSync(path, { timeout: 0 });
    let busy: unknown;
    try {
      probe.exec("BEGIN IMMEDIATE"); // a second writer must be refused: the lock really is held
    } catch (err) {
      busy = err;
    }
    probe.close();
    expect((busy as { errcode?: number } | undefined)?.errcode).toBe(5); // SQLITE_BUSY

    // The reader opens (integrity check included) and reads at once, seeing committed data only.
    const reader = openSessionReader(sessionId, { dir, busyTimeoutMs: 0 });
    expect(reader.eventCount()).toBe(20);
    expect(reader.info().sessionId).toBe(sessionId);

    // 2. The reader holds a read snapshot open while the writer commits.
    const stream = reader.events();
    expect(stream.next().value?.sequence).toBe(1);
    writer.send("release");
    expect(lastNumber(await writer.expectLine("committed"))).toBe(25);
    let seen = 1;
    for (const _ of stream) seen++;
    expect(seen).toBe(20); // its snapshot predates the commit
    expect(reader.eventCount()).toBe(25);

    // 3. Unsynchronized traffic: the writer appends while the reader keeps reading.
    writer.send("burst 400");
    let done = false;
    const finished = writer.expectLine("burst-done").then((line) => {
      done = true;
      return line;
    });
    let previous = 25;
    let readsDuringBurst = 0;
    let observedMidway = false;
    while (!done) {
      const count = reader.eventCount();
      expect(count).toBeGreaterThanOrEqual(previous);
      if (count > 25 && count < 425) observedMidway = true;
      const bad = reader
        .readEvents({ afterSequence: previous - 5 })
        .filter((e) => !sameBytes(e.payload, payloadFor(e.sequence - 1)));
      expect(bad).toEqual([]);
      previous = count;
      readsDuringBurst++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(lastNumber(await finished)).toBe(425);
    expect(readsDuringBurst).toBeGreaterThan(0);
    expect(observedMidway).toBe(true);
    expect(reader.eventCount()).toBe(425);
    reader.close();

    writer.send("exit");
    expect(await writer.exited).toBe(0);
  });
});
