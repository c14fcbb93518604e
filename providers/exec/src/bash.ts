// bash: runs one command in call_context.working_directory and streams its output.

import { constants } from "node:os";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  exitStatus,
  outputChunk,
  partialResult,
  r,
  s,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { settings } from "./config.ts";
import { launch, plannedCwd } from "./launch.ts";

export { forgetEnvironment } from "./launch.ts";

interface BashArgs {
  command: string;
  timeout_ms?: number;
  description?: string;
  stdin?: string;
  pty?: boolean;
}

/** Shell convention: a process killed by signal N reports 128 + N. */
function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const n = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return n === undefined ? -1 : 128 + n;
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
    "Run a command with bash -c; returns its output and exit code. The working directory and exported variables carry over between calls. stdin is closed unless given; pty runs it on a terminal. Times out after 2 minutes by default (at most 10); use background_start for servers and watchers.",
  input: s.object(
    {
      command: s.string(),
      timeout_ms: s.integer(),
      description: s.string("A few words shown to the approver."),
      stdin: s.string(),
      pty: s.boolean(),
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
    const launched = await launch(
      {
        command: args.command,
        ...(args.pty ? { pty: true } : {}),
        ...(args.stdin !== undefined ? { stdin: { text: args.stdin } } : {}),
        keepState: true,
        maxOutputBytes: settings.maxOutputBytes,
      },
      ctx,
    );
    let text = "";
    for (const notice of launched.notices) {
      text += notice;
      yield outputChunk("stderr", notice);
    }
    const started = Date.now();
    const cmd = launched.cmd;
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
      const reset = launched.finish();
      if (reset) {
        text += reset;
        yield outputChunk("stderr", reset);
      }
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
      launched.finish();
    }
  },

  async preview(args, ctx) {
    const timeout = args.timeout_ms ?? settings.defaultTimeoutMs;
    const where = await plannedCwd(ctx);
    return r.group([
      r.text(`Run in ${where}, timeout ${timeout} ms${args.pty ? ", on a terminal" : ""}`, "dim"),
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
