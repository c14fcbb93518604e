// 7. The commands a user runs outside a session, and the TUI's start (ours only): spawn to
// exit of `agent providers`, `agent validate` and `agent mcp list` on the benchmark's
// project, whose describe cache the untimed warm-up fills, and spawn → the interactive
// TUI's first frame that takes input (its "starting" line, painted once the terminal is in
// raw mode and keys are read; what is typed from then on is queued for the session) in a
// pseudo-terminal (`script`, 120×40), after which the run is ended.
import { agentBin, oursEnv } from "../harnesses/ours.ts";
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext, TargetCheck } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason, runProcess } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { projectDir } from "./common.ts";

const TUI_READY = "Enter queues the message";
const TARGETS = { providers_ms: 1_000, validate_ms: 1_000, tui_ready_ms: 500 } as const;

async function command(h: Harness, ctx: ScenarioContext, args: string[]): Promise<number | string> {
  const result = await runProcess(
    {
      command: process.execPath,
      args: [...(h.nodeFlags ?? []), agentBin(ctx.env.root), ...args],
      env: oursEnv(ctx.home(h)),
      cwd: projectDir(h, ctx),
    },
    { timeoutMs: ctx.timeoutMs },
  );
  const failed = failureReason(result);
  if (failed) return `agent ${args.join(" ")}: ${failed}`;
  return nsToMs(result.exitAt - result.spawnAt);
}

async function tuiReady(h: Harness, ctx: ScenarioContext): Promise<number | string> {
  const agent = [process.execPath, ...(h.nodeFlags ?? []), agentBin(ctx.env.root)]
    .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
    .join(" ");
  const result = await runProcess(
    {
      command: "script",
      args: ["-qfec", `stty cols 120 rows 40; exec ${agent} run`, "/dev/null"],
      env: { ...oursEnv(ctx.home(h)), TERM: "xterm-256color" },
      cwd: projectDir(h, ctx),
    },
    { timeoutMs: ctx.timeoutMs, watchFor: TUI_READY, stopOnWatch: true },
  );
  if (result.watchedAt === undefined)
    return `the TUI never showed "${TUI_READY}": ${failureReason(result) ?? result.stdout.slice(-200)}`;
  return nsToMs(result.watchedAt - result.spawnAt);
}

export const commands: Scenario = {
  id: "commands",
  title: "Commands outside a session, and the TUI's start",
  what:
    "Ours only. Spawn to exit of `agent providers`, `agent validate` and `agent mcp list` on the benchmark's " +
    "project (22 tools; the warm-up run fills the describe cache, as any earlier command or run would), and " +
    `spawn of \`agent run\` in a pseudo-terminal (\`script\`, 120×40) to the TUI's banner (\`${TUI_READY}\`, ` +
    "the first frame drawn with the prompt reading keys; the session is created behind it).",
  defaultRuns: 5,
  metrics: [
    { key: "providers_ms", label: "agent providers", unit: "ms", better: "lower", p95: true },
    { key: "validate_ms", label: "agent validate", unit: "ms", better: "lower", p95: true },
    { key: "mcp_list_ms", label: "agent mcp list", unit: "ms", better: "lower" },
    { key: "tui_ready_ms", label: "TUI ready for input", unit: "ms", better: "lower", p95: true },
  ],
  primary: "validate_ms",
  applies: (h: Harness) => (h.kind === "ours" ? undefined : "these are our own commands"),
  async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
    const metrics: Record<string, number> = {};
    const runs: [string, () => Promise<number | string>][] = [
      ["providers_ms", () => command(h, ctx, ["providers"])],
      ["validate_ms", () => command(h, ctx, ["validate"])],
      ["mcp_list_ms", () => command(h, ctx, ["mcp", "list"])],
      ["tui_ready_ms", () => tuiReady(h, ctx)],
    ];
    for (const [key, run] of runs) {
      const v = await run();
      if (typeof v === "string") return { ok: false, reason: v };
      metrics[key] = v;
    }
    return { ok: true, metrics };
  },
  targets(results: HarnessResult[]): TargetCheck[] {
    const ours = results.find((r) => r.kind === "ours");
    return Object.entries(TARGETS).map(([key, target]) => {
      const label = commands.metrics.find((m) => m.key === key)!.label;
      const med = ours?.metrics[key]?.median;
      if (med === undefined)
        return {
          target: `${label} ≤ ${fmt(target, "ms")}`,
          measured: "not measured",
          met: false,
          miss: ours?.reason ?? "",
        };
      return {
        target: `${label} ≤ ${fmt(target, "ms")}`,
        measured: fmt(med, "ms"),
        met: med <= target,
        ...(med > target ? { miss: `${fmt(med - target, "ms")} over` } : {}),
      };
    });
  },
};
