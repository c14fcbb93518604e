// What exporting telemetry costs a turn, and what a collector that is down or slow costs
// (issue 36, "never in the way"): the real `agent run -p` against the loopback fake vendor,
// one session of TURNS tool-call turns, with telemetry off, exporting to a healthy
// receiver, to a slow one (each export answered after SLOW_MS) and to a closed port. The
// per-turn figure is the median gap between consecutive model requests as the fake
// vendor sees them (kernel loop + tool call + everything telemetry adds on the way), so
// process start-up is left out. Modes are interleaved run by run. Reported, never asserted.
//
// Usage: node bench/telemetry-overhead.ts [--runs N] [--turns N] [--slow-ms N]
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startFakeVendor } from "@pluggableharness/fake-vendors";
import { type OtlpReceiver, startOtlpReceiver } from "@pluggableharness/otlp-receiver";
import { agent, sandbox } from "../packages/cli/test/helpers.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    turns: { type: "string", default: "15" },
    "slow-ms": { type: "string", default: "2000" },
  },
});
const RUNS = Number(values.runs);
const TURNS = Number(values.turns);
const SLOW_MS = Number(values["slow-ms"]);

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const observability = (endpoint: string) => `
settings {
  observability {
    endpoint           = "${endpoint}"
    protocol           = "grpc"
    sampling_ratio     = 1.0
    traces_enabled     = true
    metrics_enabled    = true
    logs_enabled       = true
    export_interval_ms = 1000
    service_name       = "bench"
  }
}`;

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const healthy = await startOtlpReceiver();
const slow = await startOtlpReceiver({ delayMs: SLOW_MS });
const dead = `127.0.0.1:${await closedPort()}`;
const modes: Array<{ id: string; hcl: string; receiver?: OtlpReceiver }> = [
  { id: "off", hcl: "\nsettings {\n  telemetry = false\n}\n" },
  { id: "healthy", hcl: observability(healthy.grpcEndpoint), receiver: healthy },
  { id: `slow (${SLOW_MS} ms)`, hcl: observability(slow.grpcEndpoint), receiver: slow },
  { id: "dead (closed port)", hcl: observability(dead) },
];

// Each request is timed as it arrives; the session asks for a file read TURNS times, then ends.
let arrivals: number[] = [];
const fake = await startFakeVendor({
  vendor: "anthropic",
  script: () => {
    arrivals.push(performance.now());
    return arrivals.length <= TURNS
      ? {
          kind: "tool_calls",
          text: "Reading.",
          // A different window each turn: the same call repeated would trip the doom-loop guard.
          calls: [
            { name: "filesystem__read_file", args: { path: "calc.js", offset: 1, limit: arrivals.length } },
          ],
        }
      : { kind: "text", text: "Done." };
  },
});

const sb = sandbox();
const results = new Map<string, { turn: number[]; wall: number[] }>(
  modes.map((m) => [m.id, { turn: [], wall: [] }]),
);
try {
  for (let run = 0; run < RUNS; run++) {
    for (const mode of modes) {
      const repo = sb.repo(`run-${run}-${mode.id.split(" ")[0]}`);
      const file = join(repo, "agent.hcl");
      writeFileSync(
        file,
        `${readFileSync(file, "utf8").replace("max_turns = 10", "max_turns = 1000")}${mode.hcl}`,
      );
      arrivals = [];
      const started = performance.now();
      const r = await agent(["run", "-p", "Read calc.js again and again"], {
        cwd: repo,
        env: {
          ...sb.env,
          ANTHROPIC_API_KEY: "sk-ant-bench",
          FAKE_ANTHROPIC_URL: fake.url,
          FIXTURE_ROOT: repo,
        },
        timeoutMs: 120_000,
      });
      const wall = performance.now() - started;
      if (r.code !== 0) throw new Error(`${mode.id}: agent exited ${r.code}\n${r.stderr}`);
      const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]!);
      const entry = results.get(mode.id)!;
      entry.turn.push(median(gaps));
      entry.wall.push(wall);
      console.log(
        `run ${run + 1}/${RUNS} ${mode.id}: per turn ${median(gaps).toFixed(1)} ms, wall ${wall.toFixed(0)} ms` +
          (r.stderr ? `, stderr: ${r.stderr.trim().split("\n")[0]}` : ""),
      );
    }
  }
} finally {
  await fake.close();
  await healthy.close();
  await slow.close();
  sb.cleanup();
}

const off = median(results.get("off")!.turn);
console.log(`\nper-turn cost (median of per-run medians, ${TURNS} turns, ${RUNS} runs each)`);
console.log("mode                  per turn    vs off    wall (spawn to exit)");
for (const [id, r] of results) {
  const t = median(r.turn);
  console.log(
    `${id.padEnd(20)}  ${`${t.toFixed(1)} ms`.padStart(9)}  ${`${(t - off >= 0 ? "+" : "") + (t - off).toFixed(1)} ms`.padStart(9)}    ${median(r.wall).toFixed(0)} ms`,
  );
}
