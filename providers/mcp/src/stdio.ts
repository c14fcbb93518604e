// The stdio transport to a local server, written here rather than taken from the SDK so
// the bridge decides exactly how the process starts: the environment it is given (no
// defaults merged in), the sandbox wrapping it, its own process group (the whole tree is
// stopped together), what is kept of its stderr (a bounded tail, for error messages), and
// how much of a message is held: each line goes through the clipper as it arrives, so no
// message costs more than the clip limits (the SDK's ReadBuffer held whole lines, and threw
// out of the data handler at 10 MiB, which ended the bridge).
import { type ChildProcess, spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import { serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { type ClipLimits, JsonClipper, parseClipped } from "./clip.ts";

/** How much of the server's stderr is kept. */
const STDERR_TAIL = 4096;

const live = new Set<ChildProcess>();
let exitHook = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // gone already
  }
}

/** Every server still running dies with the bridge, whatever ends it. */
function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const c of live) killGroup(c, "SIGKILL");
  });
}

export interface StdioOptions {
  file: string;
  args: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** How much of one message is kept. */
  clip: ClipLimits;
}

/**
 * Splits a byte stream into lines and reads each through a clipper as it comes: memory
 * stays within the clip limits however long a line is.
 */
export class LineReader {
  readonly #decoder = new StringDecoder("utf8");
  readonly #limits: ClipLimits;
  #clipper: JsonClipper | undefined;
  /** Whether the current line has anything but whitespace. */
  #content = false;

  constructor(limits: ClipLimits) {
    this.#limits = limits;
  }

  /** Feeds bytes; calls `line` with each finished line's message, or the error it is. */
  push(chunk: Buffer, line: (message: JSONRPCMessage | Error) => void): void {
    const text = this.#decoder.write(chunk);
    let at = 0;
    for (;;) {
      const nl = text.indexOf("\n", at);
      const piece = nl < 0 ? text.slice(at) : text.slice(at, nl);
      if (piece.length > 0) {
        this.#clipper ??= new JsonClipper(this.#limits);
        this.#clipper.write(piece);
        if (!this.#content && piece.trim() !== "") this.#content = true;
      }
      if (nl < 0) return;
      at = nl + 1;
      const clipper = this.#clipper;
      const content = this.#content;
      this.#clipper = undefined;
      this.#content = false;
      if (!clipper || !content) continue; // an empty line
      line(this.#finish(clipper));
    }
  }

  #finish(clipper: JsonClipper): JSONRPCMessage | Error {
    const json = clipper.end();
    const value = json === undefined ? undefined : parseClipped(json, clipper.report);
    if (value === undefined) return new Error("the server wrote a line that is not a JSON-RPC message");
    const parsed = JSONRPCMessageSchema.safeParse(value);
    return parsed.success
      ? parsed.data
      : new Error(`the server wrote an invalid JSON-RPC message: ${parsed.error.message.slice(0, 500)}`);
  }
}

export class ProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** Set once the process has exited: its code or signal. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** True once close() was asked for: the exit that follows is not a crash. */
  closing = false;
  #child: ChildProcess | undefined;
  #stderr = "";
  readonly #reader: LineReader;
  readonly #options: StdioOptions;

  constructor(options: StdioOptions) {
    this.#options = options;
    this.#reader = new LineReader(options.clip);
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last few KB the server wrote to stderr. */
  get stderrTail(): string {
    return this.#stderr;
  }

  start(): Promise<void> {
    installExitHook();
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.file, [...this.#options.args], {
        cwd: this.#options.cwd,
        env: this.#options.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
      this.#child = child;
      live.add(child);
      child.once("spawn", () => resolve());
      child.once("error", (err) => {
        live.delete(child);
        reject(err);
        this.onerror?.(err);
      });
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
      });
      child.once("close", () => {
        live.delete(child);
        // Whatever the server left in its group goes with it.
        killGroup(child, "SIGKILL");
        this.onclose?.();
      });
      child.stdin!.on("error", (err) => this.onerror?.(err));
      child.stdout!.on("data", (chunk: Buffer) => {
        this.#reader.push(chunk, (m) => {
          // A line that is not JSON-RPC (a server logging to stdout): reported, skipped.
          if (m instanceof Error) this.onerror?.(m);
          else this.onmessage?.(m);
        });
      });
      child.stderr!.on("data", (chunk: Buffer) => {
        this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new Error("the server's stdin is closed"));
    return new Promise((resolve, reject) => {
      stdin.write(serializeMessage(message), (err) => (err ? reject(err) : resolve()));
    });
  }

  /** Ends stdin (the polite stop), then SIGTERM to the group, then SIGKILL. */
  async close(): Promise<void> {
    this.closing = true;
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise<void>((r) => child.once("close", () => r()));
    const wait = (ms: number) => Promise.race([closed, new Promise((r) => setTimeout(r, ms).unref())]);
    child.stdin?.end();
    await wait(1_000);
    if (child.exitCode === null && child.signalCode === null) {
      killGroup(child, "SIGTERM");
      await wait(1_000);
    }
    if (child.exitCode === null && child.signalCode === null) killGroup(child, "SIGKILL");
  }
}
