// The seam between the kernel and however a plugin runs: a PluginTransportHost launches
// it, hands out typed clients, notices crashes and relaunches. PluginHost runs a plugin as
// a go-plugin subprocess over gRPC; WorkerPluginHost runs a trusted first-party JavaScript
// plugin in a worker thread of the kernel process over a MessagePort. The kernel's
// registry and pool hold this interface only.
import type { DescService } from "@bufbuild/protobuf";
import type { Handshake, Lease, ServiceClient } from "@pluggableharness/goplugin";
import type { PluginCrashedError, PluginStoppedError } from "./errors.ts";
import type { PluginDescription } from "./plugin-types.ts";
import type { SpawnedSpec } from "./prelaunch.ts";

/**
 * How a plugin is isolated from the kernel: its own process, its own thread of the kernel,
 * or its own thread of a sandbox host process (the kernel's choice for a first-party plugin
 * the sandbox confines; never configured).
 */
export type PluginIsolation = "process" | "worker" | "hosted";

/** The isolations a configuration (or a conformance run) may ask for. */
export const ISOLATIONS: readonly PluginIsolation[] = ["process", "worker"];

export interface PluginTransportHost {
  /** The plugin's configured name (its agent.hcl label). */
  readonly name: string;
  readonly isolation: PluginIsolation;
  readonly running: boolean;
  /** The process serving the plugin (the kernel's own for a worker), while it runs. */
  readonly pid: number | undefined;
  readonly crashCount: number;
  readonly consecutiveFailureCount: number;
  /** What the latest launch started (a process, or a thread spec), for a prelaunch plan. */
  readonly lastSpawn: SpawnedSpec | undefined;
  readonly protocolVersion: number | undefined;
  nextLaunchDelayMs(now?: number): number;
  /** Launches the plugin if it is not running; resolves when it is ready for calls. */
  start(): Promise<PluginDescription>;
  /** Which categories the plugin serves and its Describe identity per category. */
  describe(): Promise<PluginDescription>;
  /** A typed client; every call (re)launches the plugin first if needed. */
  client<S extends DescService>(service: S): ServiceClient<S>;
  /** Stops the plugin (asks it to shut down, then forces). Later use relaunches. */
  shutdown(): Promise<void>;
  /** Stops the plugin without asking; in-flight calls fail as crashed. */
  kill(): void;
}

/** One launched plugin as a host supervises it, whatever runs it. */
export interface LaunchedPlugin {
  readonly pid: number;
  readonly startedAt: number;
  readonly alive: boolean;
  readonly handshake: Handshake;
  readonly description: PluginDescription;
  /** Resolves when it is gone (crashed or stopped). */
  readonly died: Promise<PluginCrashedError | PluginStoppedError>;
  lease(): Lease;
  kill(): void;
  shutdown(graceMs: number): Promise<void>;
  /**
   * While it is unclear whether the plugin can take calls (a worker that has not answered
   * since the kernel cancelled a call), resolves once that is decided; else undefined.
   */
  settling?(): Promise<void> | undefined;
}
