// Parsing a streamed answer that is already buffered leaves the event loop at least every
// few milliseconds: the port's batched messages, held deltas and a kernel's cancel or ping
// are macrotasks of the plugin's thread, and must not wait for the whole answer.
import { describe, expect, it } from "vitest";
import { readSse } from "../src/index.ts";

function bufferedBody(events: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(
    Array.from({ length: events }, (_, i) => `event: delta\ndata: {"i":${i}}\n\n`).join(""),
  );
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 16_384) controller.enqueue(bytes.subarray(at, at + 16_384));
      controller.close();
    },
  });
}

describe("readSse on a body that is read faster than it is parsed", () => {
  it("lets the event loop turn mid-body, and still yields every event in order", async () => {
    let parsed = 0;
    let parsedWhenTurned = -1;
    setImmediate(() => {
      parsedWhenTurned = parsed;
    });
    const seen: number[] = [];
    for await (const e of readSse(bufferedBody(20_000), new AbortController().signal, 1)) {
      seen.push((JSON.parse(e.data) as { i: number }).i);
      parsed++;
    }
    expect(seen).toHaveLength(20_000);
    expect(seen.every((v, i) => v === i)).toBe(true);
    // Before, the loop turned only after the last event: every read resolved in a microtask.
    expect(parsedWhenTurned).toBeGreaterThanOrEqual(0);
    expect(parsedWhenTurned).toBeLessThan(20_000);
  });
});
