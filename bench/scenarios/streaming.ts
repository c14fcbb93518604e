// 2. Streaming: one scripted answer of N text deltas (longStream, 20,000 by default) through
// vendor -> provider -> kernel -> persistence -> headless output. Events per second over the
// stream phase (first byte of the request to the last byte the harness printed) and the
// latency each event adds over the floor (a bare Node client reading the same stream).
import { scenarios } from "@pluggableharness/fake-vendors";
import type { Harness } from "../harnesses/types.ts";
import type { HarnessResult, Sample, Scenario, ScenarioContext } from "../lib/scenario.ts";
import { fmt } from "../lib/scenario.ts";
import { failureReason } from "../lib/spawn.ts";
import { nsToMs } from "../lib/stats.ts";
import { isSideRequest, projectDir, runHarness, SIDE_ANSWER } from "./common.ts";

const TARGET_EVENTS_PER_S = 20_000;

export function streamingScenario(events: number): Scenario {
  const last = `tok${events - 1}`;
  return {
    id: "streaming",
    title: `Streaming ${events.toLocaleString("en-US")} events`,
    what:
      `The fake answers one turn with ${events.toLocaleString("en-US")} text deltas. Stream phase = first byte of the ` +
      "model request to the last byte the harness printed (so it includes the provider, the kernel, persistence " +
      "and the headless printer, but not shutdown); events/s = deltas / stream phase. Added latency per event = " +
      "(stream phase − the floor's stream phase) / deltas, against the bare Node client in the same run. Ours " +
      "prints `--output-format stream-json` (a `delta` record per merged run of deltas); peers print their default " +
      "text output. First delta = first byte of the model request to ours' first `delta` record (the floor: its " +
      "first output); not measured for peers, some of which print only at the end. A run " +
      `counts only if the output contains the last delta (\`${last}\`).`,
    defaultRuns: 5,
    metrics: [
      { key: "events_per_s", label: "events/s", unit: "events/s", better: "higher" },
      { key: "stream_ms", label: "stream phase", unit: "ms", better: "lower" },
      { key: "added_us", label: "added per event", unit: "µs", better: "lower" },
      { key: "first_delta_ms", label: "first delta", unit: "ms", better: "lower" },
      { key: "wall_ms", label: "wall (to exit)", unit: "ms", better: "lower" },
    ],
    primary: "events_per_s",
    applies: () => undefined,
    async run(h: Harness, ctx: ScenarioContext): Promise<Sample> {
      const { result, requests } = await runHarness(h, ctx, {
        cwd: projectDir(h, ctx),
        prompt: "Write a very long answer.",
        output: "stream",
        // Ours prints a record per delta; the floor prints text as it arrives. Peers print
        // their answer in their own way (some only at the end), so theirs is not measured.
        ...(h.kind === "ours" ? { watchFor: '{"type":"delta"' } : {}),
        handler: () => (req) =>
          isSideRequest(req) && h.kind !== "baseline" ? SIDE_ANSWER : scenarios.longStream(events),
      });
      const failed = failureReason(result);
      if (failed) return { ok: false, reason: failed };
      const main = requests.find((r) => h.kind === "baseline" || !isSideRequest(r));
      if (!main) return { ok: false, reason: "exited without sending a model request" };
      if (!result.stdout.includes(last) || result.lastStdoutAt === undefined) {
        return {
          ok: false,
          reason: `output lacks the last delta ${last} (${result.stdoutBytes} bytes printed)`,
        };
      }
      const streamMs = nsToMs(result.lastStdoutAt - main.receivedAt.hrtime);
      const firstDelta =
        h.kind === "ours" ? result.watchedAt : h.kind === "baseline" ? result.firstStdoutAt : undefined;
      return {
        ok: true,
        metrics: {
          events_per_s: events / (streamMs / 1000),
          stream_ms: streamMs,
          ...(firstDelta !== undefined
            ? { first_delta_ms: nsToMs(firstDelta - main.receivedAt.hrtime) }
            : {}),
          wall_ms: nsToMs(result.exitAt - result.spawnAt),
        },
      };
    },
    derive(results: HarnessResult[]) {
      const floor = results.find((r) => r.kind === "baseline")?.metrics["stream_ms"]?.median;
      if (floor === undefined) return;
      for (const r of results) {
        const s = r.metrics["stream_ms"];
        if (!s || r.kind === "baseline") continue;
        const us = (v: number) => ((v - floor) * 1000) / events;
        r.metrics["added_us"] = {
          ...s,
          median: us(s.median),
          p95: us(s.p95),
          min: us(s.min),
          max: us(s.max),
          mean: us(s.mean),
        };
      }
    },
    targets(results: HarnessResult[]) {
      const ours = results.find((r) => r.kind === "ours");
      const eps = ours?.metrics["events_per_s"]?.median;
      if (eps === undefined) {
        return [
          {
            target: `≥ ${fmt(TARGET_EVENTS_PER_S, "events/s")}`,
            measured: "not measured",
            met: false,
            miss: ours?.reason ?? "",
          },
        ];
      }
      return [
        {
          target: `≥ ${fmt(TARGET_EVENTS_PER_S, "events/s")}`,
          measured: fmt(eps, "events/s"),
          met: eps >= TARGET_EVENTS_PER_S,
          ...(eps < TARGET_EVENTS_PER_S
            ? { miss: `${(((TARGET_EVENTS_PER_S - eps) / TARGET_EVENTS_PER_S) * 100).toFixed(0)}% short` }
            : {}),
        },
      ];
    },
  };
}
