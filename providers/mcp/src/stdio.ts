// The stdio transport to a local server, written here rather than taken from the SDK so
// the bridge decides exactly how the process starts: the environment it is given (no
// defaults merged in), the sandbox wrapping it, its own process group (the whole tree is
// stopped together) and what is kept of its stderr (a bounded tail, for error messages).
import { type ChildProcess, spawn } from "node:child_process";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

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
  readonly #buffer = new ReadBuffer();
  readonly #options: StdioOptions;

  constructor(options: StdioOptions) {
    this.#options = options;
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
        this.#buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#buffer.readMessage();
          } catch (err) {
            // A line that is not JSON-RPC (a server logging to stdout): reported, skipped.
            this.onerror?.(err as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
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
