// Fleet benchmark (not a test): tasks per minute for 1, 2, 4 and 8 `agent worker`
// processes on this machine, against the loopback fake Anthropic answering each model call
// after a realistic latency, and the fleet's own time per task (claiming it, the uploads
// at each turn boundary, recording the result), as the workers measure it.
//
//   npm run bench:fleet            (options: --latency-ms 1500 --workers 1,2,4,8)
//
// Each task is the two-call task of the fleet tests: write a file, then answer.
import { join } from "node:path";
import { startFleetWorld, twoStep } from "../../packages/cli/test/fleet.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const latencyMs = Number(arg("--latency-ms", "1500"));
const counts = arg("--workers", "1,2,4,8").split(",").map(Number);

const world = await startFleetWorld();
world.script = (req) => twoStep(req, { latencyMs });
const rows: string[][] = [];
try {
  let round = 0;
  for (const n of counts) {
    round++;
    const workers = Array.from({ length: n }, () => world.worker());
    await Promise.all(
      workers.map((w) => world.waitFor("worker ready", async () => w.output().includes(" ready: "), 60_000)),
    );
    const tasks = Math.max(6, 3 * n);
    const targets = Array.from({ length: tasks }, (_, i) => world.target(`b${round}-${i + 1}`));
    const file = join(world.sb.home, `bench-${round}.txt`);
    (await import("node:fs")).writeFileSync(file, `${targets.join("\n")}\n`);
    const started = performance.now();
    const id = await world.submit(["-p", "Do task-x please.", "--targets", file]);
    const done = await world.waitFor(
      `round ${round}`,
      async () => {
        const ts = await world.catalog.tasks(id);
        return ts.every((t) => t.finishedAt) && ts;
      },
      600_000,
    );
    const ms = performance.now() - started;
    const failed = done.filter((t) => t.status !== "completed").length;
    const overhead = done.map((t) => t.overheadMs ?? 0);
    const mean = overhead.reduce((a, b) => a + b, 0) / overhead.length;
    const sorted = [...overhead].sort((a, b) => a - b);
    const p95 = sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))]!;
    rows.push([
      String(n),
      String(tasks),
      (ms / 1000).toFixed(1),
      ((tasks / ms) * 60_000).toFixed(1),
      mean.toFixed(0),
      p95.toFixed(0),
      String(failed),
    ]);
    await world.killWorkers();
  }
} finally {
  await world.close();
}

const header = [
  "workers",
  "tasks",
  "wall s",
  "tasks/min",
  "overhead ms (mean)",
  "overhead ms (p95)",
  "not completed",
];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const fmt = (r: string[]) => r.map((c, i) => c.padStart(widths[i]!)).join("  ");
console.log(
  `Fleet: two model calls per task, each answered after ${latencyMs} ms; one task at a time per worker.`,
);
console.log(fmt(header));
for (const r of rows) console.log(fmt(r));
console.log(
  "overhead: the fleet's own time per task (claim, session-file and diff uploads at each turn boundary, the result), measured by the worker.",
);
