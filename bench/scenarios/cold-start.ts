// 1. Cold start to first request: process spawn -> the first byte of the first model
// request at the fake vendor. The script answers "OK"; the run must exit 0.
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { isSideRequest, projectDir, runHarness, SIDE_ANSWER } from "./common.ts";

const TARGET_MS = 150;

export const coldStart: Scenario = {
  id: "cold-start",
  title: "Cold start to first request",
  what:
    "Spawn of the harness process (headless, prompt `say OK`) to the first byte of its first model request " +
    "at the fake vendor, on the runner's monotonic clock (token counting and other side calls are shown " +
    "separately as the first vendor call of any kind). The fake answers `OK` at once; wall is spawn to exit. " +
    "Ours: `agent run -p` with the Anthropic provider and the first-party tool and context providers.",
  defaultRuns: 20,
  metrics: [
    { key: "first_request_ms", label: "first request", unit: "ms", better: "lower", p95: true },
    { key: "main_request_ms", label: "first request with tools", unit: "ms", better: "lower" },
    { key: "any_request_ms", label: "first vendor call of any kind", unit: "ms", better: "lower" },
    { key: "wall_ms", label: "wall (to exit)", unit: "ms", better: "lower" },
  ],
  primary: "first_request_ms",
  applies: () => undefined,
  async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
    const cwd = projectDir(h, ctx);
    const { result, requests, other } = await runHarness(h, ctx, {
      cwd,
      prompt: "say OK",
      output: "text",
      handler: () => (req) =>
        isSideRequest(req) && h.kind !== "baseline" ? SIDE_ANSWER : { kind: "text", text: "OK" },
    });
    const failed = failureReason(result);
    if (failed) return { ok: false, reason: failed };
    if (requests.length === 0) return { ok: false, reason: "exited without sending a model request" };
    const main = requests.find((r) => !isSideRequest(r));
    let firstAny = requests[0]!.receivedAt.hrtime;
    for (const r of other) if (r.receivedAt.hrtime < firstAny) firstAny = r.receivedAt.hrtime;
    return {
      ok: true,
      metrics: {
        first_request_ms: nsToMs(requests[0]!.receivedAt.hrtime - result.spawnAt),
        ...(main ? { main_request_ms: nsToMs(main.receivedAt.hrtime - result.spawnAt) } : {}),
        any_request_ms: nsToMs(firstAny - result.spawnAt),
        wall_ms: nsToMs(result.exitAt - result.spawnAt),
      },
    };
  },
  targets(results: HarnessResult[]) {
    const ours = results.find((r) => r.kind === "ours");
    const med = ours?.metrics["first_request_ms"]?.median;
    if (med === undefined) {
      return [
        {
          target: `median ≤ ${TARGET_MS} ms`,
          measured: "not measured",
          met: false,
          miss: ours?.reason ?? "",
        },
        { target: "below every peer", measured: "not measured", met: false },
      ];
    }
    const peers = results.filter((r) => r.kind === "peer" && r.metrics["first_request_ms"]);
    const best = Math.min(...peers.map((r) => r.metrics["first_request_ms"]!.median));
    const checks = [
      {
        target: `median ≤ ${TARGET_MS} ms`,
        measured: fmt(med, "ms"),
        met: med <= TARGET_MS,
        ...(med > TARGET_MS
          ? {
              miss: `${fmt(med - TARGET_MS, "ms")} over (${(((med - TARGET_MS) / TARGET_MS) * 100).toFixed(0)}%)`,
            }
          : {}),
      },
    ];
    if (peers.length > 0) {
      checks.push({
        target: "below every peer",
        measured: `ours ${fmt(med, "ms")}, fastest peer ${fmt(best, "ms")}`,
        met: med < best,
        ...(med >= best ? { miss: `${fmt(med - best, "ms")} slower than the fastest peer` } : {}),
      });
    }
    return checks;
  },
  notes(results) {
    const notes: string[] = [];
    const oc = results.find((r) => r.id === "opencode");
    if (oc?.metrics["main_request_ms"] && oc.metrics["first_request_ms"]) {
      notes.push(
        "opencode's first request is a title-generation call on its small model; its main turn request " +
          `follows at a median of ${fmt(oc.metrics["main_request_ms"].median, "ms")}.`,
      );
    }
    notes.push(
      "Request sizes differ widely between harnesses (system prompt, tool declarations), so time to the first " +
        "request is not equal work; the scripted task compares equal work.",
    );
    return notes;
  },
};
