// The sandbox host: one bubblewrap-confined Node process that runs several first-party
// plugins, each in a worker thread of its own (own isolate, heap limit and event loop),
// instead of one confined Node process per plugin. The kernel speaks to it over a socket
// pair (v8-serialized messages) and multiplexes one virtual MessagePort per thread onto it, so
// the worker transport's port-rpc endpoint, watchdog and lifecycle work unchanged; the
// hosted transport (hosted-transport.ts) is the only difference.
//
// Hosts are shared by sandbox profile: plugins whose confinement would be identical share a
// host (see hostProfile for what "identical" means). A host lives while it runs a thread:
// when its last thread has ended it is killed, and the next launch starts a new one. If the
// host process dies, every thread it ran is reported as exited, so each plugin is seen as
// crashed and relaunched (in a new host) on its next use. docs/decisions/plugin-launcher.md,
// "The sandbox host"; docs/security/README.md.
import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { rmSync } from "node:fs";
import { type Duplex, PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import type { PortLike } from "@pluggableharness/port-rpc";
import { WORKER_DATA_KEY, WORKER_PROTOCOL } from "@pluggableharness/port-rpc/boot";
import {
  type SpawnedSpec,
  type StartedWorker,
  spawnDetached,
  type ThreadSpec,
  WORKER_BOOTSTRAP,
} from "./prelaunch.ts";
import { killGroup, trackPlugin } from "./process.ts";
import { type PluginSandbox, wrapPlugin } from "./sandbox.ts";
import { encodeMessage, HOST_PROGRAM, MessageReader } from "./sandbox-host-wire.ts";
import { makeSocketDir } from "./socket-dirs.ts";

/** What the host's sandbox is decided by: one host per distinct profile. */
export interface HostProfile {
  readonly box: PluginSandbox;
  /** The host's working directory (each thread gets its own process.cwd()). */
  readonly cwd: string;
  /** Node flags of the host process (heap tuning); no effect on the sandbox. */
  readonly nodeArgs: readonly string[];
}

/**
 * The sandbox the host runs in for a plugin that asked for `box`. A host's threads share
 * one mount namespace, so a read-only plugin gets the write access of its profile's roots
 * (its `writable`) rather than none: the price of sharing one process between the file
 * tools and the search tools. Every other field — kernel-owned paths, network, nesting —
 * is part of the key, so no plugin gets a network, a namespace or a path its own sandbox
 * would not have had. Third-party plugins are never hosted.
 */
export function hostSandbox(box: PluginSandbox): PluginSandbox {
  return {
    bwrap: box.bwrap,
    readOnly: false,
    writable: [...new Set(box.writable)].sort(),
    protectedPaths: [...box.protectedPaths],
    network: box.network,
    nests: box.nests === true,
  };
}

const hosts = new Map<string, SandboxHost>();

function keyOf(box: PluginSandbox): string {
  return JSON.stringify(hostSandbox(box));
}

/** The running host for this profile, or a new one. */
export function sandboxHostFor(profile: HostProfile): SandboxHost {
  const key = keyOf(profile.box);
  let host = hosts.get(key);
  if (!host?.usable) {
    host = new SandboxHost(key, profile);
    hosts.set(key, host);
  }
  return host;
}

/** The pids of every running sandbox host process (tests, diagnostics). */
export function sandboxHostPids(): number[] {
  return [...hosts.values()].filter((h) => h.usable && h.pid !== undefined).map((h) => h.pid!);
}

let nextThread = 1;

/** How long a host gets to end a thread before it is killed as stuck. */
const TERMINATE_GRACE_MS = 2_000;

/** One host process and the threads it runs. */
export class SandboxHost {
  readonly #key: string;
  readonly #child: ChildProcess;
  /** The socket pair on the host's fd 3 (see HOST_PROGRAM). */
  readonly #channel: Duplex;
  readonly #dir: string;
  readonly #threads = new Map<number, RemoteThread>();
  readonly #stderr: string[] = [];
  #dead = false;
  #heapAsks = 0;

  constructor(key: string, profile: HostProfile) {
    this.#key = key;
    // Its private scratch space, the only writable place besides its roots (the TMPDIR of
    // every thread), as a sandboxed plugin process has its socket directory.
    this.#dir = makeSocketDir();
    const box = hostSandbox(profile.box);
    const argv = [...profile.nodeArgs, "-e", HOST_PROGRAM];
    const wrapped = wrapPlugin(box, process.execPath, argv, this.#dir, profile.cwd);
    // Nothing of the kernel's environment: each thread gets its own allowlisted one.
    const env: Record<string, string> = { TMPDIR: this.#dir };
    if (process.env["PATH"]) env["PATH"] = process.env["PATH"];
    const child = spawnDetached({ file: wrapped.file, args: wrapped.args, env, cwd: profile.cwd }, 1);
    trackPlugin(child);
    this.#child = child;
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (d: string) => {
      this.#stderr.push(...d.split("\n").filter((l) => l !== ""));
      this.#stderr.splice(0, Math.max(0, this.#stderr.length - 20));
    });
    child.stdout?.resume();
    this.#channel = child.stdio[3] as Duplex;
    this.#channel.on("error", () => {}); // the exit that follows reports it
    const reader = new MessageReader();
    this.#channel.on("data", (chunk: Buffer) => {
      // What comes from inside the sandbox is checked like any plugin's output: bytes the
      // host program never sends mean something in there misbehaves, and the host goes.
      try {
        reader.push(chunk, (m) => {
          if (!Array.isArray(m) || typeof m[0] !== "string" || typeof m[1] !== "number") {
            throw new Error("not a host message");
          }
          this.#receive(m);
        });
      } catch (err) {
        this.kill(`it sent a malformed message (${(err as Error).message})`);
      }
    });
    // A failed spawn, or a write to a host that has just died (its exit follows).
    child.on("error", (err) => {
      if (child.pid === undefined) this.#end(`cannot run the sandbox host: ${err.message}`);
    });
    child.once("exit", (code, signal) =>
      this.#end(
        `the sandbox host process ${signal ? `was killed by ${signal}` : `exited with status ${code}`}`,
      ),
    );
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Whether new threads may start here. */
  get usable(): boolean {
    return !this.#dead;
  }

  /** The threads running here. */
  get threads(): number {
    return this.#threads.size;
  }

  /** The scratch directory every thread here gets as TMPDIR. */
  get tmpdir(): string {
    return this.#dir;
  }

  /** Starts a plugin thread in this host, as startWorker would in the kernel's process. */
  start(spec: SpawnedSpec & { thread: ThreadSpec }, name: string): StartedWorker {
    const id = nextThread++;
    const thread = new RemoteThread(id, this);
    this.#threads.set(id, thread);
    this.send([
      "start",
      id,
      {
        bootstrap: WORKER_BOOTSTRAP,
        entry: pathToFileURL(spec.file).href,
        key: WORKER_DATA_KEY,
        protocol: WORKER_PROTOCOL,
        name,
        env: { ...spec.env },
        args: [...spec.args],
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        ...(spec.thread.compileCache ? { compileCache: spec.thread.compileCache } : {}),
        resourceLimits: spec.thread.resourceLimits,
      },
    ]);
    return { worker: thread, port: thread.port, ...(this.pid !== undefined ? { pid: this.pid } : {}) };
  }

  /** @internal */
  send(message: unknown[]): void {
    if (this.#dead || this.#channel.destroyed) return;
    // A failed write (EPIPE as the host dies) is the channel's 'error'; the exit reports it.
    this.#channel.write(encodeMessage(message));
  }

  /** Ends the host process and with it every thread (each reported with `why`). */
  kill(why: string): void {
    this.#end(`the sandbox host was stopped: ${why}`);
  }

  /** @internal */
  heap(id: number): Promise<{ used_heap_size: number }> {
    const n = ++this.#heapAsks;
    return new Promise((resolve, reject) => {
      const t = this.#threads.get(id);
      if (!t) return reject(new Error("the thread has ended"));
      t.heapAsks.set(n, { resolve, reject });
      this.send(["heap", id, n]);
    });
  }

  #receive(m: unknown[]): void {
    const thread = this.#threads.get(m[1] as number);
    if (!thread) return;
    switch (m[0]) {
      case "frame":
        thread.port.deliver(m[2]);
        break;
      case "out":
        if (!(m[3] instanceof Uint8Array)) throw new Error("output that is not bytes");
        (m[2] === 1 ? thread.stdout : thread.stderr).write(m[3]);
        break;
      case "error": {
        const info = m[2] as { name?: string; message?: string; stack?: string; code?: string };
        const err = new Error(info.message ?? "unknown error");
        err.name = info.name ?? "Error";
        if (info.stack) err.stack = info.stack;
        if (info.code) (err as NodeJS.ErrnoException).code = info.code;
        thread.emit("error", err);
        break;
      }
      case "heap":
        thread.answerHeap(m[2] as number, m[3] as { used_heap_size: number } | null);
        break;
      case "exit":
        this.#threads.delete(thread.id);
        thread.exit(typeof m[2] === "number" ? m[2] : 1);
        this.#retireIfIdle();
        break;
    }
  }

  /** A host whose last thread has ended is stopped; the next launch starts another. */
  #retireIfIdle(): void {
    if (this.#threads.size > 0 || this.#dead) return;
    this.#dead = true;
    if (hosts.get(this.#key) === this) hosts.delete(this.#key);
    killGroup(this.#child, "SIGKILL");
  }

  /** The host process is gone: every thread it ran has ended with it. */
  #end(why: string): void {
    if (hosts.get(this.#key) === this) hosts.delete(this.#key);
    const wasDead = this.#dead;
    this.#dead = true;
    killGroup(this.#child, "SIGKILL");
    // Whatever is left of it inside the sandbox sees the channel close, and exits.
    this.#channel.destroy();
    rmSync(this.#dir, { recursive: true, force: true });
    const threads = [...this.#threads.values()];
    this.#threads.clear();
    if (threads.length === 0) return;
    const tail = this.#stderr.length > 0 ? `: ${this.#stderr.slice(-3).join(" | ")}` : "";
    for (const t of threads) {
      if (!wasDead) t.emit("error", new Error(`${why}${tail}`));
      t.exit(1);
    }
  }
}

/** A plugin thread of a host, as the worker transport sees a node:worker_threads Worker. */
class RemoteThread extends EventEmitter {
  readonly id: number;
  readonly port: RemotePort;
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly heapAsks = new Map<
    number,
    { resolve: (s: { used_heap_size: number }) => void; reject: (e: Error) => void }
  >();
  readonly #host: SandboxHost;
  #exitCode: number | undefined;
  readonly #exited: Promise<number>;
  #resolveExit!: (code: number) => void;

  constructor(id: number, host: SandboxHost) {
    super();
    this.id = id;
    this.#host = host;
    this.port = new RemotePort(id, host);
    this.#exited = new Promise((r) => {
      this.#resolveExit = r;
    });
    // Errors nobody listens to are kept by the transport, never thrown.
    this.on("error", () => {});
  }

  // The host process is referenced (or not) as a whole; a thread has nothing to ref.
  ref(): void {}
  unref(): void {}

  terminate(): Promise<number> {
    if (this.#exitCode === undefined) {
      this.#host.send(["terminate", this.id]);
      // Node ends even a busy thread at once; a host that has not within the grace is
      // itself stuck, and goes (taking its other threads, which then relaunch).
      setTimeout(() => {
        if (this.#exitCode === undefined) this.#host.kill("it did not end a thread within 2 s");
      }, TERMINATE_GRACE_MS).unref();
    }
    return this.#exited;
  }

  getHeapStatistics(): Promise<{ used_heap_size: number }> {
    return this.#host.heap(this.id);
  }

  answerHeap(n: number, stats: { used_heap_size: number } | null): void {
    const ask = this.heapAsks.get(n);
    this.heapAsks.delete(n);
    if (!ask) return;
    if (stats) ask.resolve(stats);
    else ask.reject(new Error("the thread has ended"));
  }

  exit(code: number): void {
    if (this.#exitCode !== undefined) return;
    this.#exitCode = code;
    for (const ask of this.heapAsks.values()) ask.reject(new Error("the thread has ended"));
    this.heapAsks.clear();
    this.stdout.end();
    this.stderr.end();
    this.port.closed();
    this.emit("exit", code);
    this.#resolveExit(code);
  }
}

/** The kernel's end of a thread's port, carried over the host's channel. */
class RemotePort extends EventEmitter implements PortLike {
  readonly #id: number;
  readonly #host: SandboxHost;
  #open = true;

  constructor(id: number, host: SandboxHost) {
    super();
    this.#id = id;
    this.#host = host;
  }

  // Transferred buffers are copied by the serialization; nothing to detach.
  postMessage(value: unknown): void {
    if (this.#open) this.#host.send(["frame", this.#id, value]);
  }

  deliver(value: unknown): void {
    if (this.#open) this.emit("message", value);
  }

  close(): void {
    this.closed();
  }

  closed(): void {
    if (!this.#open) return;
    this.#open = false;
    this.emit("close");
  }

  unref(): void {}
}
