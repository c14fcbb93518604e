// One first-party JavaScript plugin running in a worker thread of the kernel process: its
// own V8 isolate, heap (capped by resourceLimits) and event loop, spoken to over a
// MessagePort (packages/port-rpc) instead of gRPC. The launch mirrors a subprocess launch:
// allowlisted environment, ready signal and version gate, health check, kernel callbacks,
// category discovery. A worker that throws, runs out of heap or stops answering pings is
// ended and reported as crashed; the kernel's own thread never runs plugin code.
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { ResourceLimits, Worker } from "node:worker_threads";
import { Server, ServerCredentials, status as Status } from "@grpc/grpc-js";
import {
  assertSocketPath,
  createClient,
  type HandlerContext,
  type Handshake,
  HEALTH_SERVICE_NAME,
  implement,
  isGrpcError,
  type Lease,
  LineSplitter,
  type MagicCookie,
  parseLogLine,
  requireToken,
  SERVER_OPTIONS,
  SOCKET_SUFFIX_LENGTH,
  unixTarget,
} from "@pluggableharness/goplugin";
import { PortEndpoint } from "@pluggableharness/port-rpc";
import type { ProducerRef } from "@pluggableharness/protocol/common";
import { GRPCController } from "@pluggableharness/protocol/goplugin";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { Health, HealthCheckResponse_ServingStatus } from "@pluggableharness/protocol/health";
import { launchToken } from "./credentials.ts";
import { buildEnvironment, type EnvironmentSpec } from "./env.ts";
import {
  type CrashKind,
  type LaunchFailure,
  PluginCrashedError,
  PluginLaunchError,
  PluginStoppedError,
} from "./errors.ts";
import {
  type CallbackContext,
  type CallbackPeer,
  type CallbackRegistration,
  type CategoryProbe,
  discover,
  type PluginDescription,
  type PluginLogRecord,
} from "./instance.ts";
import { adoptPrelaunchedWorker, type SpawnedSpec, type StartedWorker, startWorker } from "./prelaunch.ts";
import { longestSocketDir, makeSocketDir, socketBase } from "./socket-dirs.ts";
import type { LaunchedPlugin } from "./transport.ts";

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

export interface WorkerInstanceOptions {
  name: string;
  /** The plugin's entry module (.js/.mjs/.ts/.mts), as a process would run it. */
  command: string;
  args: readonly string[];
  cwd: string | undefined;
  env: EnvironmentSpec;
  cookie: MagicCookie;
  versions: readonly number[];
  launchTimeoutMs: number;
  healthTimeoutMs: number;
  socketDir: string | undefined;
  logSink: ((record: PluginLogRecord) => void) | undefined;
  callbacks: CallbackRegistration | undefined;
  categories: readonly CategoryProbe[];
  nodeCompileCache: string | undefined;
  resourceLimits: ResourceLimits;
  watchdog: WatchdogPolicy;
  /** Told what was started (or adopted from a prelaunch) for this launch. */
  onSpawn?: (spec: SpawnedSpec) => void;
}

const STDERR_TAIL_LINES = 20;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

type Death = PluginCrashedError | PluginStoppedError;

export class WorkerInstance implements LaunchedPlugin {
  readonly name: string;
  readonly id: number;
  readonly pid = process.pid;
  readonly threadId: number;
  readonly startedAt = Date.now();
  readonly handshake: Handshake;
  description: PluginDescription = { categories: [], producers: {} };
  readonly died: Promise<Death>;
  readonly producers = new Map<string, ProducerRef>();
  /** @internal */
  readonly endpoint: PortEndpoint;

  private state: "running" | "stopping" | "dead" = "running";
  private deathError: Death | undefined;
  private resolveDied!: (d: Death) => void;
  private readonly inflight = new Set<(reason: Error) => void>();
  private readonly worker: Worker;
  private readonly exited: Promise<number>;
  private readonly tail: string[];
  private readonly socketDir: string;
  private readonly watchdog: WatchdogPolicy;
  private readonly log: (level: "error" | "warn", message: string) => void;
  private readonly timer: NodeJS.Timeout;
  private callbackServer: Server | undefined;
  private lastError: Error | undefined;
  private endedAs: CrashKind | undefined;
  private blockedMs = 0;
  private heapUsedMb = 0;
  private pingSentAt: number | undefined;
  /** Cancellations the worker's loop has been seen alive after (a ping sent after them answered). */
  private cancelsAnswered = 0;
  private heapCheckAt = 0;
  private heapChecking = false;

  constructor(init: {
    name: string;
    id: number;
    worker: Worker;
    endpoint: PortEndpoint;
    exited: Promise<number>;
    protocolVersion: number;
    tail: string[];
    socketDir: string;
    watchdog: WatchdogPolicy;
    lastError: () => Error | undefined;
    log: (level: "error" | "warn", message: string) => void;
  }) {
    this.name = init.name;
    this.id = init.id;
    this.worker = init.worker;
    this.threadId = init.worker.threadId;
    this.endpoint = init.endpoint;
    this.exited = init.exited;
    this.tail = init.tail;
    this.socketDir = init.socketDir;
    this.watchdog = init.watchdog;
    this.log = init.log;
    this.handshake = {
      coreVersion: 1,
      appVersion: init.protocolVersion,
      network: "unix",
      address: "",
      protocol: "grpc",
      serverCert: "",
    };
    this.died = new Promise((r) => {
      this.resolveDied = r;
    });
    this.worker.on("error", (err) => {
      this.lastError = err;
      if ((err as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY")
        this.endedAs ??= "out_of_memory";
    });
    this.lastError = init.lastError();
    void this.exited.then((code) => this.die(this.endedAs ?? "exited", code));
    const tick = Math.max(
      10,
      Math.min(250, this.watchdog.stallTimeoutMs / 4, this.watchdog.cancelGraceMs / 4),
    );
    this.timer = setInterval(() => this.check(), tick);
    this.timer.unref();
  }

  get alive(): boolean {
    return this.state === "running";
  }

  /** @internal */
  setCallbackServer(server: Server): void {
    this.callbackServer = server;
  }

  lease(): Lease {
    return {
      client: this.endpoint.channel,
      track: (abort) => {
        if (this.deathError) {
          abort(this.deathError);
          return () => {};
        }
        this.inflight.add(abort);
        return () => this.inflight.delete(abort);
      },
      mapError: (err) => this.classify(err),
    };
  }

  async classify(err: Error): Promise<Error> {
    if (this.deathError) return this.deathError;
    // Over the port only the worker's death produces UNAVAILABLE; wait to say which death.
    if (isGrpcError(err) && err.code === Status.UNAVAILABLE) {
      const death = await Promise.race([this.died, sleep(500).then(() => undefined)]);
      return death ?? err;
    }
    return err;
  }

  settling(): Promise<void> | undefined {
    if (this.state !== "running" || !this.cancelPending()) return undefined;
    // Probe now rather than at the next watchdog tick; the watchdog decides within its grace.
    if (this.pingSentAt === undefined) this.probe(Date.now());
    return new Promise<void>((resolve) => {
      const done = () => {
        clearInterval(poll);
        resolve();
      };
      const poll = setInterval(() => {
        if (this.state !== "running" || !this.cancelPending()) done();
      }, 5);
      void this.died.then(done);
    });
  }

  /** Ends the thread now; in-flight calls fail as crashed. */
  kill(): void {
    void this.worker.terminate();
  }

  /** Shutdown over the port, up to `graceMs` for the thread to end, then terminate. */
  async shutdown(graceMs: number): Promise<void> {
    if (this.state === "running") {
      this.state = "stopping";
      const stopped = new PluginStoppedError(this.name);
      for (const abort of this.inflight) abort(stopped);
      this.inflight.clear();
      const deadline = Date.now() + graceMs;
      const controller = createClient(GRPCController, this.endpoint.channel);
      await Promise.race([controller.shutdown({}, { timeoutMs: graceMs }).catch(() => {}), this.exited]);
      await Promise.race([this.exited, sleep(Math.max(0, deadline - Date.now()))]);
    }
    await this.worker.terminate().catch(() => 0);
    const code = await Promise.race([this.exited, sleep(5_000).then(() => null)]);
    this.die("exited", code);
  }

  private check(): void {
    if (this.state !== "running") return;
    const now = Date.now();
    this.checkHeap(now);
    const cancelPending = this.cancelPending();
    if (this.inflight.size === 0 && !cancelPending && this.endpoint.pendingCalls === 0) return; // nobody waits on it
    if (this.pingSentAt === undefined) {
      this.probe(now);
      return;
    }
    const silentMs = now - this.pingSentAt;
    const limit = cancelPending ? this.watchdog.cancelGraceMs : this.watchdog.stallTimeoutMs;
    if (silentMs < limit) return;
    this.log(
      "error",
      `plugin ${JSON.stringify(this.name)} has not answered for ${silentMs} ms${cancelPending ? " after a cancellation" : ""}; stopping its worker`,
    );
    this.endedAs = "unresponsive";
    this.blockedMs = silentMs;
    this.tail.push(`[runtime] event loop blocked for ${silentMs} ms; worker stopped`);
    void this.worker.terminate();
  }

  /** Every tick while calls are in flight, once a second otherwise. */
  private checkHeap(now: number): void {
    const busy = this.inflight.size > 0 || this.endpoint.pendingCalls > 0;
    if (this.heapChecking || (!busy && now - this.heapCheckAt < 1_000)) return;
    this.heapChecking = true;
    this.heapCheckAt = now;
    // Answered on the worker's thread between its JavaScript, so also while it is busy.
    this.worker.getHeapStatistics().then(
      (stats) => {
        this.heapChecking = false;
        const usedMb = stats.used_heap_size / (1024 * 1024);
        if (this.state !== "running" || usedMb <= this.watchdog.heapLimitMb) return;
        this.log(
          "error",
          `plugin ${JSON.stringify(this.name)} holds ${Math.round(usedMb)} MiB of heap, over its ${this.watchdog.heapLimitMb} MiB limit; stopping its worker`,
        );
        this.endedAs = "out_of_memory";
        this.heapUsedMb = Math.round(usedMb);
        void this.worker.terminate();
      },
      () => {
        this.heapChecking = false;
      },
    );
  }

  private cancelPending(): boolean {
    return this.endpoint.cancelCount > this.cancelsAnswered;
  }

  private probe(sent: number): void {
    this.pingSentAt = sent;
    const cancels = this.endpoint.cancelCount;
    void this.endpoint.ping().then(() => {
      if (this.pingSentAt === sent) this.pingSentAt = undefined;
      // Frames arrive in order: the loop was alive after every cancellation sent before the ping.
      this.cancelsAnswered = Math.max(this.cancelsAnswered, cancels);
    });
  }

  private die(kind: CrashKind, code: number | null): void {
    if (this.state === "dead") return;
    clearInterval(this.timer);
    const detail =
      kind === "unresponsive"
        ? `its event loop was blocked for ${this.blockedMs} ms`
        : kind === "out_of_memory" && this.heapUsedMb > 0
          ? `${this.heapUsedMb} MiB of heap, over its ${this.watchdog.heapLimitMb} MiB limit`
          : this.lastError
            ? `${this.lastError.name}: ${this.lastError.message}`
            : undefined;
    const err: Death =
      this.state === "stopping"
        ? new PluginStoppedError(this.name)
        : new PluginCrashedError(this.name, kind, code, null, [...this.tail], detail);
    this.state = "dead";
    this.deathError = err;
    for (const abort of this.inflight) abort(err);
    this.inflight.clear();
    this.endpoint.close();
    this.callbackServer?.forceShutdown();
    rmSync(this.socketDir, { recursive: true, force: true });
    this.resolveDied(err);
  }
}

function bind(server: Server, target: string): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
}

const NODE_ENTRY = /\.(?:[mc]?js|[mc]?ts)$/i;

/** Whether `command` can run in a worker thread (a JavaScript or TypeScript module). */
export function runsInWorker(command: string): boolean {
  return NODE_ENTRY.test(command);
}

/** Starts the thread and runs the launch sequence; on failure nothing is left running. */
export async function launchWorker(opts: WorkerInstanceOptions, id: number): Promise<WorkerInstance> {
  const deadline = Date.now() + opts.launchTimeoutMs;
  const fail = (reason: LaunchFailure, message: string, tail: readonly string[] = [], cause?: unknown) =>
    new PluginLaunchError(opts.name, reason, message, tail, cause);
  if (!runsInWorker(opts.command)) {
    throw fail(
      "spawn_failed",
      `${JSON.stringify(opts.command)} is not a JavaScript module; it cannot run in a worker`,
    );
  }
  const base = opts.socketDir ?? socketBase();
  try {
    assertSocketPath(join(longestSocketDir(base), `kernel${"x".repeat(SOCKET_SUFFIX_LENGTH)}`));
  } catch (err) {
    throw fail("socket_path_too_long", (err as Error).message, [], err);
  }
  // Private, like a process plugin's: the callback socket a worker may ask for lives here.
  let socketDir = makeSocketDir(base);
  const cleanupDir = () => rmSync(socketDir, { recursive: true, force: true });
  let env: Record<string, string>;
  try {
    env = buildEnvironment(opts.env, { cookie: opts.cookie, versions: opts.versions, socketDir });
  } catch (err) {
    cleanupDir();
    throw fail("spawn_failed", (err as Error).message, [], err);
  }

  const tail: string[] = [];
  const sink = (source: PluginLogRecord["source"], line: string, level: "debug" | "info" | "error") => {
    if (source === "stderr" || source === "runtime") {
      tail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
    }
    if (!opts.logSink) return;
    try {
      const parsed =
        source === "runtime"
          ? { level, message: line, fields: {}, time: new Date(), structured: false, logger: "runtime" }
          : parseLogLine(line, level === "error" ? "debug" : level);
      opts.logSink({ ...parsed, plugin: opts.name, instance: id, source });
    } catch {
      // a failing sink must not take the plugin down
    }
  };

  const spec: SpawnedSpec = {
    file: opts.command,
    args: [...opts.args],
    cwd: opts.cwd,
    env,
    thread: {
      resourceLimits: opts.resourceLimits,
      ...(opts.nodeCompileCache ? { compileCache: opts.nodeCompileCache } : {}),
    },
  };
  // A thread bin/agent.mjs started for exactly this launch is taken over (prelaunch.ts).
  const adopted = opts.socketDir === undefined ? adoptPrelaunchedWorker(spec) : undefined;
  let started: StartedWorker;
  if (adopted) {
    cleanupDir();
    socketDir = adopted.socketDir;
    started = adopted;
    started.worker.ref();
  } else {
    try {
      started = startWorker({ ...spec, thread: spec.thread! }, `plugin ${opts.name}`);
    } catch (err) {
      cleanupDir();
      throw fail("spawn_failed", `cannot start a worker: ${(err as Error).message}`, [], err);
    }
  }
  opts.onSpawn?.(spec);
  const worker = started.worker;
  const endpoint = new PortEndpoint(started.port);
  const exited = new Promise<number>((resolve) => {
    if (started.exitCode !== undefined) resolve(started.exitCode);
    else worker.once("exit", resolve);
  });
  let lastError: Error | undefined = started.lastError;
  worker.on("error", (err) => {
    lastError = err;
    const stack = (err.stack ?? `${err.name}: ${err.message}`).split("\n").slice(0, 6).join("\n");
    sink("runtime", `uncaught in the worker: ${stack}`, "error");
  });
  const stdoutLines = new LineSplitter((l) => sink("stdout", l, "info"));
  const stderrLines = new LineSplitter((l) => sink("stderr", l, "debug"));
  worker.stdout.on("data", (c: Buffer) => stdoutLines.push(c));
  worker.stdout.on("end", () => stdoutLines.flush());
  worker.stderr.on("data", (c: Buffer) => stderrLines.push(c));
  worker.stderr.on("end", () => stderrLines.flush());
  endpoint.onNotify("log", (line) => sink("stderr", String(line), "debug"));

  const abandon = async () => {
    await worker.terminate().catch(() => 0);
    endpoint.close();
    cleanupDir();
  };

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
    void exited.then((code) => {
      clearTimeout(timer);
      resolve({ kind: "exited", code });
    });
  });
  if (ready.kind !== "ready") {
    await abandon();
    if (ready.kind === "timeout") {
      throw fail("timeout", `the worker did not report ready within ${opts.launchTimeoutMs} ms`, tail);
    }
    const why = lastError ? `: ${lastError.name}: ${lastError.message}` : "";
    throw fail(
      "exited",
      `the worker exited with status ${ready.code} before it was ready${why}`,
      tail,
      lastError,
    );
  }
  if (!opts.versions.includes(ready.protocolVersion)) {
    await abandon();
    throw fail(
      "version_mismatch",
      `the plugin speaks protocol version ${ready.protocolVersion}; this kernel speaks ${opts.versions.join(", ")}`,
      tail,
    );
  }

  const instance = new WorkerInstance({
    name: opts.name,
    id,
    worker,
    endpoint,
    exited,
    protocolVersion: ready.protocolVersion,
    tail,
    socketDir,
    watchdog: opts.watchdog,
    lastError: () => lastError,
    log: (level, message) => sink("runtime", message, level === "warn" ? "info" : "error"),
  });
  const launchFailed = async (reason: LaunchFailure, message: string, cause?: unknown) => {
    instance.kill();
    await Promise.race([instance.died, sleep(1_000)]);
    return fail(reason, message, tail, cause);
  };

  try {
    const timeoutMs = Math.max(1, Math.min(opts.healthTimeoutMs, deadline - Date.now()));
    const res = await createClient(Health, endpoint.channel).check(
      { service: HEALTH_SERVICE_NAME },
      { timeoutMs },
    );
    if (res.status !== HealthCheckResponse_ServingStatus.SERVING) {
      throw new Error(`health status is ${HealthCheckResponse_ServingStatus[res.status] ?? res.status}`);
    }
  } catch (err) {
    if (!instance.alive) throw await launchFailed("exited", "the worker exited during the health check", err);
    throw await launchFailed(
      "unhealthy",
      `health check for service "plugin" failed: ${(err as Error).message}`,
      err,
    );
  }

  if (opts.callbacks) {
    const cb = opts.callbacks;
    const peer: CallbackPeer = {
      plugin: opts.name,
      instance: id,
      pid: instance.pid,
      producers: instance.producers,
    };
    const context = (base: HandlerContext): CallbackContext => ({ ...base, peer });
    endpoint.server.addService(
      serviceDefinition(cb.service),
      implement(cb.service, cb.implementation(peer), { context }),
    );
    // Bidirectional callback services (FrontendService.Attach) need a real gRPC channel:
    // served on request, on a socket in the plugin's private directory, identity as above.
    // The token that socket requires travels over the port, which only this thread holds.
    let socket: Promise<{ address: string; token: string }> | undefined;
    endpoint.handle("callback-socket", () => {
      socket ??= (async () => {
        const token = launchToken();
        const server = new Server({
          ...SERVER_OPTIONS,
          interceptors: [requireToken(token, `only plugin "${opts.name}" may call this socket`)],
        });
        server.addService(
          serviceDefinition(cb.service),
          implement(cb.service, cb.implementation(peer), { context }),
        );
        for (const extra of cb.extraServices?.(peer) ?? []) {
          server.addService(serviceDefinition(extra.service), extra.handlers);
        }
        const path = join(socketDir, "kernel");
        await bind(server, unixTarget(path));
        instance.setCallbackServer(server);
        return { address: path, token };
      })();
      return socket;
    });
  }

  try {
    instance.description = await discover(
      endpoint.channel,
      opts.categories,
      Math.max(1, deadline - Date.now()),
    );
    for (const [k, v] of Object.entries(instance.description.producers)) instance.producers.set(k, v);
  } catch (err) {
    throw await launchFailed("describe_failed", (err as Error).message, err);
  }
  return instance;
}
