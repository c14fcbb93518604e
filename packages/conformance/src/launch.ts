// Launching a plugin executable exactly as the kernel does (the runtime's PluginHost, or
// WorkerPluginHost for the worker transport), with a recording stand-in for the kernel's
// callbacks.
import {
  createPluginHost,
  ISOLATIONS,
  type PluginIsolation,
  type PluginLogRecord,
  type PluginTransportHost,
} from "@pluggableharness/runtime";
import { RecordingKernel } from "./kernel.ts";

export interface LaunchOptions {
  executable: string;
  /** The plugin's name as the kernel would know it (agent.hcl label). */
  name?: string;
  args?: readonly string[];
  /** Extra literal environment variables (non-secret). */
  env?: Readonly<Record<string, string>>;
  launchTimeoutMs?: number;
  logSink?: (record: PluginLogRecord) => void;
  /** The transport: a go-plugin subprocess (default) or a worker thread (first-party JavaScript plugins). */
  isolation?: PluginIsolation;
}

/** Every transport a first-party plugin can run on: the matrix its conformance runs over. */
export const TRANSPORTS: readonly PluginIsolation[] = ISOLATIONS;

export interface LaunchedPlugin {
  host: PluginTransportHost;
  kernel: RecordingKernel;
  /** Shuts the plugin down (graceful, then SIGKILL). */
  close(): Promise<void>;
}

export function launchPlugin(options: LaunchOptions): LaunchedPlugin {
  const kernel = new RecordingKernel();
  const host = createPluginHost(options.isolation ?? "process", {
    name: options.name ?? "plugin",
    command: options.executable,
    ...(options.args ? { args: options.args } : {}),
    env: { ...(options.env ? { set: options.env } : {}) },
    launchTimeoutMs: options.launchTimeoutMs ?? 20_000,
    callbacks: kernel.registration(),
    ...(options.logSink ? { logSink: options.logSink } : {}),
  });
  return { host, kernel, close: () => host.shutdown() };
}
