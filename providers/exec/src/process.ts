// One shell command as a process group: live output in arrival order, an output cap,
// and a stop sequence (SIGTERM to the whole group, SIGKILL after a grace period) used
// for timeouts, cancellation and for background processes left behind when the shell
// exits. Every group still alive when the plugin exits is killed with it, and so is a
// group whose plugin died without a chance to clean up (SIGKILL, OOM): each group holds
// a watchdog on a lifeline to the plugin (docs/decisions/reliability.md, "Never hang: bounded stalls, no orphans, validate = run").
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import type { Socket } from "node:net";
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
  /** Runs this argv instead of `<shell> -c <command>` when there is no wrapper (e.g. under `script` for a PTY). */
  argv?: readonly string[];
  /** "pipe": the caller writes stdin through `writeStdin`/`endStdin`; default: closed (end-of-file). */
  stdin?: "ignore" | "pipe";
}

/**
 * What runs as the group leader, before the shell: it forks the watchdog and then becomes
 * the shell (exec keeps the pid, so the group id, exit status and signal are the shell's).
 * fd 3 is the lifeline, a socket whose other end only the plugin holds. The watchdog, a
 * subshell in this group that ignores the stop sequence's SIGTERM, reads it: a line is
 * the plugin letting it go; end-of-file means the plugin is gone, and the watchdog kills
 * the whole group. The shell (or the sandbox wrapping it) does not inherit the lifeline. `$!` tells the plugin
 * the watchdog's pid, so it does not count as a command process left behind.
 */
const LEADER = [
  "(trap '' TERM INT HUP; read -r _ <&3 || kill -9 0) &",
  'echo "$!" >&3',
  'exec 3<&- "$@"',
].join("\n");

/** Linux has /proc: processes of a group can be told apart (the watchdog is not counted). */
const HAS_PROC = process.platform === "linux";

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
export function groupAlive(pgid: number, except?: number): boolean {
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
    if (Number(name) === except) continue;
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
  /** The plugin's end of the watchdog's lifeline (see LEADER). */
  private readonly lifeline: Socket | null;
  private readonly watchdog: Promise<number | undefined>;
  private readonly lifelineClosed: Promise<void>;

  constructor(opts: CommandOptions) {
    installExitHook();
    this.opts = opts;
    // The shell named by path must be executable: the leader would otherwise report it
    // only as exit status 127.
    let missing: NodeJS.ErrnoException | undefined;
    if (opts.shell.includes("/")) {
      try {
        accessSync(opts.shell, constants.X_OK);
      } catch (err) {
        missing = err as NodeJS.ErrnoException;
      }
    }
    // What the leader becomes: the shell, or the sandbox that runs the same command line.
    const program = opts.wrapper
      ? [opts.wrapper.file, ...opts.wrapper.args]
      : opts.argv
        ? [...opts.argv]
        : [opts.shell, "-c", opts.command];
    // Its own process group, so the whole tree can be signalled without the plugin.
    this.child = spawn(
      missing ? opts.shell : "/bin/sh",
      missing ? [] : ["-c", LEADER, "agent-exec", ...program],
      {
        cwd: opts.cwd,
        env: opts.env,
        detached: true,
        stdio: [opts.stdin ?? "ignore", "pipe", "pipe", "pipe"],
      },
    );
    this.pid = missing ? undefined : this.child.pid;
    this.lifeline = this.child.stdio[3] as Socket | null;
    this.watchdog = new Promise<number | undefined>((resolve) => {
      const lifeline = this.lifeline;
      if (!lifeline) return resolve(undefined);
      let text = "";
      const onData = (d: Buffer) => {
        text += d.toString("latin1");
        if (text.includes("\n")) done();
      };
      const done = () => {
        lifeline.off("data", onData);
        const n = Number.parseInt(text, 10);
        resolve(Number.isInteger(n) && n > 0 ? n : undefined);
      };
      lifeline.on("data", onData);
      lifeline.once("end", done);
      lifeline.once("error", done);
      lifeline.once("close", done);
    });
    this.lifeline?.on("error", () => {}); // the watchdog going away is expected
    this.lifelineClosed = new Promise<void>((resolve) => {
      if (!this.lifeline) return resolve();
      this.lifeline.once("close", () => resolve());
    });
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
      let finished = false;
      const finish = () => {
        if (finished) return;
        finished = true;
        live.delete(this);
        if (this.droppedBytes > 0) this.events.push({ kind: "dropped", bytes: this.droppedBytes });
        this.events.close();
        resolve(this.exit ?? { code: null, signal: null });
      };
      if (missing) {
        this.events.push({ kind: "spawn_error", error: missing });
        this.child.once("error", () => {});
        this.child.once("close", finish);
        return;
      }
      this.child.once("error", (error: NodeJS.ErrnoException) => {
        if (this.pid !== undefined) return; // a kill failure, not a failed start
        this.events.push({ kind: "spawn_error", error });
        finish();
      });
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        // Whatever the shell left in its group (background jobs) ends with it; then the
        // watchdog is let go.
        void (async () => {
          const watchdog = await this.watchdogPid();
          if (this.pid !== undefined && !HAS_PROC) await this.releaseWatchdog();
          if (this.pid !== undefined && groupAlive(this.pid, watchdog)) await this.stopGroup();
          await this.releaseWatchdog();
        })();
        // A process that left the group may hold the pipes open: stop waiting for them.
        setTimeout(() => {
          if (closed) return;
          this.child.stdout?.destroy();
          this.child.stderr?.destroy();
          this.lifeline?.destroy();
          finish();
        }, this.opts.killGraceMs + 1_000).unref();
      });
      this.child.once("close", () => {
        closed = true;
        finish();
      });
    });
  }

  /** Writes to the command's stdin (only with `stdin: "pipe"`); false once stdin is closed. */
  writeStdin(data: string | Buffer): boolean {
    const w = this.child.stdin;
    if (!w || w.destroyed || w.writableEnded) return false;
    w.on("error", () => {}); // the command closing its stdin early is not our failure
    w.write(data);
    return true;
  }

  /** Closes the command's stdin: it reads end-of-file. */
  endStdin(): void {
    const w = this.child.stdin;
    if (!w || w.destroyed || w.writableEnded) return;
    w.on("error", () => {});
    w.end();
  }

  /** The watchdog's pid, once the leader has announced it (undefined if it never does). */
  private async watchdogPid(): Promise<number | undefined> {
    return Promise.race([
      this.watchdog,
      new Promise<undefined>((r) => setTimeout(() => r(undefined), 1_000).unref()),
    ]);
  }

  /** Lets the watchdog go (the group is being taken care of here) and waits until it has. */
  private async releaseWatchdog(): Promise<void> {
    const lifeline = this.lifeline;
    if (!lifeline || lifeline.destroyed) return;
    if (lifeline.writable) lifeline.end("\n");
    await Promise.race([this.lifelineClosed, new Promise((r) => setTimeout(r, 1_000).unref())]);
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
    if (this.pid === undefined) return;
    // Without /proc the watchdog cannot be told apart from the command: let it go first.
    if (!HAS_PROC) await this.releaseWatchdog();
    const watchdog = await this.watchdogPid();
    if (!groupAlive(this.pid, watchdog)) return;
    this.sentSigterm = true;
    this.signalGroup("SIGTERM");
    const deadline = Date.now() + this.opts.killGraceMs;
    while (Date.now() < deadline) {
      if (!groupAlive(this.pid, watchdog)) return;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (groupAlive(this.pid, watchdog)) {
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
