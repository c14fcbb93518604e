// 4. Replay of a 10,000-event session: `agent sessions replay <id>` (and `show <id>`) on a
// session file generated through the real state backend (bench/fixtures/session.ts). Wall
// time from spawn to exit, which includes the CLI's start-up and whatever plugins replay
// launches to re-render the recorded events.
import { join } from "node:path";
import { generateSession } from "../fixtures/session.ts";
import { agentBin, oursEnv } from "../harnesses/ours.ts";
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason, runProcess } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { projectDir } from "./common.ts";

const EVENTS = 10_000;
const TARGET_MS = 1_000;

/** One generated session per HOME (the profiling run has a HOME of its own). */
const sessions = new Map<string, string>();

async function timed(h: Harness, ctx: ScenarioContext, sub: "replay" | "show"): Promise<Sample> {
  const home = ctx.home(h);
  let id = sessions.get(home);
  if (id === undefined) {
    id = generateSession(ctx.env.root, join(home, ".local", "state", "agent", "sessions"), EVENTS);
    sessions.set(home, id);
  }
  const result = await runProcess(
    {
      command: process.execPath,
      args: [...(h.nodeFlags ?? []), agentBin(ctx.env.root), "sessions", sub, id],
      env: oursEnv(home),
      cwd: projectDir(h, ctx),
    },
    { timeoutMs: ctx.timeoutMs },
  );
  const failed = failureReason(result);
  if (failed) return { ok: false, reason: `agent sessions ${sub}: ${failed}` };
  if (result.stdoutBytes === 0) return { ok: false, reason: `agent sessions ${sub} printed nothing` };
  return { ok: true, metrics: { ms: nsToMs(result.exitAt - result.spawnAt), bytes: result.stdoutBytes } };
}

export const replay: Scenario = {
  id: "replay",
  title: `Replay of a ${EVENTS.toLocaleString("en-US")}-event session`,
  what:
    `A completed session of ${EVENTS.toLocaleString("en-US")} events (2,500 read_file round trips: assistant message, ` +
    "tool_call, tool_result, user message; real event.v1 payloads; the producer versions of this checkout) is " +
    "written through the state backend into the harness's fresh state directory. Measured: spawn to exit of " +
    "`agent sessions replay <id>` and of `agent sessions show <id>`, output to a pipe.",
  defaultRuns: 10,
  metrics: [
    { key: "replay_ms", label: "sessions replay", unit: "ms", better: "lower", p95: true },
    { key: "show_ms", label: "sessions show", unit: "ms", better: "lower" },
  ],
  primary: "replay_ms",
  applies: (h: Harness) =>
    h.kind === "ours"
      ? undefined
      : "no peer has a command that re-renders a stored session without calling the model",
  async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
    const r = await timed(h, ctx, "replay");
    if (!r.ok) return r;
    const s = await timed(h, ctx, "show");
    return {
      ok: true,
      metrics: { replay_ms: r.metrics["ms"]!, ...(s.ok ? { show_ms: s.metrics["ms"]! } : {}) },
    };
  },
  targets(results: HarnessResult[]) {
    const ours = results.find((r) => r.kind === "ours");
    const med = ours?.metrics["replay_ms"]?.median;
    if (med === undefined) {
      return [
        {
          target: `≤ ${fmt(TARGET_MS, "ms")}`,
          measured: "not measured",
          met: false,
          miss: ours?.reason ?? "",
        },
      ];
    }
    return [
      {
        target: `≤ ${fmt(TARGET_MS, "ms")}`,
        measured: fmt(med, "ms"),
        met: med <= TARGET_MS,
        ...(med > TARGET_MS ? { miss: `${fmt(med - TARGET_MS, "ms")} over` } : {}),
      },
    ];
  },
};
