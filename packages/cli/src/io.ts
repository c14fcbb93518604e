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

/**
 * Failed writes to the command's own output (stdout, stderr): EPIPE when the reader went
 * away, ENOSPC on a full disk, EBADF, EIO. bin.ts feeds it from the process streams'
 * error events; a command that can end cleanly (a headless run interrupts its session)
 * listens, and every other command ends at once. Either way the exit status is not 0.
 */
export class OutputFailures {
  #first: NodeJS.ErrnoException | undefined;
  readonly #listeners = new Set<(err: NodeJS.ErrnoException) => void>();

  /** The first failure, if any write failed. */
  get failure(): NodeJS.ErrnoException | undefined {
    return this.#first;
  }

  /** Whether a command is listening (it will end the run itself). */
  get handled(): boolean {
    return this.#listeners.size > 0;
  }

  note(err: NodeJS.ErrnoException): void {
    this.#first ??= err;
    for (const l of [...this.#listeners]) l(err);
  }

  /** Calls `fn` on every failure from now on; returns the function that stops it. */
  listen(fn: (err: NodeJS.ErrnoException) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }
}

export const outputFailures = new OutputFailures();

/** What a failed write to the output means, in words, for stderr. */
export function outputFailureText(err: NodeJS.ErrnoException): string {
  const why =
    err.code === "EPIPE"
      ? "EPIPE: the reader closed it"
      : err.code === "ENOSPC"
        ? "ENOSPC: no space left on the device"
        : (err.code ?? err.message);
  return `the output could not be written (${why})`;
}

/**
 * Resolves once everything written to `stream` so far has reached the system (a pipe's
 * reader may take its time: that is backpressure, and it is waited for), or the stream
 * failed or closed.
 */
export function flushed(stream: NodeJS.WritableStream): Promise<void> {
  const w = stream as Partial<Writable> & NodeJS.WritableStream;
  if (w.destroyed || w.writableEnded || !w.writableLength) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      w.off("error", done);
      w.off("close", done);
      resolve();
    };
    w.on("error", done);
    w.on("close", done);
    // Writes complete in order: the callback of an empty one runs after all before it.
    w.write("", () => done());
  });
}

/** A coalesced output flushes at the latest when this much is pending. */
const COALESCE_LIMIT = 64 * 1024;

/**
 * An output that turns the many small writes of one event-loop turn into one write to the
 * underlying stream: a stream-json run prints a line per delta, and a write per line costs
 * a system call each. Pending text goes out on setImmediate, once 64 KiB is pending, on
 * flushNow() and when the process exits. Callers write whole lines, so each flush ends on a
 * line boundary; the order of writes is kept, and a line is never cut.
 *
 * Backpressure passes through: while the target wants a drain (a slow pipe reader), a
 * write here is not acknowledged, so this stream's own write() returns false and a writer
 * that waits for its "drain" waits for the reader. Once the target fails (EPIPE, ENOSPC)
 * or closes, everything is dropped and writes are acknowledged at once, so nobody waits
 * for a drain that cannot come.
 */
export class CoalescingWriter extends Writable {
  readonly #target: NodeJS.WritableStream;
  #pending: string[] = [];
  #size = 0;
  #scheduled: NodeJS.Immediate | undefined;
  /** The acknowledgement of the write waiting for the target's drain. */
  #blocked: (() => void) | undefined;
  #failed = false;
  readonly #onExit = () => this.flushNow();
  readonly #release = () => {
    const b = this.#blocked;
    this.#blocked = undefined;
    b?.();
  };
  readonly #onTargetFailure = () => {
    this.#failed = true;
    this.#pending = [];
    this.#size = 0;
    this.#target.off("drain", this.#release);
    this.#release();
  };

  constructor(target: NodeJS.WritableStream) {
    super({ decodeStrings: false });
    this.#target = target;
    process.on("exit", this.#onExit);
    target.on("error", this.#onTargetFailure);
    target.on("close", this.#onTargetFailure);
  }

  /** The target failed or closed: what is written from now on is dropped. */
  get failed(): boolean {
    return this.#failed;
  }

  override _write(chunk: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.#failed) {
      callback();
      return;
    }
    const text = typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    this.#pending.push(text);
    this.#size += text.length;
    if (this.#size >= COALESCE_LIMIT) this.flushNow();
    else this.#scheduled ??= setImmediate(() => this.flushNow());
    if (!this.#failed && (this.#target as Partial<Writable>).writableNeedDrain) {
      this.#blocked = () => callback();
      this.#target.once("drain", this.#release);
    } else callback();
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
    if (this.#pending.length === 0 || this.#failed) return;
    const text = this.#pending.length === 1 ? this.#pending[0]! : this.#pending.join("");
    this.#pending = [];
    this.#size = 0;
    this.#target.write(text);
  }

  /** Flushes and stops watching for the process exit and the target's failure. */
  close(): void {
    this.flushNow();
    process.off("exit", this.#onExit);
    this.#target.off("error", this.#onTargetFailure);
    this.#target.off("close", this.#onTargetFailure);
  }
}
