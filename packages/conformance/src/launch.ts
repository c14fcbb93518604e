// Launching a plugin executable exactly as the kernel does (the runtime's PluginHost),
// with a recording stand-in for the kernel's callbacks.
import { PluginHost, type PluginLogRecord } from "@pluggableharness/runtime";
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
}

export interface LaunchedPlugin {
  host: PluginHost;
  kernel: RecordingKernel;
  /** Shuts the plugin down (graceful, then SIGKILL). */
  close(): Promise<void>;
}

export function launchPlugin(options: LaunchOptions): LaunchedPlugin {
  const kernel = new RecordingKernel();
  const host = new PluginHost({
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
