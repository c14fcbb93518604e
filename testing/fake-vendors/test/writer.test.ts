import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { writeFrames } from "../src/writer.ts";

/** A response double that records each write as the socket would receive it. */
function recorder() {
  const emitter = new EventEmitter();
  const writes: Buffer[] = [];
  let ended = false;
  let destroyed = false;
  const res = Object.assign(emitter, {
    destroyed: false,
    socket: {
      destroy: () => {
        destroyed = true;
        emitter.emit("close");
      },
    },
    write(data: string | Uint8Array, cb: () => void) {
      writes.push(Buffer.from(data));
      setImmediate(cb);
      return true;
    },
    end() {
      ended = true;
    },
  });
  return {
    res: res as unknown as ServerResponse,
    writes,
    text: () => Buffer.concat(writes).toString("utf8"),
    ended: () => ended,
    destroyed: () => destroyed,
  };
}

const noStall = () => Promise.resolve();

describe("writeFrames", () => {
  it("batches many frames into few writes", async () => {
    const r = recorder();
    const frames = Array.from({ length: 5000 }, (_, i) => `data: ${i}\n\n`);
    await writeFrames(r.res, frames, { stall: noStall, batchBytes: 16 * 1024 });
    expect(r.text()).toBe(frames.join(""));
    expect(r.writes.length).toBeGreaterThan(1);
    expect(r.writes.length).toBeLessThan(10);
    expect(r.ended()).toBe(true);
  });

  it("cuts the byte stream into writes of splitBytes, across UTF-8 sequences", async () => {
    const r = recorder();
    await writeFrames(r.res, ["data: 🚀é\n\n"], { stall: noStall, splitBytes: 3 });
    expect(r.writes.every((w) => w.length <= 3)).toBe(true);
    expect(r.writes.some((w) => w.toString("utf8").includes("\uFFFD"))).toBe(true);
    expect(r.text()).toBe("data: 🚀é\n\n");
  });

  it("destroys the socket after the given number of frames on drop", async () => {
    const r = recorder();
    await writeFrames(r.res, ["a", "b", "c"], {
      stall: noStall,
      interrupt: { type: "drop", afterFrames: 2 },
    });
    expect(r.text()).toBe("ab");
    expect(r.destroyed()).toBe(true);
    expect(r.ended()).toBe(false);
  });

  it("writes error frames with the count of frames already written", async () => {
    const r = recorder();
    const seen: number[] = [];
    await writeFrames(r.res, ["a", "b", "c"], {
      stall: noStall,
      interrupt: { type: "error", afterFrames: 1 },
      errorFrames: (n) => {
        seen.push(n);
        return ["E"];
      },
    });
    expect(seen).toEqual([1]);
    expect(r.text()).toBe("aE");
    expect(r.ended()).toBe(true);
  });

  it("applies an interrupt placed beyond the last frame before ending", async () => {
    const r = recorder();
    await writeFrames(r.res, ["a"], {
      stall: noStall,
      interrupt: { type: "malformed", afterFrames: 5, bytes: "X" },
    });
    expect(r.text()).toBe("aX");
  });
});
