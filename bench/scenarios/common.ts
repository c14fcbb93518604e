// Helpers shared by the scenarios: a working directory per harness, one timed run with a
// script handler installed on the fake, and the scripted-task handler that renders logical
// actions as each harness's own tool calls.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import type { RecordedRequest, ScriptedResponse } from "@pluggableharness/fake-vendors";
import type { Action, Harness, ProjectOptions } from "../harnesses/types.ts";
import type { Handler, RunRequests } from "../lib/fake.ts";
import type { ScenarioContext } from "../lib/scenario.ts";
import { type RunResult, runProcess } from "../lib/spawn.ts";
import { declaredTools, isModelRequest, toolResults } from "../lib/wire.ts";

export interface HarnessRun {
  result: RunResult;
  requests: RecordedRequest[];
  /** Every other call the fake received during the run (token counting, HEAD /, telemetry). */
  other: RecordedRequest[];
  /** Problems the script handler met (e.g. a tool the harness does not declare). */
  problems: string[];
}

/** A working directory for `h` under the scenario's folder, created (and configured) once. */
export function projectDir(h: Harness, ctx: ScenarioContext, name = h.id, options?: ProjectOptions): string {
  const dir = join(ctx.dir, name);
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true });
    h.setupProject(dir, ctx.env, options);
  }
  return dir;
}

export async function runHarness(
  h: Harness,
  ctx: ScenarioContext,
  options: {
    cwd: string;
    prompt: string;
    output: "text" | "stream";
    handler: (problems: string[]) => Handler;
    sampleMemory?: boolean;
    watchFor?: string;
    /** Variables added to the harness's environment (ours' AGENT_TRACE file, say). */
    env?: Record<string, string>;
  },
): Promise<HarnessRun> {
  const problems: string[] = [];
  const view: RunRequests = ctx.fake.beginRun(options.handler(problems));
  const spec = h.spec(
    { home: ctx.home(h), cwd: options.cwd, prompt: options.prompt, output: options.output },
    ctx.env,
  );
  if (options.env) spec.env = { ...spec.env, ...options.env };
  const result = await runProcess(spec, {
    timeoutMs: ctx.timeoutMs,
    ...(options.sampleMemory ? { sampleMemory: true } : {}),
    ...(options.watchFor ? { watchFor: options.watchFor } : {}),
    ...(ctx.trace ? { lineTimes: true } : {}),
  });
  const requests = view.model.filter(isModelRequest);
  const other = [...view.other, ...view.model.filter((r) => !isModelRequest(r))];
  ctx.observe?.({ result, requests, other });
  return { result, requests, other, problems };
}

/** Requests that declare no tools are side calls (opencode's title, for one): answered, not counted. */
export function isSideRequest(r: RecordedRequest): boolean {
  return declaredTools(r).length === 0;
}

export const SIDE_ANSWER: ScriptedResponse = { kind: "text", text: "Benchmark task" };

/**
 * Answers each turn of a scripted task. The step is the number of tool results the request
 * carries, so a retried request gets the same answer and side calls never shift the script.
 */
export function taskHandler(
  h: Harness,
  cwd: string,
  turns: readonly (readonly Action[])[],
  finalText = "Done.",
): (problems: string[]) => Handler {
  return (problems) => (req) => {
    if (isSideRequest(req)) return SIDE_ANSWER;
    const done = toolResults(req).length;
    let step = 0;
    for (let seen = 0; step < turns.length && seen + turns[step]!.length <= done; step++) {
      seen += turns[step]!.length;
    }
    if (step >= turns.length) return { kind: "text", text: finalText };
    try {
      const declared = declaredTools(req);
      return { kind: "tool_calls", calls: turns[step]!.map((a) => h.tools!.call(a, { cwd, declared })) };
    } catch (e) {
      problems.push((e as Error).message);
      return { kind: "error", status: 400, message: `benchmark script: ${(e as Error).message}` };
    }
  };
}
