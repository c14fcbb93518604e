// WorkerPluginHost: a trusted first-party JavaScript plugin in a worker thread of the
// kernel process, supervised exactly like a subprocess plugin (PluginHost: launch on first
// use, typed clients, crash reports, relaunch with backoff, onLaunch before any other call).
// Only the transport differs: a thread with its own isolate and heap limit, spoken to over a
// MessagePort, and a watchdog that ends a thread whose event loop stops answering.
import type { ResourceLimits } from "node:worker_threads";
import { PluginHost, type PluginHostOptions } from "./host.ts";
import { HostedTransport } from "./hosted-transport.ts";
import type { LaunchOptions, Transport } from "./launch.ts";
import type { PluginIsolation } from "./transport.ts";
import {
  DEFAULT_WATCHDOG,
  DEFAULT_WORKER_LIMITS,
  runsInWorker,
  type WatchdogPolicy,
  type WorkerLaunchOptions,
  WorkerTransport,
} from "./worker-transport.ts";

export interface WorkerPluginHostOptions extends Omit<PluginHostOptions, "nodeArgs" | "autoMTLS"> {
  /** V8 heap limits of the thread (defaults: DEFAULT_WORKER_LIMITS). */
  resourceLimits?: ResourceLimits;
  /** When a silent event loop counts as hung (defaults: DEFAULT_WATCHDOG). */
  watchdog?: Partial<WatchdogPolicy>;
}

/** A thread runs only a JavaScript or TypeScript module; anything else fails at construction. */
function requireModule(opts: WorkerPluginHostOptions, where: string): void {
  if (!runsInWorker(opts.command)) {
    throw new TypeError(
      `plugin ${JSON.stringify(opts.name)}: ${JSON.stringify(opts.command)} is not a JavaScript module and cannot run in ${where}`,
    );
  }
}

/** What a plugin thread launches with, in the kernel or in a sandbox host: defaults filled in. */
function threadLaunch(
  o: WorkerPluginHostOptions,
  common: LaunchOptions,
  nodeCompileCache: string | undefined,
): WorkerLaunchOptions {
  return {
    ...common,
    command: o.command,
    args: o.args ?? [],
    cwd: o.cwd,
    nodeCompileCache,
    resourceLimits: { ...DEFAULT_WORKER_LIMITS, ...o.resourceLimits },
    watchdog: { ...DEFAULT_WATCHDOG, ...o.watchdog },
  };
}

export class WorkerPluginHost extends PluginHost {
  override readonly isolation: PluginIsolation = "worker";
  readonly #opts: WorkerPluginHostOptions;

  constructor(opts: WorkerPluginHostOptions) {
    requireModule(opts, "a worker thread");
    super(opts);
    this.#opts = opts;
  }

  protected override transport(common: LaunchOptions): Transport {
    return new WorkerTransport(threadLaunch(this.#opts, common, this.compileCache()));
  }
}

/**
 * A first-party plugin the sandbox confines, as a worker thread of the sandbox host process
 * for its profile (hosted-transport.ts); the host's Node runs with `nodeArgs`.
 */
export class HostedPluginHost extends PluginHost {
  override readonly isolation: PluginIsolation = "hosted";
  readonly #opts: WorkerPluginHostOptions & Pick<PluginHostOptions, "nodeArgs">;

  constructor(opts: WorkerPluginHostOptions & Pick<PluginHostOptions, "nodeArgs">) {
    requireModule(opts, "a sandbox host");
    super(opts);
    this.#opts = opts;
  }

  protected override transport(common: LaunchOptions): Transport {
    const o = this.#opts;
    return new HostedTransport({
      ...threadLaunch(o, common, this.compileCache()),
      sandbox: o.sandbox ?? (() => undefined),
      nodeArgs: o.nodeArgs ?? [],
    });
  }
}

/**
 * The host for `isolation`: a subprocess (PluginHost), a worker thread of the kernel
 * (WorkerPluginHost) or one of a sandbox host (HostedPluginHost).
 */
export function createPluginHost(
  isolation: PluginIsolation,
  options: PluginHostOptions & Omit<WorkerPluginHostOptions, keyof PluginHostOptions>,
): PluginHost {
  if (isolation === "hosted") {
    const { autoMTLS: _a, ...rest } = options;
    return new HostedPluginHost(rest);
  }
  if (isolation === "worker") {
    const { nodeArgs: _n, autoMTLS: _a, ...rest } = options;
    return new WorkerPluginHost(rest);
  }
  const { resourceLimits: _r, watchdog: _w, ...rest } = options;
  return new PluginHost(rest);
}
