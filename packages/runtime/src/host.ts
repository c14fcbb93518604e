// PluginHost: one configured plugin as the kernel sees it. It launches the process on
// first use, hands out typed clients, notices crashes, relaunches with exponential
// backoff on the next use, and reports repeated crashes.
import { homedir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import {
  APP_PROTOCOL_VERSIONS,
  createClient,
  type MagicCookie,
  PLUGGABLEHARNESS_COOKIE,
  type ServiceClient,
} from "@pluggableharness/goplugin";
import { CATEGORY_PROBES } from "./categories.ts";
import type { EnvironmentSpec } from "./env.ts";
import { PluginCrashedError, PluginLaunchError } from "./errors.ts";
import { type LaunchOptions, launchPlugin, type Transport } from "./launch.ts";
import type {
  CallbackRegistration,
  CategoryProbe,
  PluginDescription,
  PluginLogRecord,
} from "./plugin-types.ts";
import type { SpawnedSpec } from "./prelaunch.ts";
import { ProcessTransport } from "./process-transport.ts";
import type { PluginSandbox } from "./sandbox.ts";
import type { LaunchedPlugin, PluginIsolation, PluginTransportHost } from "./transport.ts";

export interface BackoffPolicy {
  /** Delay before the second relaunch in a row; doubles for each further one. */
  initialMs: number;
  maxMs: number;
  /** A process that ran this long before crashing starts a fresh count. */
  resetAfterMs: number;
  /** Consecutive failures at which crashes are reported as repeated. */
  repeatedThreshold: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = {
  initialMs: 250,
  maxMs: 30_000,
  resetAfterMs: 60_000,
  repeatedThreshold: 3,
};

export interface CrashReport {
  plugin: string;
  error: PluginCrashedError | PluginLaunchError;
  /** Failures (crashes or failed launches) in a row, this one included. */
  consecutive: number;
  /** Crashes of running processes over the host's lifetime. */
  crashCount: number;
  /** True once `consecutive` reaches the policy's repeatedThreshold. */
  repeated: boolean;
  /** How long the next launch will wait. */
  nextDelayMs: number;
}

/** What onLaunch gets: the new process's identity and clients that reach only it. */
export interface LaunchContext {
  readonly plugin: string;
  /** 1 for the first launch, 2 after one relaunch, ... */
  readonly launch: number;
  readonly pid: number;
  readonly description: PluginDescription;
  client<S extends DescService>(service: S): ServiceClient<S>;
}

export interface PluginHostOptions {
  /** How the kernel names this plugin (its agent.hcl label); used in logs and errors. */
  name: string;
  /** Plugin executable; a .ts/.js file runs on the kernel's own Node binary. */
  command: string;
  args?: readonly string[];
  /** Extra Node flags for .ts/.js plugins. */
  nodeArgs?: readonly string[];
  cwd?: string;
  env?: EnvironmentSpec;
  cookie?: MagicCookie;
  protocolVersions?: readonly number[];
  /** Until the handshake line, the health check and discovery are done. Default 30 s. */
  launchTimeoutMs?: number;
  /** Default 5 s. */
  healthTimeoutMs?: number;
  /** Wait after GRPCController.Shutdown before SIGKILL. Default 2 s (go-plugin's). */
  shutdownGraceMs?: number;
  /** Parent directory for the per-plugin private socket directory (default: the agent's runtime directory). */
  socketDir?: string;
  /**
   * go-plugin AutoMTLS, on by default: calls both ways run over TLS pinned to this launch's
   * two certificates. A plugin that returns no certificate gets a plaintext connection and
   * its kernel callbacks need its launch token; false makes every plugin so.
   */
  autoMTLS?: boolean;
  logSink?: (record: PluginLogRecord) => void;
  /** The kernel's callback service, served to this plugin at the fixed broker ID. */
  callbacks?: CallbackRegistration;
  /** Category services to probe after launch; defaults to every category. */
  categories?: readonly CategoryProbe[];
  backoff?: Partial<BackoffPolicy>;
  onCrash?: (report: CrashReport) => void;
  /**
   * Runs after every launch (the first and each relaunch), before any other call reaches
   * the new process, with clients bound to it: the place to re-send Configure after a
   * crash. A failure kills the process and fails the launch (reason "setup_failed").
   */
  onLaunch?: (launch: LaunchContext) => void | Promise<void>;
  /**
   * NODE_COMPILE_CACHE for .ts/.js plugins (a directory), false to disable; defaults
   * to defaultCompileCache(). Caches compiled and type-stripped code, no secrets, and
   * roughly halves a TypeScript plugin's cold start.
   */
  nodeCompileCache?: string | false;
  /**
   * Asked at every launch (the first and each relaunch): the bubblewrap sandbox to run
   * the process in (runtime/sandbox.ts), or undefined to run it unconfined.
   */
  sandbox?: () => PluginSandbox | undefined;
}

/** $XDG_CACHE_HOME/agent/node-compile-cache: per user, never a shared temp dir. */
export function defaultCompileCache(env: NodeJS.ProcessEnv = process.env): string {
  return join(env["XDG_CACHE_HOME"] || join(homedir(), ".cache"), "agent", "node-compile-cache");
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class PluginHost implements PluginTransportHost {
  readonly name: string;
  readonly isolation: PluginIsolation = "process";
  protected readonly opts: PluginHostOptions;
  private readonly backoff: BackoffPolicy;
  private instance: LaunchedPlugin | undefined;
  private starting: Promise<LaunchedPlugin> | undefined;
  private launches = 0;
  private consecutiveFailures = 0;
  private lastFailureAt = 0;
  private crashes = 0;
  private spawned: SpawnedSpec | undefined;

  constructor(opts: PluginHostOptions) {
    this.name = opts.name;
    this.opts = opts;
    this.backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
  }

  /** Crashes of running plugin processes so far. */
  get crashCount(): number {
    return this.crashes;
  }

  /** Failures in a row (crashes and failed launches) since the last stable run. */
  get consecutiveFailureCount(): number {
    return this.consecutiveFailures;
  }

  /** The running process's pid, if one is running. */
  get pid(): number | undefined {
    return this.instance?.alive ? this.instance.pid : undefined;
  }

  get running(): boolean {
    return this.instance?.alive ?? false;
  }

  /** What the latest launch spawned: executable, arguments, directory, environment. */
  get lastSpawn(): SpawnedSpec | undefined {
    return this.spawned;
  }

  /** The running process's socket address from its handshake. */
  get address(): string | undefined {
    return this.instance?.alive ? this.instance.handshake.address || undefined : undefined;
  }

  /** Negotiated application protocol version of the running process. */
  get protocolVersion(): number | undefined {
    return this.instance?.alive ? this.instance.handshake.appVersion : undefined;
  }

  /** Delay the next launch waits, given the failures so far. */
  nextLaunchDelayMs(now = Date.now()): number {
    const n = this.consecutiveFailures;
    if (n <= 1) return 0; // the first relaunch after a crash is immediate
    const delay = Math.min(this.backoff.initialMs * 2 ** (n - 2), this.backoff.maxMs);
    return Math.max(0, this.lastFailureAt + delay - now);
  }

  /** Launches the plugin if it is not running; resolves when it is ready for calls. */
  async start(): Promise<PluginDescription> {
    return (await this.ensure()).description;
  }

  /** Which categories the plugin serves and its Describe identity per category. */
  async describe(): Promise<PluginDescription> {
    return this.start();
  }

  /** A typed client; every call (re)launches the plugin first if needed. */
  client<S extends DescService>(service: S): ServiceClient<S> {
    return createClient(service, { acquire: async () => (await this.ensure()).lease() });
  }

  /** Stops the running process (Shutdown, grace period, SIGKILL). Later use relaunches. */
  async shutdown(): Promise<void> {
    const starting = this.starting;
    if (starting) await starting.catch(() => {});
    const inst = this.instance;
    this.instance = undefined;
    await inst?.shutdown(this.opts.shutdownGraceMs ?? 2_000);
  }

  /** Kills the running process without asking (for tests and emergencies). */
  kill(): void {
    this.instance?.kill();
  }

  /**
   * The transport for one launch: a go-plugin subprocess here; WorkerPluginHost starts a
   * thread instead. The launch sequence and supervision (backoff, onLaunch, crash reports)
   * are the same for every transport.
   */
  protected transport(common: LaunchOptions): Transport {
    const o = this.opts;
    return new ProcessTransport({
      ...common,
      command: o.command,
      args: o.args ?? [],
      nodeArgs: o.nodeArgs ?? [],
      cwd: o.cwd,
      autoMTLS: o.autoMTLS ?? true,
      nodeCompileCache: this.compileCache(),
      ...(o.sandbox ? { sandbox: o.sandbox } : {}),
    });
  }

  /** The compile cache directory for Node plugins, or undefined for none. */
  protected compileCache(): string | undefined {
    const c = this.opts.nodeCompileCache;
    return c === false ? undefined : (c ?? defaultCompileCache());
  }

  private ensure(): Promise<LaunchedPlugin> {
    // A worker whose fate is being decided (it did not acknowledge a cancellation yet) is
    // waited for, so the call goes to it if it recovers or to its replacement if not.
    const settling = this.instance?.alive ? this.instance.settling?.() : undefined;
    if (settling) return settling.then(() => this.ensure());
    if (this.instance?.alive) return Promise.resolve(this.instance);
    this.starting ??= this.launch().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async launch(): Promise<LaunchedPlugin> {
    const delay = this.nextLaunchDelayMs();
    if (delay > 0) await sleep(delay);
    const id = ++this.launches;
    let inst: LaunchedPlugin;
    try {
      const common: LaunchOptions = {
        name: this.name,
        env: this.opts.env ?? {},
        cookie: this.opts.cookie ?? PLUGGABLEHARNESS_COOKIE,
        versions: this.opts.protocolVersions ?? APP_PROTOCOL_VERSIONS,
        launchTimeoutMs: this.opts.launchTimeoutMs ?? 30_000,
        healthTimeoutMs: this.opts.healthTimeoutMs ?? 5_000,
        socketDir: this.opts.socketDir,
        logSink: this.opts.logSink,
        callbacks: this.opts.callbacks,
        categories: this.opts.categories ?? CATEGORY_PROBES,
        onSpawn: (spec) => {
          this.spawned = spec;
        },
      };
      inst = await launchPlugin(this.transport(common), common, id);
    } catch (err) {
      if (err instanceof PluginLaunchError) this.recordFailure(err, 0);
      throw err;
    }
    if (this.opts.onLaunch) {
      const launched = inst;
      try {
        await this.opts.onLaunch({
          plugin: this.name,
          launch: id,
          pid: launched.pid,
          description: launched.description,
          client: (service) => createClient(service, { acquire: () => launched.lease() }),
        });
      } catch (err) {
        launched.kill();
        const failure = new PluginLaunchError(this.name, "setup_failed", (err as Error).message, [], err);
        this.recordFailure(failure, 0);
        throw failure;
      }
    }
    this.instance = inst;
    void inst.died.then((death) => {
      if (this.instance === inst) this.instance = undefined;
      if (death instanceof PluginCrashedError) {
        this.crashes++;
        this.recordFailure(death, Date.now() - inst.startedAt);
      }
    });
    return inst;
  }

  private recordFailure(error: PluginCrashedError | PluginLaunchError, uptimeMs: number): void {
    if (uptimeMs >= this.backoff.resetAfterMs) this.consecutiveFailures = 0;
    this.consecutiveFailures++;
    this.lastFailureAt = Date.now();
    const report: CrashReport = {
      plugin: this.name,
      error,
      consecutive: this.consecutiveFailures,
      crashCount: this.crashes,
      repeated: this.consecutiveFailures >= this.backoff.repeatedThreshold,
      nextDelayMs: this.nextLaunchDelayMs(),
    };
    this.opts.logSink?.({
      plugin: this.name,
      instance: this.launches,
      source: "runtime",
      level: "error",
      logger: "runtime",
      message: report.repeated
        ? `plugin keeps failing (${report.consecutive} times in a row): ${error.message}`
        : `plugin failed: ${error.message}`,
      fields: {
        consecutive: report.consecutive,
        crash_count: report.crashCount,
        next_delay_ms: report.nextDelayMs,
      },
      time: new Date(),
      structured: false,
    });
    try {
      this.opts.onCrash?.(report);
    } catch {
      // reporting must not break the host
    }
  }
}
