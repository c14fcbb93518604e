// The headless output's write coalescing: one write per event-loop turn, lines whole and
// in order, and nothing left behind at the end (flush, or the process exiting).
import { spawnSync } from "node:child_process";
import { EventEmitter, once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CoalescingWriter } from "../src/io.ts";

/**
 * A target stream that records each write it receives; `full` makes it want a drain (a
 * slow reader) until `drain()`.
 */
function target() {
  const writes: string[] = [];
  const emitter = new EventEmitter();
  let full = false;
  const stream = Object.defineProperties(emitter, {
    write: {
      value: (chunk: string | Uint8Array) => {
        writes.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"));
        return !full;
      },
    },
    writableNeedDrain: { get: () => full },
  }) as unknown as NodeJS.WritableStream;
  return {
    stream,
    writes,
    fill: () => {
      full = true;
    },
    drain: () => {
      full = false;
      emitter.emit("drain");
    },
    fail: (code: string) => emitter.emit("error", Object.assign(new Error(code), { code })),
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("CoalescingWriter", () => {
  it("turns the writes of one event-loop turn into one write, in order", async () => {
    const t = target();
    const w = new CoalescingWriter(t.stream);
    try {
      for (let i = 0; i < 100; i++) w.write(`{"n":${i}}\n`);
      expect(t.writes).toEqual([]);
      await turn();
      expect(t.writes).toHaveLength(1);
      expect(t.writes[0]!.split("\n").slice(0, -1)).toEqual(
        Array.from({ length: 100 }, (_, i) => `{"n":${i}}`),
      );
      w.write("next turn\n");
      await turn();
      expect(t.writes).toEqual([t.writes[0], "next turn\n"]);
    } finally {
      w.close();
    }
  });

  it("writes at once when 64 KiB are pending, keeping lines whole", () => {
    const t = target();
    const w = new CoalescingWriter(t.stream);
    try {
      const lineText = `${"x".repeat(1023)}\n`;
      for (let i = 0; i < 64; i++) w.write(lineText);
      expect(t.writes).toHaveLength(1);
      expect(t.writes[0]!.length).toBe(64 * 1024);
      w.write("tail\n");
      expect(t.writes).toHaveLength(1);
    } finally {
      w.close();
    }
    expect(t.writes.at(-1)).toBe("tail\n");
  });

  it("flushes the final record on close, without waiting for the event loop", () => {
    const t = target();
    const w = new CoalescingWriter(t.stream);
    w.write('{"type":"delta"}\n');
    w.write('{"type":"result"}\n');
    w.close();
    expect(t.writes.join("")).toBe('{"type":"delta"}\n{"type":"result"}\n');
  });

  it("passes the target's backpressure on: writes wait for its drain, and nothing is cut", async () => {
    const t = target();
    const w = new CoalescingWriter(t.stream);
    try {
      t.fill();
      const big = `${"x".repeat(70 * 1024)}\n`;
      expect(w.write(big)).toBe(false);
      expect(t.writes).toEqual([big]);
      let drained = false;
      const waiting = once(w, "drain").then(() => {
        drained = true;
      });
      w.write("next\n");
      await turn();
      expect(drained).toBe(false);
      // The second line is held until the target drains, and then goes out whole.
      expect(t.writes).toEqual([big]);
      t.drain();
      await waiting;
      await turn();
      expect(t.writes.join("")).toBe(`${big}next\n`);
    } finally {
      w.close();
    }
  });

  it("stops waiting when the target fails (EPIPE): later writes are dropped, never blocked", async () => {
    const t = target();
    const w = new CoalescingWriter(t.stream);
    try {
      t.fill();
      expect(w.write(`${"y".repeat(70 * 1024)}\n`)).toBe(false);
      const waiting = once(w, "drain");
      t.fail("EPIPE");
      await waiting;
      expect(w.failed).toBe(true);
      expect(w.write("after\n")).toBe(true);
      await turn();
      expect(t.writes).toHaveLength(1);
    } finally {
      w.close();
    }
  });

  it("flushes what is pending when the process exits", () => {
    const io = fileURLToPath(new URL("../src/io.ts", import.meta.url));
    const script = [
      `import { CoalescingWriter } from ${JSON.stringify(io)};`,
      "const w = new CoalescingWriter(process.stdout);",
      'w.write("first\\n");',
      'w.write("last\\n");',
      "process.exit(3);",
    ].join("\n");
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
    expect(r.status).toBe(3);
    expect(r.stdout).toBe("first\nlast\n");
  });
});
