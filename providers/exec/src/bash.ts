// bash: runs one command in call_context.working_directory and streams its output.

import { accessSync, constants as constants_fs } from "node:fs";
import { stat } from "node:fs/promises";
import { constants } from "node:os";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  exitStatus,
  outputChunk,
  partialResult,
  r,
  s,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";
import { FORWARDER, startEgress } from "./egress.ts";
import { RunningCommand } from "./process.ts";
import { probeSandbox, removePlaceholders, type Wrapped, wrap } from "./sandbox.ts";

/** Where the egress forwarder listens inside the sandbox (its own network namespace). */
const EGRESS_PORT = 3128;

interface BashArgs {
  command: string;
  timeout_ms?: number;
  description?: string;
}

/** Variables the plugin runtime sets for the plugin itself; commands do not inherit them. */
function ownEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("PLUGIN_") || k === "PLUGGABLEHARNESS_PLUGIN" || k.startsWith("NODE_")) continue;
    env[k] = v;
  }
  return env;
}

interface ExecEnv {
  variables: NodeJS.ProcessEnv;
  protectedPaths: string[];
}

let execEnv: Promise<ExecEnv> | undefined;

/**
 * The user's environment with secrets withheld and the kernel-owned paths, from the
 * kernel (ExecEnvironment). A kernel that does not serve it leaves the plugin's own,
 * allowlisted environment and no protected paths.
 */
function commandEnvironment(ctx: ToolContext): Promise<ExecEnv> {
  execEnv ??= (async () => {
    try {
      const k = await ctx.kernel.service();
      const r = await k.execEnvironment({ secretPatterns: settings.secretPatterns }, { timeoutMs: 5_000 });
      return { variables: { ...r.variables }, protectedPaths: [...r.protectedPaths] };
    } catch {
      return { variables: ownEnvironment(), protectedPaths: [] };
    }
  })();
  return execEnv;
}

/** For tests: ask the kernel again. */
export function forgetEnvironment(): void {
  execEnv = undefined;
}

let warnedUnconfined = false;

/** How the command will run: in the sandbox, or unconfined (with the notice to give once). */
function sandboxFor(
  cwd: string,
  env: ExecEnv,
  argv: readonly string[],
  egressDir?: string,
): { wrapped?: Wrapped; notice?: string } {
  if (settings.sandbox === "off") return {};
  const probe = probeSandbox();
  if (!probe.ok) {
    if (settings.sandbox === "required") {
      throw new ToolFailure(
        "execution_failed",
        `the exec provider requires its sandbox (sandbox = "required"), and it cannot run here: ${probe.reason}`,
      );
    }
    if (warnedUnconfined) return {};
    warnedUnconfined = true;
    return {
      notice: `[sandbox unavailable: ${probe.reason}. Commands run unconfined; set sandbox = "required" in the exec provider block to refuse them, or "off" to silence this]\n`,
    };
  }
  return {
    wrapped: wrap(
      {
        bwrap: probe.bwrap,
        writable: [...(settings.jail ? settings.jail.roots : [cwd]), ...(egressDir ? [egressDir] : [])],
        protectedPaths: env.protectedPaths,
        network: settings.network,
        cwd,
        // The command's leader is spawned detached (a new session, no terminal): staying in
        // its group lets every group signal reach the sandbox's init (see SandboxSpec).
        newSession: false,
      },
      argv,
    ),
  };
}

/** Shell convention: a process killed by signal N reports 128 + N. */
function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const n = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return n === undefined ? -1 : 128 + n;
}

async function workingDirectory(cwd: string | undefined): Promise<string> {
  if (!cwd) throw new ToolFailure("invalid_arguments", "bash needs call_context.working_directory");
  const jail = settings.jail;
  const dir = jail ? (await jail.resolve(cwd, undefined)).real : cwd;
  const st = await stat(dir).catch(() => undefined);
  if (!st) throw new ToolFailure("not_found", `working directory ${cwd} does not exist`);
  if (!st.isDirectory())
    throw new ToolFailure("invalid_arguments", `working directory ${cwd} is not a directory`);
  return dir;
}

function timeoutOf(args: BashArgs): number {
  const t = args.timeout_ms ?? settings.defaultTimeoutMs;
  if (t < 1 || t > settings.maxTimeoutMs) {
    throw new ToolFailure("invalid_arguments", `timeout_ms must be between 1 and ${settings.maxTimeoutMs}`);
  }
  return t;
}

export const bashTool: ToolDefinition<BashArgs> = {
  name: "bash",
  kind: "resource",
  risk: "high",
  description:
    "Run a shell command with bash -c in the working directory and return its combined output and exit code. " +
    "Output streams live. stdin is closed, so interactive programs get end-of-file. The command is stopped " +
    "(SIGTERM, then SIGKILL) at its timeout (default 2 minutes, at most 10); background processes it leaves " +
    "running are stopped when it exits. Output beyond the provider's limit is dropped with a notice. " +
    "Where the sandbox runs (Linux with bubblewrap), only the project's roots and a private /tmp are writable, " +
    "the agent's own files are read-only, other processes are invisible and there is no network unless configured.",
  input: s.object(
    {
      command: s.string("The command line to run."),
      timeout_ms: s.integer("Deadline in milliseconds (default 120000, at most 600000)."),
      description: s.string("A few words on what the command does, shown to the person approving it."),
    },
    ["command"],
  ),
  output: s.object(
    {
      exit_code: s.integer("Exit code; 128 + N when the shell was killed by signal N."),
      signal: s.string("Signal that ended the shell, if one did."),
      output: s.string("stdout and stderr as they arrived, up to the output limit."),
      truncated: s.boolean("Output beyond the limit was dropped."),
      dropped_bytes: s.integer("Bytes of output dropped."),
      duration_ms: s.integer("Wall time of the command."),
    },
    ["exit_code", "output", "truncated", "dropped_bytes", "duration_ms"],
  ),
  streaming: true,
  // Any two commands may touch the same files, and no argument names what a command
  // touches, so bash takes the provider-wide lock (the seed forbids safe: true here).
  concurrency: { safe: false },
  // The command's own deadline (timeout_ms, at most 10 minutes) fires first and is
  // reported on the stream; the kernel's deadline is a backstop behind it.
  defaultTimeoutMs: 615_000,
  idempotent: false,
  modelText: { field: "output" },

  async *invoke(args, ctx) {
    if (args.command.trim() === "") throw new ToolFailure("invalid_arguments", "command is empty");
    const timeoutMs = timeoutOf(args);
    const cwd = await workingDirectory(ctx.workingDirectory);
    const env = await commandEnvironment(ctx);
    // Hosts on the allowlist are reached through a proxy the sandbox can talk to.
    const egress =
      !settings.network && settings.allowedHosts.length > 0 && settings.sandbox !== "off" && probeSandbox().ok
        ? await startEgress(settings.allowedHosts)
        : undefined;
    const shellArgv = [settings.shell, "-c", args.command];
    const argv = egress
      ? [
          process.execPath,
          "--input-type=module",
          "-e",
          FORWARDER,
          egress.socket,
          String(EGRESS_PORT),
          ...shellArgv,
        ]
      : shellArgv;
    let box: ReturnType<typeof sandboxFor>;
    try {
      box = sandboxFor(cwd, env, argv, egress?.dir);
    } catch (err) {
      egress?.close();
      throw err;
    }
    if (box.wrapped) {
      // Inside the sandbox a missing shell would be bwrap's error; say it the same way as outside.
      try {
        accessSync(settings.shell, constants_fs.X_OK);
      } catch (err) {
        throw new ToolFailure(
          "execution_failed",
          `cannot start ${settings.shell}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        );
      }
    }
    if (box.notice) {
      yield outputChunk("stderr", box.notice);
      void ctx.kernel.log("warn", box.notice.trim()).catch(() => {});
    }
    const started = Date.now();
    const cmd = new RunningCommand({
      shell: settings.shell,
      command: args.command,
      cwd,
      env: box.wrapped ? { ...env.variables, TMPDIR: "/tmp" } : env.variables,
      maxOutputBytes: settings.maxOutputBytes,
      killGraceMs: settings.killGraceMs,
      ...(box.wrapped ? { wrapper: box.wrapped } : {}),
    });
    if (box.wrapped && box.wrapped.placeholders.length > 0) {
      const placeholders = box.wrapped.placeholders;
      void cmd.done.then(() => removePlaceholders(placeholders));
    }
    if (egress) void cmd.done.then(() => egress.close());
    const state = (): JsonObject => ({
      pid: cmd.pid ?? -1,
      output_bytes_streamed: cmd.outputBytes,
      sigterm_sent: cmd.sentSigterm,
      sigkill_sent: cmd.sentSigkill,
    });
    ctx.report({ command_started: true, ...state() });
    const onAbort = () => void cmd.stop("cancelled");
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => void cmd.stop("timeout"), timeoutMs);
    const decoder = new TextDecoder();
    let text = "";
    let exited = false;
    try {
      for await (const ev of cmd.events.drain()) {
        if (ev.kind === "spawn_error") {
          throw new ToolFailure(
            "execution_failed",
            `cannot start ${settings.shell}: ${ev.error.code ?? ev.error.message}`,
          );
        }
        if (ev.kind === "dropped") {
          const notice = `\n[output truncated: ${ev.bytes} more bytes were dropped after the ${settings.maxOutputBytes}-byte limit]\n`;
          text += notice;
          yield outputChunk("stderr", notice);
          continue;
        }
        text += decoder.decode(ev.data, { stream: true });
        ctx.report({ output_bytes_streamed: cmd.outputBytes });
        yield outputChunk(ev.stream, ev.data);
      }
      text += decoder.decode();
      const exit = await cmd.done;
      exited = true;
      const code = exitCodeOf(exit.code, exit.signal);
      const what = {
        ...state(),
        exited: true,
        exit_code: code,
        ...(exit.signal ? { signal: exit.signal } : {}),
      };
      ctx.report(what);
      yield exitStatus(code, exit.signal ?? undefined);
      if (cmd.stopReason === "cancelled")
        return { exit_code: code, output: text, truncated: false, dropped_bytes: 0, duration_ms: 0 };
      if (cmd.stopReason === "timeout") {
        const how = `SIGTERM sent to the process group${cmd.sentSigkill ? ", then SIGKILL" : ""}`;
        const notice = `\n[timed out after ${timeoutMs} ms: ${how}; the output above is all it wrote]\n`;
        yield outputChunk("stderr", notice);
        yield partialResult({ timed_out: true, ...what, note: notice.trim() });
        throw new ToolFailure("timeout", `the command timed out after ${timeoutMs} ms (${how})`, {
          details: { ...what, output_tail: text.slice(-4000) },
        });
      }
      return {
        exit_code: code,
        ...(exit.signal ? { signal: exit.signal } : {}),
        output: text,
        truncated: cmd.droppedBytes > 0,
        dropped_bytes: cmd.droppedBytes,
        duration_ms: Date.now() - started,
      };
    } finally {
      clearTimeout(timer);
      ctx.signal.removeEventListener("abort", onAbort);
      if (!exited) {
        // Stopped early (cancelled while yielding): take the process group down first.
        await cmd.stop("cancelled");
        ctx.report({ ...state(), exited: true });
      }
    }
  },

  preview(args, ctx) {
    const timeout = args.timeout_ms ?? settings.defaultTimeoutMs;
    return r.group([
      r.text(`Run in ${ctx.workingDirectory ?? "(no working directory)"}, timeout ${timeout} ms`, "dim"),
      ...(args.description ? [r.text(args.description)] : []),
      r.code(args.command, "bash"),
    ]);
  },

  render(input) {
    if (input.kind !== "tool_result") return undefined;
    const p = input.payload;
    const output = typeof p?.["output"] === "string" ? p["output"] : input.output;
    const code = p ? Number(p["exit_code"]) : input.exitStatus?.exitCode;
    const head =
      code === undefined
        ? r.text(input.error ? `failed: ${input.error.message}` : "no exit status", "error")
        : r.text(`exit ${code}${p ? ` in ${p["duration_ms"]} ms` : ""}`, code === 0 ? "success" : "error");
    return r.group([head, r.collapsible("output", [r.code(output)], output.split("\n").length > 20)]);
  },
};
