// The transport benchmark: `npm run bench:transport`. Compares the ways a trusted
// first-party plugin can run (see hosts.ts): a process per plugin (today's go-plugin
// transport), a worker thread per plugin speaking over its MessagePort, a worker thread
// keeping gRPC over a unix socket, and one shared host process for every plugin. Each
// sample runs in a fresh process (measure.ts); options are interleaved, in an order
// rotated by run, after one untimed warm-up each. Prints medians; nothing is asserted.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkBundle, freshBundle } from "@pluggableharness/runtime/bundles";
import { buildBundle, entries as bundleEntries } from "../../scripts/bundle.ts";
import { median } from "../lib/stats.ts";
import { OPTIONS, type TransportOption } from "./hosts.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MEASURE = fileURLToPath(new URL("./measure.ts", import.meta.url));
const MINIMAL = fileURLToPath(new URL("../runtime/plugin/minimal-plugin.ts", import.meta.url));

/** The providers the scripted coding task starts (bench/harnesses/ours.ts, started when used). */
const TASK_SET = ["anthropic", "filesystem", "search", "exec", "project-context"];

const USAGE = `usage: npm run bench:transport -- [options]

  -n, --runs N         samples per option and plugin set (default 5)
  --sets LIST          one (filesystem alone), task (the ${TASK_SET.length} plugins of the scripted task),
                       all (every first-party provider); default one,task,all
  --options LIST       ${OPTIONS.join(", ")} (default: all)
  --no-calls           skip the per-call latency and throughput measurements`;

interface Args {
  runs: number;
  sets: string[];
  options: TransportOption[];
  calls: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { runs: 5, sets: ["one", "task", "all"], options: [...OPTIONS], calls: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => argv[++i] ?? "";
    if (arg === "-n" || arg === "--runs") a.runs = Math.max(1, Number(value()));
    else if (arg === "--sets") a.sets = value().split(",");
    else if (arg === "--options") a.options = value().split(",") as TransportOption[];
    else if (arg === "--no-calls") a.calls = false;
    else if (arg === "-h" || arg === "--help") {
      console.log(USAGE);
      process.exit(0);
    } else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  for (const o of a.options) if (!OPTIONS.includes(o)) throw new Error(`unknown option ${o}`);
  return a;
}

/** provider name -> what runs: its fresh bundle (what npm ci ships), else its source entry. */
function entries(names: readonly string[]): { specs: string[]; sources: string[] } {
  const sources: string[] = [];
  const specs = names.map((n) => {
    const main = join(ROOT, "providers", n, "src", "main.ts");
    const bundle = freshBundle(main, ROOT);
    if (!bundle) sources.push(n);
    return `${n}=${bundle?.path ?? main}`;
  });
  return { specs, sources };
}

function sample(args: string[]): Record<string, number> {
  const out = execFileSync(process.execPath, [MEASURE, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
    timeout: 180_000,
  });
  return JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, number>;
}

const rotate = <T>(xs: readonly T[], by: number): T[] => xs.map((_, i) => xs[(i + by) % xs.length]!);
const ms = (v: number) => `${v.toFixed(v < 10 ? 2 : 0)} ms`;
const mb = (v: number) => `${v.toFixed(0)} MB`;

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c]!)).join("  ")).join("\n");
}

const args = parseArgs(process.argv.slice(2));
// Measure what `npm ci` ships: rebuild whatever an edit since the last build has made stale.
{
  const stale = bundleEntries(ROOT).filter((entry) => !checkBundle(entry, ROOT));
  for (const entry of stale) await buildBundle(entry, ROOT);
  if (stale.length > 0) console.log(`bench:transport: rebuilt ${stale.length} stale bundle(s)`);
}
const all = readdirSync(join(ROOT, "providers")).filter((n) =>
  existsSync(join(ROOT, "providers", n, "src", "main.ts")),
);
const SETS: Record<string, string[]> = { one: ["filesystem"], task: TASK_SET, all };
console.log(
  `bench:transport on Node ${process.version}, ${cpus().length} cores, ${args.runs} samples per option and set (medians)`,
);

for (const set of args.sets) {
  const names = SETS[set];
  if (!names) throw new Error(`unknown set ${set}`);
  const { specs, sources } = entries(names);
  if (sources.length > 0) console.log(`note: no fresh bundle for ${sources.join(", ")}: their sources run`);
  const results = new Map<TransportOption, Array<Record<string, number>>>(args.options.map((o) => [o, []]));
  for (const o of args.options) sample(["load", o, ...specs]); // warm-up (compile caches, page cache)
  for (let run = 0; run < args.runs; run++) {
    for (const o of rotate(args.options, run)) results.get(o)!.push(sample(["load", o, ...specs]));
  }
  const rows = [["option", "first answer", "all answered", "tree RSS", "added RSS"]];
  for (const o of args.options) {
    const r = results.get(o)!;
    const m = (k: string) => median(r.map((x) => x[k]!));
    rows.push([o, ms(m("firstMs")), ms(m("allMs")), mb(m("rssMb")), mb(m("rssMb") - m("baseRssMb"))]);
  }
  console.log(`\n== cold start to first answered call, ${set}: ${names.length} plugin(s) launched at once`);
  console.log(table(rows));
}

if (args.calls) {
  const results = new Map<TransportOption, Array<Record<string, number>>>(args.options.map((o) => [o, []]));
  for (let run = 0; run < Math.max(1, Math.ceil(args.runs / 2)); run++) {
    for (const o of rotate(args.options, run)) results.get(o)!.push(sample(["calls", o, MINIMAL]));
  }
  const rows = [["option", "unary (p95)", "10-message stream (p95)", "streaming"]];
  for (const o of args.options) {
    const r = results.get(o)!;
    const m = (k: string) => median(r.map((x) => x[k]!));
    rows.push([
      o,
      `${ms(m("unaryMs"))} (${ms(m("unaryP95Ms"))})`,
      `${ms(m("streamCallMs"))} (${ms(m("streamCallP95Ms"))})`,
      `${Math.round(m("eventsPerSecond")).toLocaleString("en-US")} events/s`,
    ]);
  }
  console.log(
    "\n== per call, one plugin (bench/runtime/plugin): GetSchema, an Invoke of 10 messages, 20,000 messages",
  );
  console.log(table(rows));
}
