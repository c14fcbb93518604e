// plugin.GRPCStdio: a plugin's own stdout/stderr output after the handshake travels to
// the host as StdioData chunks on one long-lived stream the host opens at connect.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { StdioData, StdioDataSchema } from "@pluggableharness/protocol/goplugin";
import { StdioData_Channel as Channel, GRPCStdio } from "@pluggableharness/protocol/goplugin";
import { LineSplitter } from "./hclog.ts";
import { implement } from "./server.ts";

export { Channel as StdioChannel };

/** go-plugin forwards output in chunks of at most this size. */
export const STDIO_CHUNK_BYTES = 1024;

/**
 * Plugin side: collects output and streams it to the host. Output written before the
 * host subscribes is buffered up to `maxBuffered` bytes; beyond that the oldest
 * chunks are dropped rather than blocking the plugin.
 */
export class StdioForwarder {
  private readonly queue: Array<{ channel: Channel; data: Uint8Array }> = [];
  private queued = 0;
  private wake: (() => void) | undefined;
  private subscribed = false;
  private closed = false;
  private readonly maxBuffered: number;

  constructor(maxBuffered = 1024 * 1024) {
    this.maxBuffered = maxBuffered;
  }

  push(channel: Channel, data: Uint8Array | string): void {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    for (let off = 0; off < bytes.length; off += STDIO_CHUNK_BYTES) {
      const chunk = bytes.subarray(off, off + STDIO_CHUNK_BYTES);
      this.queue.push({ channel, data: chunk });
      this.queued += chunk.length;
    }
    while (this.queued > this.maxBuffered && this.queue.length > 0)
      this.queued -= this.queue.shift()!.data.length;
    this.wake?.();
  }

  /** Ends the stream to the host (used when the plugin shuts down). */
  close(): void {
    this.closed = true;
    this.wake?.();
  }

  handlers() {
    return implement(GRPCStdio, { streamStdio: (_req, ctx) => this.stream(ctx.signal) });
  }

  private async *stream(signal: AbortSignal): AsyncGenerator<MessageInitShape<typeof StdioDataSchema>> {
    if (this.subscribed) return; // one subscriber, like go-plugin
    this.subscribed = true;
    const onAbort = () => this.wake?.();
    signal.addEventListener("abort", onAbort);
    try {
      while (!signal.aborted) {
        const item = this.queue.shift();
        if (item) {
          this.queued -= item.data.length;
          yield { channel: item.channel, data: item.data };
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((r) => {
          this.wake = r;
        });
        this.wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.subscribed = false;
    }
  }
}

/** Host side: turns StdioData chunks into complete lines per channel. */
export class StdioLines {
  private readonly out: LineSplitter;
  private readonly err: LineSplitter;
  constructor(onLine: (channel: "stdout" | "stderr", line: string) => void) {
    this.out = new LineSplitter((l) => onLine("stdout", l));
    this.err = new LineSplitter((l) => onLine("stderr", l));
  }
  push(data: StdioData): void {
    const buf = Buffer.from(data.data.buffer, data.data.byteOffset, data.data.byteLength);
    if (data.channel === Channel.STDERR) this.err.push(buf);
    else this.out.push(buf);
  }
  flush(): void {
    this.out.flush();
    this.err.flush();
  }
}
