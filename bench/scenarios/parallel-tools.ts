// 5. Parallel tools: one model turn asks for 8 read-only calls that each take 200 ms. The
// tool phase runs from the moment the fake had that turn's request in full to the first
// byte of the next request, which carries the 8 results. Ours calls the bench's slow_lookup data source (declared safe:
// true, bench/fixtures/slow-tool); peers get the nearest faithful equivalent, 8 `sleep 0.2`
// calls of their shell tool.
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { toolResults } from "../lib/wire.ts";
import { isSideRequest, projectDir, runHarness, taskHandler } from "./common.ts";

const CALLS = 8;
const CALL_MS = 200;
const TARGET_MS = 300;

export const parallelTools: Scenario = {
  id: "parallel-tools",
  title: `Parallel tools (${CALLS} × ${CALL_MS} ms read-only calls in one turn)`,
  what:
    `The fake answers the first turn with ${CALLS} tool calls at once, each taking ${CALL_MS} ms; tool phase = from ` +
    "the moment the fake had that turn's request in full to the first byte of the next request (which carries " +
    `the ${CALLS} results), so it includes rendering the answer, planning and policy, the calls and sending the ` +
    `results. Run one after another they would take ${CALLS * CALL_MS} ms. Ours: the slow_lookup data source ` +
    "(bench/fixtures/slow-tool, safe: true). Peers: `sleep 0.2` through their shell tool, the nearest equivalent.",
  defaultRuns: 10,
  metrics: [
    { key: "tool_phase_ms", label: "tool phase", unit: "ms", better: "lower", p95: true },
    { key: "wall_ms", label: "wall", unit: "ms", better: "lower" },
  ],
  primary: "tool_phase_ms",
  applies: (h: Harness) => (h.tools ? undefined : "makes no tool calls"),
  async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
    const cwd = projectDir(h, ctx, h.id, { slowTool: true });
    const turn = Array.from({ length: CALLS }, (_, i) => ({ op: "slow" as const, id: i + 1, ms: CALL_MS }));
    const { result, requests, problems } = await runHarness(h, ctx, {
      cwd,
      prompt: "Look up records 1 to 8.",
      output: "text",
      handler: taskHandler(h, cwd, [turn]),
    });
    if (problems.length > 0) return { ok: false, reason: `script: ${problems[0]}` };
    const failed = failureReason(result);
    if (failed) return { ok: false, reason: failed };
    const turns = requests.filter((r) => !isSideRequest(r));
    const first = turns.find((r) => toolResults(r).length === 0);
    const next = turns.find((r) => toolResults(r).length >= CALLS);
    if (!first || !next) {
      const got = Math.max(0, ...turns.map((r) => toolResults(r).length));
      return {
        ok: false,
        reason: `the ${CALLS} results never came back together (most in one request: ${got})`,
      };
    }
    return {
      ok: true,
      metrics: {
        tool_phase_ms: nsToMs(next.receivedAt.hrtime - first.bodyCompleteAt.hrtime),
        wall_ms: nsToMs(result.exitAt - result.spawnAt),
      },
    };
  },
  targets(results: HarnessResult[]) {
    const ours = results.find((r) => r.kind === "ours");
    const med = ours?.metrics["tool_phase_ms"]?.median;
    if (med === undefined) {
      return [
        {
          target: `tool phase ≤ ${TARGET_MS} ms`,
          measured: "not measured",
          met: false,
          miss: ours?.reason ?? "",
        },
      ];
    }
    return [
      {
        target: `tool phase ≤ ${TARGET_MS} ms`,
        measured: fmt(med, "ms"),
        met: med <= TARGET_MS,
        ...(med > TARGET_MS ? { miss: `${fmt(med - TARGET_MS, "ms")} over` } : {}),
      },
    ];
  },
};
