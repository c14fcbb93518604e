// Classified failures of plugin processes. The kernel maps them onto the categories'
// own error vocabularies (ToolError / ModelError PROCESS_CRASHED) with crash.ts.

export type LaunchFailure =
  | "spawn_failed"
  | "exited"
  | "timeout"
  | "bad_handshake"
  | "version_mismatch"
  | "tls_failed"
  | "unhealthy"
  | "describe_failed"
  | "setup_failed"
  | "socket_path_too_long";

/** The plugin could not be started and connected. */
export class PluginLaunchError extends Error {
  readonly code = "launch_failed";
  readonly reason: LaunchFailure;
  readonly plugin: string;
  /** The plugin's last stderr lines, when it printed any. */
  readonly stderrTail: readonly string[];
  constructor(
    plugin: string,
    reason: LaunchFailure,
    message: string,
    stderrTail: readonly string[] = [],
    cause?: unknown,
  ) {
    const tail = stderrTail.length > 0 ? `\nlast plugin output:\n  ${stderrTail.join("\n  ")}` : "";
    super(`plugin ${JSON.stringify(plugin)} failed to start (${reason}): ${message}${tail}`, { cause });
    this.name = "PluginLaunchError";
    this.plugin = plugin;
    this.reason = reason;
    this.stderrTail = stderrTail;
  }
}

/**
 * exited: the process (or worker thread) ended; connection_lost: its connection dropped;
 * out_of_memory: a worker reached its heap limit; unresponsive: a worker's event loop
 * stopped answering (a busy loop), so the kernel stopped it.
 */
export type CrashKind = "exited" | "connection_lost" | "out_of_memory" | "unresponsive";

/**
 * The plugin process died (or its connection dropped) while calls were in flight or
 * before they could run. Every affected call fails with this error; the next call
 * relaunches the plugin.
 */
export class PluginCrashedError extends Error {
  readonly code = "process_crashed";
  readonly plugin: string;
  readonly kind: CrashKind;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderrTail: readonly string[];
  /** What a worker thread reported as it died (its uncaught error), if anything. */
  readonly detail: string | undefined;
  constructor(
    plugin: string,
    kind: CrashKind,
    exitCode: number | null,
    signal: NodeJS.Signals | null,
    stderrTail: readonly string[] = [],
    detail?: string,
  ) {
    const how =
      kind === "connection_lost"
        ? "lost its connection"
        : kind === "out_of_memory"
          ? "ran out of memory"
          : kind === "unresponsive"
            ? "stopped answering"
            : signal
              ? `was killed by ${signal}`
              : `exited with status ${exitCode}`;
    super(`plugin ${JSON.stringify(plugin)} ${how}${detail ? `: ${detail}` : ""}`);
    this.detail = detail;
    this.name = "PluginCrashedError";
    this.plugin = plugin;
    this.kind = kind;
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderrTail = stderrTail;
  }
}

/** The plugin was shut down on purpose while a call was still running. */
export class PluginStoppedError extends Error {
  readonly code = "plugin_stopped";
  readonly plugin: string;
  constructor(plugin: string) {
    super(`plugin ${JSON.stringify(plugin)} was shut down`);
    this.name = "PluginStoppedError";
    this.plugin = plugin;
  }
}
