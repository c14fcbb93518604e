// The hosted transport: a first-party plugin the sandbox confines, run as a worker thread of
// a sandbox host process (sandbox-host.ts) instead of a confined process of its own. Apart
// from where the thread starts, it is the worker transport: the same port-rpc endpoint,
// ready notice, watchdog (pings, heap checks) and lifecycle; its pid is the host's. When
// the sandbox turns out not to apply (settings.sandbox = "off", or bubblewrap cannot run
// under "best_effort") the thread starts in the kernel's process, as a worker would.
import { LaunchProblem } from "./launch.ts";
import type { SpawnedSpec, StartedWorker, ThreadSpec } from "./prelaunch.ts";
import type { PluginSandbox } from "./sandbox.ts";
import { sandboxHostFor } from "./sandbox-host.ts";
import { type WorkerLaunchOptions, WorkerTransport } from "./worker-transport.ts";

export interface HostedLaunchOptions extends WorkerLaunchOptions {
  /** Asked at every launch: the sandbox the plugin belongs in (its host's profile), or undefined. */
  sandbox: () => PluginSandbox | undefined;
  /** Node flags of the host process. */
  nodeArgs: readonly string[];
}

export class HostedTransport extends WorkerTransport {
  override readonly noun: string = "hosted worker";
  readonly #hosted: HostedLaunchOptions;

  constructor(opts: HostedLaunchOptions) {
    super(opts);
    this.#hosted = opts;
  }

  protected override thread(spec: SpawnedSpec & { thread?: ThreadSpec }): StartedWorker | undefined {
    const o = this.#hosted;
    const box = o.sandbox();
    if (!box) return undefined;
    try {
      const host = sandboxHostFor({ box, cwd: o.cwd ?? process.cwd(), nodeArgs: o.nodeArgs });
      // Its scratch space is the host's private directory, as a confined process has its own.
      return host.start(
        { ...spec, env: { ...spec.env, TMPDIR: host.tmpdir }, thread: spec.thread! },
        `plugin ${o.name}`,
      );
    } catch (err) {
      throw new LaunchProblem(
        "spawn_failed",
        `cannot start the sandbox host: ${(err as Error).message}`,
        err,
      );
    }
  }
}
