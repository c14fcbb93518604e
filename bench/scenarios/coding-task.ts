// 3. A scripted coding task: 50 tool calls (4 searches, 24 reads, 21 edits, 1 shell
// command), one per model turn, over a freshly generated fixture repository per run. Wall
// time from spawn to exit and the peak resident memory of the whole process tree, sampled
// from /proc every 10 ms (bench/lib/rss-sampler.ts). A run counts only if the repository
// ends in the expected state.
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { CHECK_OK, codingTask, generateRepo, TASK_PROMPT, verifyRepo } from "../fixtures/repo.ts";
import type { Harness } from "../harnesses/types.ts";
import { billRun, type RunBill } from "../lib/billing.ts";
import type { ExtraTable, HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason } from "../lib/spawn.ts";
import { median, nsToMs } from "../lib/stats.ts";
import { kernelSteps, requestGaps } from "../lib/step-overhead.ts";
import { toolResults } from "../lib/wire.ts";
import { isSideRequest, runHarness, taskHandler } from "./common.ts";

const MEMORY_TARGET_MB = 200;
const ACTIONS = codingTask();

let runCounter = 0;
/** The per-request bills of each harness's last counted run, for the per-step table. */
const lastBills = new Map<string, { label: string; bill: RunBill }>();

const tokens = (n: number) => Math.round(n).toLocaleString("en-US");
const usd = (n: number | undefined) => (n === undefined ? "–" : `$${n.toFixed(4)}`);

export const codingTaskScenario: Scenario = {
  id: "coding-task",
  title: `Scripted coding task (${ACTIONS.length} tool calls)`,
  what:
    `The fake plays a model that makes ${ACTIONS.length} tool calls, one per turn, renaming a function in 20 ` +
    "modules of a generated repository (bench/fixtures/repo.ts), noting it in the README and running a check " +
    "script; each harness gets the calls in its own tool names (see the mapping below). Wall = spawn to exit. " +
    "Peak RSS = the largest sum of VmRSS over the harness process and all its descendants, sampled every 10 ms. " +
    "A run counts only if the repository ends in the expected state and the check script's output reached the model. " +
    "Billing: the fake bills every request by prompt-prefix match the way its vendor does (Anthropic explicit " +
    "cache_control breakpoints with the 20-block lookback and per-model minimums; OpenAI's automatic prefix " +
    "caching), each run starting with a cold cache; input per step is split into uncached input, cache writes " +
    "and cache reads, and cost is each request priced at its model's list price (bench/lib/billing.ts). " +
    "Step gap = a model request received in full → the next request's first byte, median over the run's steps " +
    "(the harness reading the answer, running the tool, sending the next request). For ours also, from the " +
    "kernel's AGENT_TRACE timeline: model stream end → next model attempt minus the tool's own run " +
    "(bench/lib/step-overhead.ts), the kernel's own overhead per step.",
  defaultRuns: 5,
  metrics: [
    { key: "wall_ms", label: "wall", unit: "ms", better: "lower", p95: true },
    { key: "peak_rss_mb", label: "peak RSS (tree)", unit: "MB", better: "lower" },
    { key: "processes", label: "processes at peak", unit: "count", better: "lower" },
    { key: "requests", label: "model requests", unit: "count", better: "lower" },
    { key: "step_gap_ms", label: "step gap (request → next request)", unit: "ms", better: "lower" },
    {
      key: "kernel_step_ms",
      label: "kernel overhead / step (trace, tool excluded)",
      unit: "ms",
      better: "lower",
    },
    { key: "tool_step_ms", label: "tool run / step (trace)", unit: "ms", better: "lower" },
    { key: "cost_usd", label: "cost", unit: "USD", better: "lower" },
    { key: "cost_per_step_usd", label: "cost / step", unit: "USD", better: "lower" },
    { key: "uncached_per_step", label: "uncached input / step", unit: "tokens", better: "lower" },
    { key: "written_per_step", label: "cache writes / step", unit: "tokens", better: "lower" },
    { key: "read_per_step", label: "cache reads / step", unit: "tokens", better: "lower" },
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
    // Ours writes its step timeline, for the kernel's own share of each step.
    const traceFile = join(ctx.dir, "runs", `${h.id}-${runCounter}.trace.jsonl`);
    const { result, requests, problems } = await runHarness(h, ctx, {
      ...(h.kind === "ours" ? { env: { AGENT_TRACE: traceFile } } : {}),
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
    const bill = billRun(requests);
    lastBills.set(h.id, { label: h.label, bill });
    const steps = Math.max(1, bill.steps.length);
    const gaps = requestGaps(turns);
    const kernel = h.kind === "ours" ? kernelSteps(traceFile) : [];
    return {
      ok: true,
      metrics: {
        wall_ms: nsToMs(result.exitAt - result.spawnAt),
        ...(result.memory
          ? { peak_rss_mb: result.memory.peakKb / 1024, processes: result.memory.peakProcesses }
          : {}),
        requests: requests.length,
        ...(gaps.length > 0 ? { step_gap_ms: median(gaps) } : {}),
        ...(kernel.length > 0
          ? {
              kernel_step_ms: median(kernel.map((k) => k.overheadMs)),
              tool_step_ms: median(kernel.map((k) => k.toolMs)),
            }
          : {}),
        ...(bill.costUsd !== undefined
          ? { cost_usd: bill.costUsd, cost_per_step_usd: bill.costUsd / steps }
          : {}),
        uncached_per_step: bill.uncached / steps,
        written_per_step: bill.written / steps,
        read_per_step: bill.read / steps,
      },
    };
  },
  tables(results: HarnessResult[]): ExtraTable[] {
    const shown = results.filter((r) => r.status === "ok" && lastBills.has(r.id));
    if (shown.length === 0) return [];
    const bills = shown.map((r) => lastBills.get(r.id)!);
    const summary: string[][] = [
      [
        "harness",
        "requests",
        "uncached input",
        "cache writes",
        "cache reads",
        "cost",
        "same requests uncached",
        "saved",
      ],
      ...bills.map(({ label, bill }) => [
        label,
        String(bill.steps.length),
        tokens(bill.uncached),
        tokens(bill.written),
        tokens(bill.read),
        usd(bill.costUsd),
        usd(bill.uncachedCostUsd),
        bill.costUsd !== undefined && bill.uncachedCostUsd
          ? `${((1 - bill.costUsd / bill.uncachedCostUsd) * 100).toFixed(0)}%`
          : "–",
      ]),
    ];
    const longest = Math.max(...bills.map((b) => b.bill.steps.length));
    const perStep: string[][] = [["step", ...bills.map((b) => b.label)]];
    for (let i = 0; i < longest; i++) {
      perStep.push([
        String(i + 1),
        ...bills.map(({ bill }) => {
          const s = bill.steps[i];
          if (!s) return "";
          const w = s.cacheWriteTokens + s.cacheWriteLongTokens;
          return `${tokens(s.inputTokens)} / ${tokens(w)} / ${tokens(s.cacheReadTokens)} · ${usd(s.costUsd)}`;
        }),
      ]);
    }
    return [
      {
        title: "Billed input and cost of the last run",
        what:
          "Totals over every model request of each harness's last counted run (side requests included), as the " +
          "fake billed them, and what the same requests would have cost with no prompt caching.",
        rows: summary,
      },
      {
        title: "Per step: uncached input / cache writes / cache reads (tokens) · cost",
        what: "Each model request of the same runs, in order.",
        rows: perStep,
      },
    ];
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
