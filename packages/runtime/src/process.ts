// Starting a plugin process: which program runs it, its own process group (so the
// whole tree can be killed), the strict first stdout line, and a last-resort kill of
// every plugin when the kernel process exits.
import type { ChildProcess } from "node:child_process";
import { extname } from "node:path";
import { LineSplitter, quote } from "@pluggableharness/goplugin";
import { spawnDetached } from "./prelaunch.ts";

const NODE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);

/** A `.ts`/`.js` plugin runs on this very Node binary; anything else is executed. */
export function resolveCommand(
  command: string,
  args: readonly string[],
  nodeArgs: readonly string[] = [],
): { file: string; args: string[]; node: boolean } {
  if (NODE_EXTENSIONS.has(extname(command).toLowerCase())) {
    return { file: process.execPath, args: [...nodeArgs, command, ...args], node: true };
  }
  return { file: command, args: [...args], node: false };
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous last resort: if the kernel exits without shutting plugins down,
  // take their process groups with it.
  process.once("exit", () => {
    for (const child of live) killGroup(child, "SIGKILL");
  });
}

/** Signals the child's whole process group (it was spawned detached, as leader). */
export function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

export interface SpawnSpec {
  file: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd?: string;
}

export function spawnPlugin(spec: SpawnSpec): ChildProcess {
  return trackPlugin(spawnDetached({ file: spec.file, args: spec.args, env: spec.env, cwd: spec.cwd }));
}

/** Takes a plugin process (spawned here or prelaunched) into the kill-at-exit set. */
export function trackPlugin(child: ChildProcess): ChildProcess {
  installExitHook();
  live.add(child);
  child.once("exit", () => live.delete(child));
  child.once("error", () => live.delete(child));
  return child;
}

/** PIDs of plugin processes this runtime started and has not seen exit. */
export function livePluginPids(): number[] {
  return [...live].flatMap((c) => (c.pid === undefined ? [] : [c.pid]));
}

export type FirstLineOutcome =
  | { kind: "line"; line: string }
  | { kind: "exited"; code: number | null; signal: NodeJS.Signals | null }
  | { kind: "spawn_error"; error: Error }
  | { kind: "timeout" }
  | { kind: "too_long"; text: string };

/**
 * Resolves with the first stdout line, or with why there is none. Output after that
 * line goes to `rest`, split into lines.
 */
export function readFirstLine(
  child: ChildProcess,
  timeoutMs: number,
  rest: (line: string) => void,
  maxBytes = 64 * 1024,
): Promise<FirstLineOutcome> {
  return new Promise((resolve) => {
    let buffered = "";
    let done = false;
    const restSplitter = new LineSplitter(rest);
    const finish = (outcome: FirstLineOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      child.off("exit", onExit);
      child.off("error", onError);
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      if (done) {
        restSplitter.push(chunk);
        return;
      }
      buffered += chunk.toString("utf8");
      const nl = buffered.indexOf("\n");
      if (nl >= 0) {
        const line = buffered.slice(0, nl);
        const after = buffered.slice(nl + 1);
        finish({ kind: "line", line });
        if (after) restSplitter.push(after);
      } else if (buffered.length > maxBytes) {
        finish({ kind: "too_long", text: buffered });
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      // Output may still be in the pipe: decide once stdout ends (or shortly after).
      const decide = () =>
        finish(buffered ? { kind: "line", line: buffered } : { kind: "exited", code, signal });
      if (child.stdout!.readableEnded) decide();
      else {
        child.stdout!.once("end", decide);
        setTimeout(decide, 200).unref();
      }
    };
    const onError = (error: Error) => finish({ kind: "spawn_error", error });
    const timer = setTimeout(() => finish({ kind: "timeout" }), timeoutMs);
    child.stdout!.on("data", onData);
    child.stdout!.on("end", () => restSplitter.flush());
    child.once("exit", onExit);
    child.once("error", onError);
  });
}

/** What the plugin printed, for error messages. */
export function describeOutput(text: string): string {
  return text === "" ? "nothing" : quote(text);
}
