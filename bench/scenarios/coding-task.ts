// 3. A scripted coding task: 50 tool calls (4 searches, 24 reads, 21 edits, 1 shell
// command), one per model turn, over a freshly generated fixture repository per run. Wall
// time from spawn to exit and the peak resident memory of the whole process tree, sampled
// from /proc every 10 ms (bench/lib/rss-sampler.ts). A run counts only if the repository
// ends in the expected state.
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { CHECK_OK, codingTask, generateRepo, TASK_PROMPT, verifyRepo } from "../fixtures/repo.ts";
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { toolResults } from "../lib/wire.ts";
import { isSideRequest, runHarness, taskHandler } from "./common.ts";

const MEMORY_TARGET_MB = 200;
const ACTIONS = codingTask();

let runCounter = 0;

export const codingTaskScenario: Scenario = {
  id: "coding-task",
  title: `Scripted coding task (${ACTIONS.length} tool calls)`,
  what:
    `The fake plays a model that makes ${ACTIONS.length} tool calls, one per turn, renaming a function in 20 ` +
    "modules of a generated repository (bench/fixtures/repo.ts), noting it in the README and running a check " +
    "script; each harness gets the calls in its own tool names (see the mapping below). Wall = spawn to exit. " +
    "Peak RSS = the largest sum of VmRSS over the harness process and all its descendants, sampled every 10 ms. " +
    "A run counts only if the repository ends in the expected state and the check script's output reached the model.",
  defaultRuns: 5,
  metrics: [
    { key: "wall_ms", label: "wall", unit: "ms", better: "lower", p95: true },
    { key: "peak_rss_mb", label: "peak RSS (tree)", unit: "MB", better: "lower" },
    { key: "processes", label: "processes at peak", unit: "count", better: "lower" },
    { key: "requests", label: "model requests", unit: "count", better: "lower" },
  ],
  primary: "wall_ms",
  applies: (h: Harness) => (h.tools ? undefined : "makes no tool calls"),
  async setup(ctx: ScenarioContext) {
    generateRepo(join(ctx.dir, "template"));
  },
  async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
    const cwd = join(ctx.dir, "runs", `${h.id}-${++runCounter}`);
    mkdirSync(cwd, { recursive: true });
    cpSync(join(ctx.dir, "template"), cwd, { recursive: true });
    h.setupProject(cwd, ctx.env);
    const { result, requests, problems } = await runHarness(h, ctx, {
      cwd,
      prompt: TASK_PROMPT,
      output: "text",
      handler: taskHandler(
        h,
        cwd,
        ACTIONS.map((a) => [a]),
      ),
      sampleMemory: true,
    });
    if (problems.length > 0) return { ok: false, reason: `script: ${problems[0]}` };
    const failed = failureReason(result);
    if (failed) return { ok: false, reason: failed };
    const turns = requests.filter((r) => !isSideRequest(r));
    const lastReq = turns[turns.length - 1];
    const results = lastReq ? toolResults(lastReq) : [];
    if (results.length < ACTIONS.length) {
      return { ok: false, reason: `only ${results.length}/${ACTIONS.length} tool results reached the model` };
    }
    const wrong = verifyRepo(cwd);
    if (wrong) return { ok: false, reason: `task not done: ${wrong}` };
    if (!results.some((r) => r.text.includes(CHECK_OK))) {
      return { ok: false, reason: "the check script's output never reached the model" };
    }
    return {
      ok: true,
      metrics: {
        wall_ms: nsToMs(result.exitAt - result.spawnAt),
        ...(result.memory
          ? { peak_rss_mb: result.memory.peakKb / 1024, processes: result.memory.peakProcesses }
          : {}),
        requests: requests.length,
      },
    };
  },
  targets(results: HarnessResult[]) {
    const ours = results.find((r) => r.kind === "ours");
    const wall = ours?.metrics["wall_ms"]?.median;
    const rss = ours?.metrics["peak_rss_mb"]?.median;
    const peers = results.filter((r) => r.kind === "peer" && r.metrics["wall_ms"]);
    const best = peers.length > 0 ? Math.min(...peers.map((r) => r.metrics["wall_ms"]!.median)) : undefined;
    const checks = [];
    if (wall === undefined || best === undefined) {
      checks.push({
        target: "wall ≤ ½ of the best peer",
        measured: wall === undefined ? "ours not measured" : "no peer measured",
        met: false,
        ...(wall === undefined && ours?.reason ? { miss: ours.reason } : {}),
      });
    } else {
      checks.push({
        target: "wall ≤ ½ of the best peer",
        measured: `ours ${fmt(wall, "ms")}, best peer ${fmt(best, "ms")} (${(wall / best).toFixed(2)}×)`,
        met: wall <= best / 2,
        ...(wall > best / 2 ? { miss: `${fmt(wall - best / 2, "ms")} over half the best peer` } : {}),
      });
    }
    checks.push(
      rss === undefined
        ? { target: `peak RSS < ${MEMORY_TARGET_MB} MB`, measured: "not measured", met: false }
        : {
            target: `peak RSS < ${MEMORY_TARGET_MB} MB`,
            measured: fmt(rss, "MB"),
            met: rss < MEMORY_TARGET_MB,
            ...(rss >= MEMORY_TARGET_MB ? { miss: `${fmt(rss - MEMORY_TARGET_MB, "MB")} over` } : {}),
          },
    );
    return checks;
  },
};
