// Writes frames to a response: batched with backpressure by default, or paced, split and
// interrupted (error, drop, stall, malformed) as a script asks.
import type { ServerResponse } from "node:http";
import { setTimeout as delay } from "node:timers/promises";
import type { Interrupt } from "./types.ts";

export type Frame = string | Uint8Array;

export interface WriteOptions {
  chunkDelayMs?: number;
  splitBytes?: number;
  interrupt?: Interrupt;
  /** In-band error frames for an `error` interrupt after `written` frames. */
  errorFrames?: (written: number) => Frame[];
  malformedFrame?: () => Frame;
  /** Resolves when the test releases the stall (or the client went away). */
  stall: (res: ServerResponse) => Promise<void>;
  /** Bytes gathered before one write when frames are not paced. */
  batchBytes?: number;
}

const DEFAULT_BATCH = 64 * 1024;

export async function writeFrames(
  res: ServerResponse,
  frames: Iterable<Frame>,
  opts: WriteOptions,
): Promise<void> {
  let closed = res.destroyed;
  res.once("close", () => {
    closed = true;
  });
  const batchBytes = opts.batchBytes ?? DEFAULT_BATCH;
  const paced = (opts.chunkDelayMs ?? 0) > 0;
  let pending: Frame[] = [];
  let pendingBytes = 0;
  let written = 0;

  const writeOnce = (data: Frame): Promise<void> =>
    new Promise((resolve) => {
      if (closed) return resolve();
      const onClose = () => resolve();
      res.once("close", onClose);
      // The callback fires once the data reached the socket, so a drop or stall right after
      // still delivers everything written before it.
      res.write(data, () => {
        res.off("close", onClose);
        resolve();
      });
    });

  const flush = async (): Promise<void> => {
    if (pending.length === 0 || closed) return;
    const data = pending.every((f) => typeof f === "string")
      ? (pending as string[]).join("")
      : Buffer.concat(pending.map((f) => (typeof f === "string" ? Buffer.from(f) : f)));
    pending = [];
    pendingBytes = 0;
    if (opts.splitBytes && opts.splitBytes > 0) {
      const buf = typeof data === "string" ? Buffer.from(data) : data;
      for (let i = 0; i < buf.length && !closed; i += opts.splitBytes)
        await writeOnce(buf.subarray(i, i + opts.splitBytes));
    } else {
      await writeOnce(data);
    }
  };

  /** Handles the interrupt; returns true when the response is finished. */
  const interrupt = async (i: Interrupt): Promise<boolean> => {
    switch (i.type) {
      case "error":
        pending.push(...(opts.errorFrames?.(written) ?? []));
        await flush();
        if (!closed) res.end();
        return true;
      case "drop":
        await flush();
        res.socket?.destroy();
        return true;
      case "stall": {
        await flush();
        await opts.stall(res);
        if (closed) return true;
        const mode = i.onRelease ?? "resume";
        if (mode === "end") res.end();
        if (mode === "drop") res.socket?.destroy();
        return mode !== "resume";
      }
      case "malformed":
        pending.push(i.bytes ?? opts.malformedFrame?.() ?? "data: {\n\n");
        if (i.thenEnd) {
          await flush();
          if (!closed) res.end();
          return true;
        }
        return false;
    }
  };

  let fired = false;
  for (const frame of frames) {
    if (closed) return;
    if (!fired && opts.interrupt && written === opts.interrupt.afterFrames) {
      fired = true;
      if (await interrupt(opts.interrupt)) return;
    }
    pending.push(frame);
    pendingBytes += typeof frame === "string" ? frame.length : frame.byteLength;
    written++;
    if (paced) {
      await flush();
      await delay(opts.chunkDelayMs);
    } else if (pendingBytes >= batchBytes) {
      await flush();
    }
  }
  // An interrupt placed at or beyond the last frame happens before the response ends.
  if (!fired && opts.interrupt && !closed) {
    if (await interrupt(opts.interrupt)) return;
  }
  await flush();
  if (!closed) res.end();
}
