// The worker transport: a first-party JavaScript plugin in a worker thread of the kernel
// process, with its own V8 isolate, heap (capped by resourceLimits) and event loop, spoken
// to over a MessagePort (packages/port-rpc) instead of gRPC. Its ready notice stands in for
// the handshake line; a watchdog ends a thread whose event loop stops answering pings or
// whose heap grows past its limit, and the lifecycle reports that as a crash. The launch
// sequence and lifecycle around it are shared with the process transport (launch.ts,
// lifecycle.ts); the kernel's own thread never runs plugin code.
import { join } from "node:path";
import type { ResourceLimits } from "node:worker_threads";
import { type Server, ServerCredentials, status as Status } from "@grpc/grpc-js";
import { type Handshake, isGrpcError, unixTarget } from "@pluggableharness/goplugin";
import { PortEndpoint } from "@pluggableharness/port-rpc";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { launchToken } from "./credentials.ts";
import type { CrashKind } from "./errors.ts";
import { type CallbackServing, type LaunchOptions, LaunchProblem, type Transport } from "./launch.ts";
import type { Connection, LifecycleView, LinkEnd } from "./lifecycle.ts";
import type { LogCapture } from "./log-capture.ts";
import {
  adoptPrelaunchedWorker,
  type PluginThread,
  type SpawnedSpec,
  type StartedWorker,
  startWorker,
  type ThreadSpec,
} from "./prelaunch.ts";

/** What the kernel watches in a worker: its event loop (pings) and its heap. */
export interface WatchdogPolicy {
  /** A loop that answers no ping for this long while calls are in flight is hung. */
  stallTimeoutMs: number;
  /** After the kernel cancelled a call, a loop silent this long is hung (an Esc frees it). */
  cancelGraceMs: number;
  /**
   * Live heap above which the worker is stopped as out of memory, checked from the kernel's
   * side a few times a second. Kept well below V8's own limit (DEFAULT_WORKER_LIMITS): V8
   * ends a worker cleanly only when it reaches its limit by small steps, while one large
   * allocation past the limit aborts the whole process, kernel included.
   */
  heapLimitMb: number;
}

export const DEFAULT_WATCHDOG: WatchdogPolicy = {
  stallTimeoutMs: 10_000,
  cancelGraceMs: 2_000,
  heapLimitMb: 512,
};

/**
 * Per-worker V8 limits. Old generation: 2 GiB, the hard stop behind the watchdog's 512 MiB,
 * with room above it for the largest single allocation V8 makes (a string or array of
 * about 1 GiB) plus what a runaway allocates between two checks. Young generation: 2 MiB,
 * the counterpart of the `--max-semi-space-size=1` flag first-party plugin processes run
 * with: in the scripted task 1, 2, 4 and 8 MiB gave 234, 236, 246 and 257 MB at the peak,
 * 1 MiB visibly slower (see docs/decisions/plugin-runtime.md, "Transports").
 */
export const DEFAULT_WORKER_LIMITS: ResourceLimits = {
  maxOldGenerationSizeMb: 2_048,
  maxYoungGenerationSizeMb: 2,
};

export interface WorkerLaunchOptions extends LaunchOptions {
  /** The plugin's entry module (.js/.mjs/.ts/.mts), as a process would run it. */
  command: string;
  args: readonly string[];
  cwd: string | undefined;
  nodeCompileCache: string | undefined;
  resourceLimits: ResourceLimits;
  watchdog: WatchdogPolicy;
}

const NODE_ENTRY = /\.(?:[mc]?js|[mc]?ts)$/i;

/** Whether `command` can run in a worker thread (a JavaScript or TypeScript module). */
export function runsInWorker(command: string): boolean {
  return NODE_ENTRY.test(command);
}

function bind(server: Server, target: string): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
}

/** One launch of a plugin in a worker thread. */
export class WorkerTransport implements Transport {
  readonly noun: string = "worker";
  readonly #opts: WorkerLaunchOptions;
  #worker: PluginThread | undefined;
  #endpoint: PortEndpoint | undefined;
  #exited: Promise<number> | undefined;
  #exitCode: number | null = null;
  #lastError: Error | undefined;
  #outOfMemory = false;
  #capture: LogCapture | undefined;
  #pid = process.pid;

  constructor(opts: WorkerLaunchOptions) {
    this.#opts = opts;
  }

  environment(): Record<string, never> {
    return {};
  }

  /**
   * Starts the thread somewhere other than the kernel's own process (the hosted transport:
   * a sandbox host process), or undefined to start it here.
   */
  protected thread(
    _spec: SpawnedSpec & { thread?: ThreadSpec },
    _socketDir: string,
  ): StartedWorker | undefined {
    return undefined;
  }

  start(setup: { env: Record<string, string>; socketDir: string; capture: LogCapture }): string {
    const opts = this.#opts;
    const capture = setup.capture;
    if (!runsInWorker(opts.command)) {
      throw new LaunchProblem(
        "spawn_failed",
        `${JSON.stringify(opts.command)} is not a JavaScript module; it cannot run in a worker`,
      );
    }
    const spec: SpawnedSpec = {
      file: opts.command,
      args: [...opts.args],
      cwd: opts.cwd,
      env: setup.env,
      thread: {
        resourceLimits: opts.resourceLimits,
        ...(opts.nodeCompileCache ? { compileCache: opts.nodeCompileCache } : {}),
      },
    };
    const hosted = this.thread(spec, setup.socketDir);
    // A thread bin/agent.mjs started for exactly this launch is taken over (prelaunch.ts).
    const adopted = !hosted && opts.socketDir === undefined ? adoptPrelaunchedWorker(spec) : undefined;
    let started: StartedWorker;
    if (hosted) {
      started = hosted;
    } else if (adopted) {
      started = adopted;
      started.worker.ref();
    } else {
      try {
        started = startWorker({ ...spec, thread: spec.thread! }, `plugin ${opts.name}`);
      } catch (err) {
        throw new LaunchProblem("spawn_failed", `cannot start a worker: ${(err as Error).message}`, err);
      }
    }
    // Only a thread of the kernel's own process can be prelaunched.
    if (!hosted) opts.onSpawn?.(spec);
    const worker = started.worker;
    this.#pid = started.pid ?? process.pid;
    this.#worker = worker;
    this.#capture = capture;
    this.#endpoint = new PortEndpoint(started.port);
    this.#exited = new Promise<number>((resolve) => {
      if (started.exitCode !== undefined) resolve(started.exitCode);
      else worker.once("exit", resolve);
    }).then((code) => {
      this.#exitCode = code;
      return code;
    });
    this.#lastError = started.lastError;
    worker.on("error", (err) => {
      this.#lastError = err;
      if ((err as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY") this.#outOfMemory = true;
      const stack = (err.stack ?? `${err.name}: ${err.message}`).split("\n").slice(0, 6).join("\n");
      capture.note(`uncaught in the worker: ${stack}`, "error", true);
    });
    capture.watch(worker.stdout, "stdout", "info");
    capture.watch(worker.stderr, "stderr", "debug");
    this.#endpoint.onNotify("log", (line) => capture.line("stderr", String(line), "debug"));
    return adopted ? adopted.socketDir : setup.socketDir;
  }

  async handshake(deadline: number): Promise<Handshake> {
    const endpoint = this.#endpoint!;
    type Ready =
      | { kind: "ready"; protocolVersion: number }
      | { kind: "exited"; code: number }
      | { kind: "timeout" };
    const ready = await new Promise<Ready>((resolve) => {
      const timer = setTimeout(() => resolve({ kind: "timeout" }), Math.max(0, deadline - Date.now()));
      endpoint.onNotify("ready", (p) => {
        clearTimeout(timer);
        resolve({
          kind: "ready",
          protocolVersion: Number((p as { protocolVersion?: unknown }).protocolVersion),
        });
      });
      void this.#exited!.then((code) => {
        clearTimeout(timer);
        resolve({ kind: "exited", code });
      });
    });
    if (ready.kind === "timeout") {
      throw new LaunchProblem(
        "timeout",
        `the worker did not report ready within ${this.#opts.launchTimeoutMs} ms`,
      );
    }
    if (ready.kind === "exited") {
      const lastError = this.#lastError;
      const why = lastError ? `: ${lastError.name}: ${lastError.message}` : "";
      throw new LaunchProblem(
        "exited",
        `the worker exited with status ${ready.code} before it was ready${why}`,
        lastError,
      );
    }
    // The port needs no address or certificate; the version is what the gate checks.
    return {
      coreVersion: 1,
      appVersion: ready.protocolVersion,
      network: "unix",
      address: "",
      protocol: "grpc",
      serverCert: "",
    };
  }

  async connect(): Promise<Connection> {
    return new WorkerConnection(
      this.#pid,
      this.#worker!,
      this.#endpoint!,
      this.#exited!,
      this.#opts,
      this.#capture!,
      {
        exitCode: () => this.#exitCode,
        lastError: () => this.#lastError,
        outOfMemory: () => this.#outOfMemory,
      },
    );
  }

  async serveCallbacks(serving: CallbackServing): Promise<void> {
    const endpoint = this.#endpoint!;
    const service = serving.registration.service;
    endpoint.server.addService(serviceDefinition(service), serving.handlers());
    // Bidirectional callback services (FrontendService.Attach) need a real gRPC channel:
    // served on request, on a socket in the plugin's private directory, identity as above.
    // The token that socket requires travels over the port, which only this thread holds.
    let socket: Promise<{ address: string; token: string }> | undefined;
    endpoint.handle("callback-socket", () => {
      socket ??= (async () => {
        const token = launchToken();
        const server = serving.server(token);
        const path = join(serving.socketDir, "kernel");
        await bind(server, unixTarget(path));
        serving.adopt(server);
        return { address: path, token };
      })();
      return socket;
    });
  }

  async abandon(): Promise<void> {
    await this.#worker?.terminate().catch(() => 0);
    this.#endpoint?.close();
  }
}

/** A running worker and its watchdog. */
class WorkerConnection implements Connection {
  readonly pid: number;
  readonly channel;
  readonly exited: Promise<number>;
  readonly #worker: PluginThread;
  readonly #endpoint: PortEndpoint;
  readonly #watchdog: WatchdogPolicy;
  readonly #name: string;
  readonly #capture: LogCapture;
  readonly #state: { exitCode(): number | null; lastError(): Error | undefined; outOfMemory(): boolean };
  #timer: NodeJS.Timeout | undefined;
  #endedAs: CrashKind | undefined;
  #blockedMs = 0;
  #heapUsedMb = 0;
  #pingSentAt: number | undefined;
  /** Cancellations the worker's loop has been seen alive after (a ping sent after them answered). */
  #cancelsAnswered = 0;
  #heapCheckAt = 0;
  #heapChecking = false;

  constructor(
    pid: number,
    worker: PluginThread,
    endpoint: PortEndpoint,
    exited: Promise<number>,
    opts: WorkerLaunchOptions,
    capture: LogCapture,
    state: { exitCode(): number | null; lastError(): Error | undefined; outOfMemory(): boolean },
  ) {
    this.pid = pid;
    this.#worker = worker;
    this.#endpoint = endpoint;
    this.channel = endpoint.channel;
    this.exited = exited;
    this.#watchdog = opts.watchdog;
    this.#name = opts.name;
    this.#capture = capture;
    this.#state = state;
  }

  watch(ended: (end: LinkEnd) => void, view: LifecycleView): void {
    void this.exited.then((code) => {
      const kind = this.#endedAs ?? (this.#state.outOfMemory() ? "out_of_memory" : "exited");
      ended({ kind, code, signal: null, detail: this.#detail(kind) });
    });
    const tick = Math.max(
      10,
      Math.min(250, this.#watchdog.stallTimeoutMs / 4, this.#watchdog.cancelGraceMs / 4),
    );
    this.#timer = setInterval(() => this.#check(view), tick);
    this.#timer.unref();
  }

  mayMeanDeath(err: Error): boolean {
    // Over the port only the worker's death produces UNAVAILABLE.
    return isGrpcError(err) && err.code === Status.UNAVAILABLE;
  }

  drain(): void {}

  kill(): void {
    void this.#worker.terminate();
  }

  async terminate(): Promise<void> {
    await this.#worker.terminate().catch(() => 0);
  }

  exitStatus(): { code: number | null; signal: null } {
    return { code: this.#state.exitCode(), signal: null };
  }

  release(): void {
    clearInterval(this.#timer);
    this.#endpoint.close();
  }

  settling(view: LifecycleView): Promise<void> | undefined {
    if (!this.#cancelPending()) return undefined;
    // Probe now rather than at the next watchdog tick; the watchdog decides within its grace.
    if (this.#pingSentAt === undefined) this.#probe(Date.now());
    return new Promise<void>((resolve) => {
      const done = () => {
        clearInterval(poll);
        resolve();
      };
      const poll = setInterval(() => {
        if (!view.alive() || !this.#cancelPending()) done();
      }, 5);
      void this.exited.then(done);
    });
  }

  #detail(kind: CrashKind): string | undefined {
    if (kind === "unresponsive") return `its event loop was blocked for ${this.#blockedMs} ms`;
    if (kind === "out_of_memory" && this.#heapUsedMb > 0) {
      return `${this.#heapUsedMb} MiB of heap, over its ${this.#watchdog.heapLimitMb} MiB limit`;
    }
    const last = this.#state.lastError();
    return last ? `${last.name}: ${last.message}` : undefined;
  }

  #stop(kind: CrashKind, message: string): void {
    this.#capture.note(message, "error", true);
    this.#endedAs = kind;
    void this.#worker.terminate();
  }

  #check(view: LifecycleView): void {
    if (!view.alive()) return;
    const now = Date.now();
    this.#checkHeap(now, view);
    const cancelPending = this.#cancelPending();
    // Nobody waits on it.
    if (view.inflight() === 0 && !cancelPending && this.#endpoint.pendingCalls === 0) return;
    if (this.#pingSentAt === undefined) {
      this.#probe(now);
      return;
    }
    const silentMs = now - this.#pingSentAt;
    const limit = cancelPending ? this.#watchdog.cancelGraceMs : this.#watchdog.stallTimeoutMs;
    if (silentMs < limit) return;
    this.#blockedMs = silentMs;
    this.#stop(
      "unresponsive",
      `plugin ${JSON.stringify(this.#name)} has not answered for ${silentMs} ms${cancelPending ? " after a cancellation" : ""}; stopping its worker`,
    );
    this.#capture.keep(`[runtime] event loop blocked for ${silentMs} ms; worker stopped`);
  }

  /** Every tick while calls are in flight, once a second otherwise. */
  #checkHeap(now: number, view: LifecycleView): void {
    const busy = view.inflight() > 0 || this.#endpoint.pendingCalls > 0;
    if (this.#heapChecking || (!busy && now - this.#heapCheckAt < 1_000)) return;
    this.#heapChecking = true;
    this.#heapCheckAt = now;
    // Answered on the worker's thread between its JavaScript, so also while it is busy.
    this.#worker.getHeapStatistics().then(
      (stats) => {
        this.#heapChecking = false;
        const usedMb = stats.used_heap_size / (1024 * 1024);
        if (!view.alive() || usedMb <= this.#watchdog.heapLimitMb) return;
        this.#heapUsedMb = Math.round(usedMb);
        this.#stop(
          "out_of_memory",
          `plugin ${JSON.stringify(this.#name)} holds ${Math.round(usedMb)} MiB of heap, over its ${this.#watchdog.heapLimitMb} MiB limit; stopping its worker`,
        );
      },
      () => {
        this.#heapChecking = false;
      },
    );
  }

  #cancelPending(): boolean {
    return this.#endpoint.cancelCount > this.#cancelsAnswered;
  }

  #probe(sent: number): void {
    this.#pingSentAt = sent;
    const cancels = this.#endpoint.cancelCount;
    void this.#endpoint.ping().then(() => {
      if (this.#pingSentAt === sent) this.#pingSentAt = undefined;
      // Frames arrive in order: the loop was alive after every cancellation sent before the ping.
      this.#cancelsAnswered = Math.max(this.#cancelsAnswered, cancels);
    });
  }
}
