// One shell command as a process group: live output in arrival order, an output cap,
// and a stop sequence (SIGTERM to the whole group, SIGKILL after a grace period) used
// for timeouts, cancellation and for background processes left behind when the shell
// exits. Every group still alive when the plugin exits is killed with it.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { AsyncQueue } from "@pluggableharness/tool-kit";

export type ProcessEvent =
  | { kind: "output"; stream: "stdout" | "stderr"; data: Buffer }
  | { kind: "dropped"; bytes: number }
  | { kind: "spawn_error"; error: NodeJS.ErrnoException };

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface CommandOptions {
  shell: string;
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Bytes of output passed on; later output is counted and dropped. */
  maxOutputBytes: number;
  /** Wait between SIGTERM and SIGKILL. */
  killGraceMs: number;
  /** Runs this program instead of `<shell> -c <command>` (the sandbox wrapping the same command line). */
  wrapper?: { file: string; args: readonly string[] };
}

const live = new Set<RunningCommand>();
let exitHook = false;

function installExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  // Synchronous, last resort: the plugin is going away, so are its commands.
  process.once("exit", () => {
    for (const c of live) c.signalGroup("SIGKILL");
  });
}

/** Kills every running command group (plugin shutdown). */
export function killAll(): void {
  for (const c of live) c.signalGroup("SIGKILL");
}

/**
 * Whether any live (non-zombie) process is still in the group. Zombies count as gone:
 * they run nothing, and an init that does not reap would otherwise keep them forever.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true; // no /proc (macOS): the signal probe is all there is
  }
  for (const name of entries) {
    if (name.charCodeAt(0) > 57) continue; // not a pid
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

export class RunningCommand {
  readonly events = new AsyncQueue<ProcessEvent>();
  readonly child: ChildProcess;
  readonly pid: number | undefined;
  /** Resolves when the shell has exited and both pipes are closed (or given up on). */
  readonly done: Promise<ExitInfo>;
  outputBytes = 0;
  droppedBytes = 0;
  /** The stop sequence that ran, if any. */
  stopReason: "timeout" | "cancelled" | undefined;
  sentSigterm = false;
  sentSigkill = false;
  private readonly opts: CommandOptions;
  private exit: ExitInfo | undefined;

  constructor(opts: CommandOptions) {
    installExitHook();
    this.opts = opts;
    // Its own process group, so the whole tree can be signalled without the plugin.
    this.child = spawn(
      opts.wrapper?.file ?? opts.shell,
      opts.wrapper ? [...opts.wrapper.args] : ["-c", opts.command],
      {
        cwd: opts.cwd,
        env: opts.env,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.pid = this.child.pid;
    live.add(this);
    const onData = (stream: "stdout" | "stderr") => (data: Buffer) => {
      const room = this.opts.maxOutputBytes - this.outputBytes;
      if (room <= 0) {
        this.droppedBytes += data.length;
        return;
      }
      const kept = data.length <= room ? data : data.subarray(0, room);
      this.outputBytes += kept.length;
      this.events.push({ kind: "output", stream, data: kept });
      if (kept.length < data.length) this.droppedBytes += data.length - kept.length;
    };
    this.child.stdout!.on("data", onData("stdout"));
    this.child.stderr!.on("data", onData("stderr"));
    this.done = new Promise<ExitInfo>((resolve) => {
      let closed = false;
      const finish = () => {
        live.delete(this);
        if (this.droppedBytes > 0) this.events.push({ kind: "dropped", bytes: this.droppedBytes });
        this.events.close();
        resolve(this.exit ?? { code: null, signal: null });
      };
      this.child.once("error", (error: NodeJS.ErrnoException) => {
        if (this.pid !== undefined) return; // a kill failure, not a failed start
        this.events.push({ kind: "spawn_error", error });
        finish();
      });
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        // Whatever the shell left in its group (background jobs) ends with it.
        if (this.pid !== undefined && groupAlive(this.pid)) void this.stopGroup();
        // A process that left the group may hold the pipes open: stop waiting for them.
        setTimeout(() => {
          if (closed) return;
          this.child.stdout?.destroy();
          this.child.stderr?.destroy();
          finish();
        }, this.opts.killGraceMs + 1_000).unref();
      });
      this.child.once("close", () => {
        closed = true;
        finish();
      });
    });
  }

  signalGroup(signal: NodeJS.Signals): void {
    if (this.pid === undefined) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // the group is gone already
    }
  }

  /** SIGTERM to the group, SIGKILL to whatever is left after the grace period. */
  async stopGroup(): Promise<void> {
    if (this.pid === undefined || !groupAlive(this.pid)) return;
    this.sentSigterm = true;
    this.signalGroup("SIGTERM");
    const deadline = Date.now() + this.opts.killGraceMs;
    while (Date.now() < deadline) {
      if (!groupAlive(this.pid)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (groupAlive(this.pid)) {
      this.sentSigkill = true;
      this.signalGroup("SIGKILL");
    }
  }

  /** Stops the command for `reason` and waits until it is gone. */
  async stop(reason: "timeout" | "cancelled"): Promise<ExitInfo> {
    this.stopReason ??= reason;
    await this.stopGroup();
    return this.done;
  }
}
