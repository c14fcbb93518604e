// Background processes: servers, watchers and REPLs a session starts and then reads,
// writes, lists and stops through their own operations. Each runs like a `bash` command
// (the session's working directory and variables, the sandbox, its own process group with
// a watchdog on the plugin's lifeline) but without a deadline; its output goes to a
// bounded buffer read incrementally. All of them end with the plugin (the session).
import { constants } from "node:os";
import type { JsonObject } from "@bufbuild/protobuf";
import { r, s, type ToolDefinition, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";
import { launch } from "./launch.ts";
import type { ExitInfo, RunningCommand } from "./process.ts";

/** Output kept per process; older output is dropped (and counted) once a reader falls behind. */
export const BUFFER_BYTES = 1024 * 1024;
/** Processes one session may have running at once. */
export const MAX_RUNNING = 16;

interface Job {
  readonly id: string;
  readonly session: string;
  readonly command: string;
  readonly cwd: string;
  readonly pty: boolean;
  readonly startedAt: string;
  readonly cmd: RunningCommand;
  /** Buffered output: bytes [start, start + data.length) of everything written. */
  data: Buffer;
  start: number;
  /** Total bytes written so far. */
  total: number;
  /** Bytes read so far (the next read starts here). */
  cursor: number;
  exit: ExitInfo | undefined;
  /** Wakes readers waiting for output or the exit. */
  waiters: Set<() => void>;
  /** Resolves when all its output is in the buffer and its exit is known. */
  drained: Promise<void>;
}

const jobs = new Map<string, Job>();
let counter = 0;

function sessionOf(sessionId: string | undefined): string {
  return sessionId ?? "";
}

function jobFor(id: string, sessionId: string | undefined): Job {
  const job = jobs.get(id);
  // Another session's processes are invisible, not merely forbidden.
  if (!job || job.session !== sessionOf(sessionId))
    throw new ToolFailure("not_found", `no background process ${id} in this session (see background_list)`);
  return job;
}

function wake(job: Job): void {
  for (const w of job.waiters) w();
  job.waiters.clear();
}

function append(job: Job, chunk: Buffer): void {
  job.total += chunk.length;
  const joined = Buffer.concat([job.data, chunk]);
  if (joined.length > BUFFER_BYTES) {
    const cut = joined.length - BUFFER_BYTES;
    job.data = joined.subarray(cut);
    job.start += cut;
  } else job.data = joined;
  wake(job);
}

/** Exit code per shell convention: 128 + N for a signal. */
function codeOf(exit: ExitInfo): number {
  if (exit.code !== null) return exit.code;
  const n = exit.signal ? (constants.signals as Record<string, number>)[exit.signal] : undefined;
  return n === undefined ? -1 : 128 + n;
}

function statusOf(job: Job): JsonObject {
  return {
    id: job.id,
    command: job.command,
    cwd: job.cwd,
    pid: job.cmd.pid ?? -1,
    started_at: job.startedAt,
    running: job.exit === undefined,
    ...(job.exit ? { exit_code: codeOf(job.exit) } : {}),
    ...(job.exit?.signal ? { signal: job.exit.signal } : {}),
    unread_bytes: job.total - job.cursor,
  };
}

/** Takes what was written since the last read; says how much fell out of the buffer unread. */
function takeUnread(job: Job, maxBytes: number): { text: string; dropped: number; more: number } {
  const dropped = Math.max(0, job.start - job.cursor);
  if (dropped > 0) job.cursor = job.start;
  const from = job.cursor - job.start;
  const slice = job.data.subarray(from, from + maxBytes);
  // Never split a UTF-8 sequence: stop before an incomplete one (unless it is all there is).
  let end = slice.length;
  if (from + end < job.data.length) {
    let i = end - 1;
    let back = 0;
    while (i >= 0 && back < 4 && (slice[i]! & 0xc0) === 0x80) {
      i--;
      back++;
    }
    if (i >= 0 && slice[i]! >= 0xc0) {
      const need = slice[i]! >= 0xf0 ? 4 : slice[i]! >= 0xe0 ? 3 : 2;
      if (back + 1 < need) end = i;
    }
  }
  const text = slice.subarray(0, end).toString("utf8");
  job.cursor += end;
  return { text, dropped, more: job.total - job.cursor };
}

/** Kills every background process (plugin shutdown); the process module's killAll covers the groups. */
export function forgetJobs(): void {
  jobs.clear();
}

interface StartArgs {
  command: string;
  description?: string;
  pty?: boolean;
  stdin?: string;
  keep_stdin_open?: boolean;
}

export const backgroundStart: ToolDefinition<StartArgs> = {
  name: "background_start",
  kind: "resource",
  risk: "high",
  description:
    "Start a long-running command (dev server, watcher, REPL) in the background, in bash's directory and sandbox, and return its id. It runs until it exits, background_stop, or the session ends.",
  input: s.object(
    {
      command: s.string(),
      description: s.string("A few words shown to the approver."),
      pty: s.boolean(),
      stdin: s.string(),
      keep_stdin_open: s.boolean("Keep stdin open for background_write."),
    },
    ["command"],
  ),
  output: s.object(
    {
      id: s.string("The process's id for background_read/write/stop."),
      pid: s.integer("Its process id on the host (the sandbox's, when sandboxed)."),
      cwd: s.string("Working directory it started in."),
    },
    ["id", "pid", "cwd"],
  ),
  streaming: false,
  // Like bash: a new process may touch any file, so the provider-wide lock.
  concurrency: { safe: false },
  defaultTimeoutMs: 30_000,
  idempotent: false,

  async invoke(args, ctx) {
    const session = sessionOf(ctx.sessionId);
    const running = [...jobs.values()].filter((j) => j.session === session && j.exit === undefined);
    if (running.length >= MAX_RUNNING) {
      throw new ToolFailure(
        "execution_failed",
        `this session already runs ${running.length} background processes (at most ${MAX_RUNNING}); stop one first`,
      );
    }
    const stdin =
      args.keep_stdin_open === true
        ? ("pipe" as const)
        : args.stdin !== undefined
          ? { text: args.stdin }
          : undefined;
    const launched = await launch(
      {
        command: args.command,
        ...(args.pty ? { pty: true } : {}),
        ...(stdin ? { stdin } : {}),
        keepState: false,
        // The buffer bounds what is kept; nothing is dropped on the way in.
        maxOutputBytes: Number.MAX_SAFE_INTEGER,
      },
      ctx,
    );
    const cmd = launched.cmd;
    const job: Job = {
      id: `bg${++counter}`,
      session,
      command: args.command,
      cwd: launched.cwd,
      pty: args.pty === true,
      startedAt: new Date().toISOString(),
      cmd,
      data: Buffer.alloc(0),
      start: 0,
      total: 0,
      cursor: 0,
      exit: undefined,
      waiters: new Set(),
      drained: Promise.resolve(),
    };
    for (const n of launched.notices) append(job, Buffer.from(n));
    if (args.keep_stdin_open && args.stdin !== undefined) cmd.writeStdin(args.stdin);
    jobs.set(job.id, job);
    job.drained = (async () => {
      for await (const ev of cmd.events.drain()) {
        if (ev.kind === "output") append(job, ev.data);
        else if (ev.kind === "spawn_error")
          append(job, Buffer.from(`[cannot start: ${ev.error.code ?? ev.error.message}]\n`));
      }
      job.exit = await cmd.done;
      launched.finish();
      wake(job);
    })();
    ctx.report({ background_started: true, id: job.id, pid: cmd.pid ?? -1 });
    await ctx.kernel
      .log("info", `background process ${job.id} started`, { id: job.id, pid: cmd.pid ?? -1 })
      .catch(() => {});
    return { id: job.id, pid: cmd.pid ?? -1, cwd: launched.cwd };
  },

  preview(args, ctx) {
    return r.group([
      r.text(
        `Start in the background in ${ctx.workingDirectory ?? "(no working directory)"}${args.pty ? ", on a terminal" : ""}; runs until stopped or the session ends`,
        "dim",
      ),
      ...(args.description ? [r.text(args.description)] : []),
      r.code(args.command, "bash"),
    ]);
  },
};

export const backgroundList: ToolDefinition<Record<string, never>> = {
  name: "background_list",
  kind: "data_source",
  risk: "read_only",
  description: "List this session's background processes.",
  input: s.object({}, []),
  output: s.object(
    {
      processes: s.array(
        s.object(
          {
            id: s.string("Process id for the other background operations."),
            command: s.string("Its command line."),
            cwd: s.string("Where it started."),
            pid: s.integer("Host process id."),
            started_at: s.string("When it started (RFC 3339)."),
            running: s.boolean("Still running."),
            exit_code: s.integer("Exit code once it has exited."),
            signal: s.string("Signal that ended it, if one did."),
            unread_bytes: s.integer("Output not yet read."),
          },
          ["id", "command", "cwd", "pid", "started_at", "running", "unread_bytes"],
        ),
        "Newest last.",
      ),
    },
    ["processes"],
  ),
  streaming: false,
  concurrency: { safe: true },
  idempotent: true,
  async invoke(_args, ctx) {
    const session = sessionOf(ctx.sessionId);
    return { processes: [...jobs.values()].filter((j) => j.session === session).map(statusOf) };
  },
};

interface ReadArgs {
  id: string;
  wait_ms?: number;
  max_bytes?: number;
}

export const backgroundRead: ToolDefinition<ReadArgs> = {
  name: "background_read",
  kind: "data_source",
  risk: "read_only",
  description: "Read a background process's output since the last read; wait_ms waits for new output.",
  input: s.object(
    {
      id: s.string(),
      wait_ms: s.integer("At most 30000."),
      max_bytes: s.integer(),
    },
    ["id"],
  ),
  output: s.object(
    {
      id: s.string("The process."),
      output: s.string("Output since the last read."),
      running: s.boolean("Still running."),
      exit_code: s.integer("Exit code once it has exited."),
      signal: s.string("Signal that ended it, if one did."),
      dropped_bytes: s.integer("Output that fell out of the buffer before it was read."),
      more_bytes: s.integer("Output still unread after this read (over max_bytes)."),
    },
    ["id", "output", "running", "dropped_bytes", "more_bytes"],
  ),
  streaming: false,
  // Reads of one process share its cursor: they serialize; different processes do not.
  concurrency: { safe: true, keyFields: ["id"] },
  defaultTimeoutMs: 40_000,
  idempotent: false,
  modelText: { field: "output" },
  async invoke(args, ctx) {
    const job = jobFor(args.id, ctx.sessionId);
    const wait = args.wait_ms ?? 0;
    if (wait < 0 || wait > 30_000)
      throw new ToolFailure("invalid_arguments", "wait_ms must be between 0 and 30000");
    const max = args.max_bytes ?? settings.maxOutputBytes;
    if (max < 1) throw new ToolFailure("invalid_arguments", "max_bytes must be at least 1");
    if (wait > 0 && job.total === job.cursor && job.exit === undefined) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done() {
          clearTimeout(timer);
          job.waiters.delete(done);
          ctx.signal.removeEventListener("abort", done);
          resolve();
        }
        job.waiters.add(done);
        ctx.signal.addEventListener("abort", done, { once: true });
      });
    }
    const { text, dropped, more } = takeUnread(job, max);
    return {
      id: job.id,
      output: text,
      running: job.exit === undefined,
      ...(job.exit ? { exit_code: codeOf(job.exit) } : {}),
      ...(job.exit?.signal ? { signal: job.exit.signal } : {}),
      dropped_bytes: dropped,
      more_bytes: more,
    };
  },
};

interface WriteArgs {
  id: string;
  input: string;
  close?: boolean;
}

export const backgroundWrite: ToolDefinition<WriteArgs> = {
  name: "background_write",
  kind: "resource",
  risk: "high",
  description:
    "Write to a background process's stdin (needs keep_stdin_open); close sends end-of-file. Include the trailing newline.",
  input: s.object(
    {
      id: s.string(),
      input: s.string(),
      close: s.boolean(),
    },
    ["id", "input"],
  ),
  output: s.object({ id: s.string("The process."), bytes: s.integer("Bytes written.") }, ["id", "bytes"]),
  streaming: false,
  concurrency: { safe: true, keyFields: ["id"] },
  idempotent: false,
  async invoke(args, ctx) {
    const job = jobFor(args.id, ctx.sessionId);
    if (job.exit) throw new ToolFailure("execution_failed", `background process ${job.id} has exited`);
    if (!job.cmd.writeStdin(args.input))
      throw new ToolFailure(
        "execution_failed",
        `background process ${job.id} has no open stdin (start it with keep_stdin_open: true)`,
      );
    if (args.close) job.cmd.endStdin();
    return { id: job.id, bytes: Buffer.byteLength(args.input) };
  },
  preview(args) {
    return r.group([
      r.text(`Write to background process ${args.id}${args.close ? ", then close its stdin" : ""}`, "dim"),
      r.code(args.input),
    ]);
  },
};

interface StopArgs {
  id: string;
}

export const backgroundStop: ToolDefinition<StopArgs> = {
  name: "background_stop",
  kind: "resource",
  // Ends only a process this session started; nothing else is touched.
  risk: "low",
  description: "Stop a background process and its children; returns its exit status and unread output.",
  input: s.object({ id: s.string() }, ["id"]),
  output: s.object(
    {
      id: s.string("The process."),
      exit_code: s.integer("Its exit code (128 + N when ended by signal N)."),
      signal: s.string("Signal that ended it, if one did."),
      already_exited: s.boolean("It had exited before the stop."),
      output: s.string("Output not yet read (up to the output limit)."),
    },
    ["id", "exit_code", "already_exited", "output"],
  ),
  streaming: false,
  concurrency: { safe: true, keyFields: ["id"] },
  defaultTimeoutMs: 30_000,
  idempotent: true,
  modelText: { field: "output" },
  async invoke(args, ctx) {
    const job = jobFor(args.id, ctx.sessionId);
    const already = job.exit !== undefined;
    const exit = already ? job.exit! : await job.cmd.stop("cancelled");
    job.exit ??= exit;
    await job.drained;
    const { text } = takeUnread(job, settings.maxOutputBytes);
    return {
      id: job.id,
      exit_code: codeOf(exit),
      ...(exit.signal ? { signal: exit.signal } : {}),
      already_exited: already,
      output: text,
    };
  },
  preview(args, ctx) {
    const job = jobs.get(args.id);
    const mine = job && job.session === sessionOf(ctx.sessionId);
    return r.group([
      r.text(`Stop background process ${args.id} (SIGTERM to its group, then SIGKILL)`, "dim"),
      ...(mine ? [r.code(job.command, "bash")] : [r.text("no such process in this session", "error")]),
    ]);
  },
};

export const BACKGROUND_TOOLS = [
  backgroundStart,
  backgroundList,
  backgroundRead,
  backgroundWrite,
  backgroundStop,
];
