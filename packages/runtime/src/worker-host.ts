// WorkerPluginHost: a trusted first-party JavaScript plugin in a worker thread of the
// kernel process, supervised exactly like a subprocess plugin (PluginHost: launch on first
// use, typed clients, crash reports, relaunch with backoff, onLaunch before any other call).
// Only the launch differs: a thread with its own isolate and heap limit, spoken to over a
// MessagePort, and a watchdog that ends a thread whose event loop stops answering.
import type { ResourceLimits } from "node:worker_threads";
import { APP_PROTOCOL_VERSIONS, PLUGGABLEHARNESS_COOKIE } from "@pluggableharness/goplugin";
import { CATEGORY_PROBES } from "./categories.ts";
import { defaultCompileCache, PluginHost, type PluginHostOptions } from "./host.ts";
import type { SpawnedSpec } from "./prelaunch.ts";
import type { LaunchedPlugin, PluginIsolation } from "./transport.ts";
import {
  DEFAULT_WATCHDOG,
  DEFAULT_WORKER_LIMITS,
  launchWorker,
  runsInWorker,
  type WatchdogPolicy,
} from "./worker-instance.ts";

export interface WorkerPluginHostOptions extends Omit<PluginHostOptions, "nodeArgs" | "autoMTLS"> {
  /** V8 heap limits of the thread (defaults: DEFAULT_WORKER_LIMITS). */
  resourceLimits?: ResourceLimits;
  /** When a silent event loop counts as hung (defaults: DEFAULT_WATCHDOG). */
  watchdog?: Partial<WatchdogPolicy>;
}

export class WorkerPluginHost extends PluginHost {
  override readonly isolation: PluginIsolation = "worker";
  readonly #opts: WorkerPluginHostOptions;
  #spawned: SpawnedSpec | undefined;

  constructor(opts: WorkerPluginHostOptions) {
    if (!runsInWorker(opts.command)) {
      throw new TypeError(
        `plugin ${JSON.stringify(opts.name)}: ${JSON.stringify(opts.command)} is not a JavaScript module and cannot run in a worker thread`,
      );
    }
    super(opts);
    this.#opts = opts;
  }

  /** What the latest launch started (a thread spec: what a prelaunch plan records). */
  override get lastSpawn(): SpawnedSpec | undefined {
    return this.#spawned;
  }

  protected override launchOne(id: number): Promise<LaunchedPlugin> {
    const o = this.#opts;
    return launchWorker(
      {
        name: this.name,
        command: o.command,
        args: o.args ?? [],
        cwd: o.cwd,
        env: o.env ?? {},
        cookie: o.cookie ?? PLUGGABLEHARNESS_COOKIE,
        versions: o.protocolVersions ?? APP_PROTOCOL_VERSIONS,
        launchTimeoutMs: o.launchTimeoutMs ?? 30_000,
        healthTimeoutMs: o.healthTimeoutMs ?? 5_000,
        socketDir: o.socketDir,
        logSink: o.logSink,
        callbacks: o.callbacks,
        categories: o.categories ?? CATEGORY_PROBES,
        nodeCompileCache:
          o.nodeCompileCache === false ? undefined : (o.nodeCompileCache ?? defaultCompileCache()),
        resourceLimits: { ...DEFAULT_WORKER_LIMITS, ...o.resourceLimits },
        watchdog: { ...DEFAULT_WATCHDOG, ...o.watchdog },
        onSpawn: (spec) => {
          this.#spawned = spec;
        },
      },
      id,
    );
  }
}

/** The host for `isolation`: a subprocess (PluginHost) or a worker thread (WorkerPluginHost). */
export function createPluginHost(
  isolation: PluginIsolation,
  options: PluginHostOptions & Omit<WorkerPluginHostOptions, keyof PluginHostOptions>,
): PluginHost {
  if (isolation === "worker") {
    const { nodeArgs: _n, autoMTLS: _a, ...rest } = options;
    return new WorkerPluginHost(rest);
  }
  const { resourceLimits: _r, watchdog: _w, ...rest } = options;
  return new PluginHost(rest);
}
