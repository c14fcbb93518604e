// The plugin processes a kernel runs, shareable between kernels. A pool keeps one
// transport host per (declared name, executable, isolation): a PluginHost for a plugin
// process, a WorkerPluginHost for a first-party plugin in a worker thread. It routes callbacks
// (KernelCallbackService, FrontendService.Attach, logs, crash reports) to whichever
// kernel acquired it last. A kernel normally owns a private pool; tests share one pool
// across many short-lived kernels so plugin processes are launched once per file.
import type { DescService } from "@bufbuild/protobuf";
import type { handleBidiStreamingCall, UntypedServiceImplementation } from "@grpc/grpc-js";
import type { ServiceImpl } from "@pluggableharness/goplugin";
import { type ClientEvent, FrontendService, type ServerEvent } from "@pluggableharness/protocol/frontend";
import { KernelCallbackService } from "@pluggableharness/protocol/kernel";
import {
  type CallbackContext,
  type CallbackPeer,
  type CrashReport,
  createPluginHost,
  type EnvironmentSpec,
  type LaunchContext,
  type PluginHostOptions,
  type PluginIsolation,
  type PluginLogRecord,
  type PluginTransportHost,
  type WorkerPluginHostOptions,
} from "@pluggableharness/runtime";

type CallbackImpl = ServiceImpl<typeof KernelCallbackService, CallbackContext>;

/** What a kernel provides to the plugin processes it uses. */
export interface PoolOwner {
  callbacks(peer: CallbackPeer): CallbackImpl;
  /** FrontendService.Attach served on the callback connection. */
  attach: (peer: CallbackPeer) => handleBidiStreamingCall<ClientEvent, ServerEvent>;
  pluginLog(record: PluginLogRecord): void;
  pluginCrashed(report: CrashReport): void;
  /** A process of `name` was (re)launched; runs before any other call reaches it. */
  pluginLaunched(name: string, launch: LaunchContext): Promise<void>;
}

export interface PluginPoolOptions {
  /** Extra PluginHost options (socket dir, timeouts, backoff ...) for every host. */
  readonly hostOptions?: Partial<
    Omit<PluginHostOptions, "name" | "command" | "callbacks" | "logSink" | "onCrash">
  >;
  /** Heap limits and watchdog of worker-thread plugins. */
  readonly workerOptions?: Pick<WorkerPluginHostOptions, "resourceLimits" | "watchdog">;
}

export interface AcquireOptions {
  readonly env?: EnvironmentSpec;
  readonly cwd?: string;
  /** Extra Node flags when the executable is a .ts/.js/.mjs file run on the kernel's Node. */
  readonly nodeArgs?: readonly string[];
  /** A subprocess (default) or, for a first-party JavaScript plugin, a worker thread. */
  readonly isolation?: PluginIsolation;
  /** The sandbox for each launch (PluginHostOptions.sandbox). */
  readonly sandbox?: PluginHostOptions["sandbox"];
  /** Heap limits of this worker-thread plugin, over the pool's workerOptions. */
  readonly resourceLimits?: WorkerPluginHostOptions["resourceLimits"];
}

interface Entry {
  readonly host: PluginTransportHost;
  readonly command: string;
  readonly isolation: PluginIsolation;
  owner: PoolOwner | undefined;
}

export class PluginPool {
  readonly #entries = new Map<string, Entry>();
  readonly #options: PluginPoolOptions;

  constructor(options: PluginPoolOptions = {}) {
    this.#options = options;
  }

  /** The host for `name`, launched lazily; an existing one is reused when it runs the same executable. */
  acquire(
    name: string,
    command: string,
    owner: PoolOwner,
    options: AcquireOptions = {},
  ): PluginTransportHost {
    const isolation = options.isolation ?? "process";
    const existing = this.#entries.get(name);
    if (existing && existing.command === command && existing.isolation === isolation) {
      existing.owner = owner;
      return existing.host;
    }
    if (existing) void existing.host.shutdown().catch(() => {});
    const entry: Entry = { command, isolation, owner, host: undefined as unknown as PluginTransportHost };
    const current = (): PoolOwner => {
      if (!entry.owner) throw new Error(`plugin "${name}" has no kernel attached`);
      return entry.owner;
    };
    const callbacks = (peer: CallbackPeer): CallbackImpl => {
      const impl: Record<string, unknown> = {};
      for (const m of KernelCallbackService.methods) {
        impl[m.localName] = (req: unknown, ctx: CallbackContext) => {
          const fn = (current().callbacks(peer) as Record<string, unknown>)[m.localName] as
            | ((r: unknown, c: CallbackContext) => unknown)
            | undefined;
          if (!fn) throw new Error(`${m.name} is not served`);
          return fn(req, ctx);
        };
      }
      return impl as CallbackImpl;
    };
    const attachHandlers = (peer: CallbackPeer): UntypedServiceImplementation => ({
      attach: ((call) => current().attach(peer)(call)) as handleBidiStreamingCall<ClientEvent, ServerEvent>,
    });
    (entry as { host: PluginTransportHost }).host = createPluginHost(isolation, {
      ...this.#options.hostOptions,
      ...(isolation !== "process" ? this.#options.workerOptions : {}),
      ...(isolation !== "process" && options.resourceLimits
        ? { resourceLimits: { ...this.#options.workerOptions?.resourceLimits, ...options.resourceLimits } }
        : {}),
      name,
      command,
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      logSink: (record) => entry.owner?.pluginLog(record),
      onCrash: (report) => entry.owner?.pluginCrashed(report),
      onLaunch: async (launch) => {
        await entry.owner?.pluginLaunched(name, launch);
      },
      callbacks: {
        service: KernelCallbackService as DescService,
        implementation: callbacks as never,
        extraServices: (peer) => [{ service: FrontendService, handlers: attachHandlers(peer) }],
      },
    });
    this.#entries.set(name, entry);
    return entry.host;
  }

  /** Detaches `owner` from every host it acquired; the processes keep running. */
  release(owner: PoolOwner): void {
    for (const e of this.#entries.values()) if (e.owner === owner) e.owner = undefined;
  }

  /** Stops every process. */
  async shutdown(): Promise<void> {
    const hosts = [...this.#entries.values()].map((e) => e.host);
    this.#entries.clear();
    await Promise.all(hosts.map((h) => h.shutdown().catch(() => {})));
  }
}
