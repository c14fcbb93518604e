// Where a command writes. Commands take an Io so tests can capture output without
// spawning a process; the binary passes the real streams.
import { Writable } from "node:stream";

export interface Io {
  readonly out: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  readonly err: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

export function processIo(): Io {
  return { out: process.stdout, err: process.stderr, env: process.env, cwd: process.cwd() };
}

export function line(stream: NodeJS.WritableStream, text = ""): void {
  stream.write(`${text}\n`);
}

/** A failure a command reports as one message and an exit status (no stack trace). */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A coalesced output flushes at the latest when this much is pending. */
const COALESCE_LIMIT = 64 * 1024;

/**
 * An output that turns the many small writes of one event-loop turn into one write to the
 * underlying stream: a stream-json run prints a line per delta, and a write per line costs
 * a system call each. Pending text goes out on setImmediate, once 64 KiB is pending, on
 * flushNow() and when the process exits. Callers write whole lines, so each flush ends on a
 * line boundary; the order of writes is kept.
 */
export class CoalescingWriter extends Writable {
  readonly #target: NodeJS.WritableStream;
  #pending: string[] = [];
  #size = 0;
  #scheduled: NodeJS.Immediate | undefined;
  readonly #onExit = () => this.flushNow();

  constructor(target: NodeJS.WritableStream) {
    super({ decodeStrings: false });
    this.#target = target;
    process.on("exit", this.#onExit);
  }

  override _write(chunk: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    this.#pending.push(text);
    this.#size += text.length;
    if (this.#size >= COALESCE_LIMIT) this.flushNow();
    else this.#scheduled ??= setImmediate(() => this.flushNow());
    callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.flushNow();
    callback();
  }

  /** Writes everything pending to the target now, as one write. */
  flushNow(): void {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    if (this.#pending.length === 0) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join("");
    this.#pending = [];
    this.#size = 0;
    this.#target.write(text);
  }

  /** Flushes and stops watching for the process exit. */
  close(): void {
    this.flushNow();
    process.off("exit", this.#onExit);
  }
}
