// The benchmark suite: `npm run bench` (see bench/README.md). Runs every scenario over our
// `agent` CLI and the peer harnesses against one loopback fake vendor, interleaved, prints
// tables of medians and ratios, and writes Markdown and JSON under bench/results/.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { checkBundle } from "@pluggableharness/runtime";
import { buildBundle, entries as bundleEntries } from "../scripts/bundle.ts";
import { baseline } from "./harnesses/baseline.ts";
import { ours } from "./harnesses/ours.ts";
import { claudeCode, codex, opencode, pi } from "./harnesses/peers.ts";
import type { Availability, BenchEnv, Harness } from "./harnesses/types.ts";
import { BenchFake } from "./lib/fake.ts";
import { type MicroResult, runMicro } from "./lib/micro.ts";
import { versionOverrides } from "./lib/peers.ts";
import { profileMarkdown, profilingHarness, summarizeDir } from "./lib/profile.ts";
import {
  consoleScenario,
  type HarnessInfo,
  machine,
  markdown,
  type ProfileFinding,
  type Report,
  toJson,
} from "./lib/report.ts";
import { runScenario } from "./lib/runner.ts";
import type { ObservedRun, Scenario, ScenarioContext, ScenarioResult } from "./lib/scenario.ts";
import { timelineMarkdown } from "./lib/timeline.ts";
import { codingTaskScenario } from "./scenarios/coding-task.ts";
import { coldStart } from "./scenarios/cold-start.ts";
import { commands } from "./scenarios/commands.ts";
import { parallelTools } from "./scenarios/parallel-tools.ts";
import { replay } from "./scenarios/replay.ts";
import { streamingScenario } from "./scenarios/streaming.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");
const ALL_HARNESSES: Harness[] = [ours, claudeCode, codex, opencode, pi, baseline];
const SCENARIO_IDS = [
  "cold-start",
  "streaming",
  "coding-task",
  "replay",
  "parallel-tools",
  "commands",
  "micro",
];

const USAGE = `usage: npm run bench -- [options]

  -s, --scenarios LIST     comma-separated: ${SCENARIO_IDS.join(", ")} (default: all)
  -H, --harnesses LIST     comma-separated: ${ALL_HARNESSES.map((h) => h.id).join(", ")} (default: all)
  -n, --runs N|ID=N,...    timed runs per harness, for every scenario or per scenario
                           (defaults: cold-start 20, streaming 5, coding-task 5, replay 10, parallel-tools 10, commands 5;
                           "micro" runs bench/runtime, bench/state and bench/tools once each)
      --quick              2 timed runs per scenario (a smoke test, not a result)
      --events N           deltas in the streaming scenario (default 20000)
      --timeout-ms N       per harness run (default 180000)
      --peer-version ID=V  install another version of a peer (e.g. codex=latest)
      --no-install         never run npm; missing peers are reported as not installed
      --no-profile         do not profile missed targets
      --profile            profile ours on every scenario run, met targets too
      --out DIR            where results go (default bench/results)
      --no-write           print only
      --keep               keep the scratch directory
`;

function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      scenarios: { type: "string", short: "s" },
      harnesses: { type: "string", short: "H" },
      peers: { type: "string" },
      runs: { type: "string", short: "n" },
      quick: { type: "boolean" },
      events: { type: "string" },
      "timeout-ms": { type: "string" },
      "peer-version": { type: "string", multiple: true },
      "no-install": { type: "boolean" },
      "no-profile": { type: "boolean" },
      profile: { type: "boolean" },
      out: { type: "string" },
      "no-write": { type: "boolean" },
      keep: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  }).values;
}
try {
  parsed = parse();
} catch (e) {
  fail((e as Error).message);
}
if (parsed.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

function list(value: string | undefined, known: readonly string[], what: string): string[] {
  if (value === undefined) return [...known];
  const items = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const i of items) if (!known.includes(i)) fail(`unknown ${what} "${i}" (known: ${known.join(", ")})`);
  return items;
}

function positive(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`${what} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

const events = parsed.events === undefined ? 20_000 : positive(parsed.events, "--events");
const timeoutMs =
  parsed["timeout-ms"] === undefined ? 180_000 : positive(parsed["timeout-ms"], "--timeout-ms");
const scenarioIds = list(parsed.scenarios, SCENARIO_IDS, "scenario");
const harnessIds = list(
  parsed.harnesses ?? parsed.peers,
  ALL_HARNESSES.map((h) => h.id),
  "harness",
);
const runsFor = new Map<string, number>();
if (parsed.runs !== undefined) {
  for (const part of parsed.runs.split(",")) {
    const [k, v] = part.includes("=") ? part.split("=") : ["*", part];
    if (k !== "*" && !SCENARIO_IDS.includes(k!)) fail(`--runs names unknown scenario "${k}"`);
    runsFor.set(k!, positive(v!, "--runs"));
  }
}
for (const pv of parsed["peer-version"] ?? []) {
  const [id, v] = pv.split("=");
  if (!id || !v || !["claude-code", "codex", "opencode", "pi"].includes(id))
    fail(`bad --peer-version "${pv}"`);
  versionOverrides.set(id, v);
}

const scenarios: Record<string, Scenario> = {
  "cold-start": coldStart,
  streaming: streamingScenario(events),
  "coding-task": codingTaskScenario,
  replay,
  "parallel-tools": parallelTools,
  commands,
};

const log = (line: string) => process.stderr.write(`${line}\n`);
const scratch = mkdtempSync(join(tmpdir(), "ph-bench-"));
const fake = await BenchFake.start();
const cleanup = async () => {
  await fake.close();
  if (!parsed.keep) rmSync(scratch, { recursive: true, force: true });
};
process.once("SIGINT", () => {
  void cleanup().then(() => process.exit(130));
});

const env: BenchEnv = {
  root: ROOT,
  peersDir: join(ROOT, "bench", ".peers"),
  scratch,
  fakeUrl: fake.url,
  noInstall: parsed["no-install"] === true,
  log,
};

let commit = "unknown";
try {
  commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  // The suite measures the working tree; say so when it differs from the commit.
  const dirty = execFileSync("git", ["status", "--porcelain", "--", "packages", "providers"], {
    cwd: ROOT,
    encoding: "utf8",
  }).trim();
  if (dirty)
    commit += ` plus uncommitted changes in ${dirty.split("\n").length} files under packages/ and providers/`;
} catch {
  // not a git checkout
}
log(`bench: fake vendor at ${fake.url}; scratch ${scratch}; checkout ${commit}`);
// Ours runs first-party code from the prebuilt bundles only while they match the sources;
// a stale bundle silently falls back to the TypeScript sources, which start slower. Measure
// what `npm ci` ships: rebuild whatever an edit since the last build has made stale.
{
  const stale = bundleEntries(ROOT).filter((entry) => !checkBundle(entry, ROOT));
  for (const entry of stale) await buildBundle(entry, ROOT);
  log(`bench: bundles ${stale.length === 0 ? "up to date" : `rebuilt ${stale.length} stale`}`);
}
const harnesses = ALL_HARNESSES.filter((h) => harnessIds.includes(h.id));
const availability = new Map<string, Availability>();
const homes = new Map<string, string>();
for (const h of harnesses) {
  const a = await h.prepare(env);
  availability.set(h.id, a);
  log(`bench: ${h.id}: ${a.ok ? `${a.version}${a.note ? ` (${a.note})` : ""}` : a.reason}`);
}
const homeOf = (h: Pick<Harness, "id">): string => {
  let home = homes.get(h.id);
  if (!home) {
    home = join(scratch, "homes", h.id);
    mkdirSync(home, { recursive: true });
    ALL_HARNESSES.find((x) => x.id === h.id)?.setupHome(home, env);
    homes.set(h.id, home);
  }
  return home;
};

const date = new Date().toISOString().slice(0, 16).replace(":", "") + "Z";
const results: ScenarioResult[] = [];
let micro: MicroResult[] = [];
const profiles: ProfileFinding[] = [];
function writeReport(final: boolean): void {
  const infos: HarnessInfo[] = harnesses.map((h) => {
    const a = availability.get(h.id)!;
    return {
      id: h.id,
      label: h.label,
      kind: h.kind,
      available: a.ok,
      ...(a.ok ? { version: a.version, ...(a.note ? { note: a.note } : {}) } : { reason: a.reason }),
    };
  });
  const report: Report = {
    date,
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(" ")}` : ""}`,
    machine: machine(),
    commit,
    harnesses: infos,
    scenarios: results,
    toolMapping: Object.fromEntries(
      harnesses.filter((h) => h.tools).map((h) => [h.id, h.tools!.mapping as Record<string, string>]),
    ),
    profiles,
    micro,
    complete:
      final &&
      scenarioIds.length === SCENARIO_IDS.length &&
      harnessIds.length === ALL_HARNESSES.length &&
      !parsed.quick,
    finished: final,
  };
  if (parsed["no-write"]) return;
  const out = parsed.out ?? join(ROOT, "bench", "results");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, `${date}.md`), markdown(report));
  writeFileSync(join(out, `${date}.json`), toJson(report));
  if (final) log(`\nbench: wrote ${join(out, `${date}.md`)} and .json`);
}

for (const id of scenarioIds) {
  if (id === "micro") continue;
  const s = scenarios[id]!;
  const runs = runsFor.get(id) ?? runsFor.get("*") ?? (parsed.quick ? 2 : s.defaultRuns);
  log(`\nbench: ${s.title}: ${runs} runs per harness`);
  const dir = join(scratch, id);
  mkdirSync(dir, { recursive: true });
  const ctx: ScenarioContext = { env, fake, timeoutMs, dir, home: homeOf };
  const r = await runScenario(s, harnesses, availability, ctx, { runs, log });
  results.push(r);
  process.stdout.write(`${consoleScenario(r)}\n`);
  writeReport(false);
}

if (scenarioIds.includes("micro")) {
  log("\nbench: micro-benchmarks (bench/runtime, bench/state, bench/tools)");
  micro = await runMicro(ROOT, 15 * 60_000);
  for (const m of micro) process.stdout.write(`\n== micro: ${m.command}\n${m.output}\n`);
}

const oursAvailable = availability.get("ours")?.ok === true && harnessIds.includes("ours");
if (!parsed["no-profile"] && oursAvailable) {
  for (const r of results) {
    const missed = r.targets.filter((t) => !t.met);
    const measured = r.harnesses.find((h) => h.kind === "ours")?.status === "ok";
    if ((missed.length === 0 && !parsed.profile) || !measured) continue;
    const why = missed.length > 0 ? `missed: ${missed.map((t) => t.target).join("; ")}` : "--profile";
    log(`\nbench: profiling ours on ${r.id} (${why})`);
    const profDir = join(scratch, "profiles", r.id);
    const profiled = profilingHarness(ours, env, profDir);
    const profHome = join(scratch, "homes", `profile-${r.id}`);
    mkdirSync(profHome, { recursive: true });
    profiled.setupHome(profHome, env);
    const dir = join(scratch, `profile-${r.id}`);
    mkdirSync(dir, { recursive: true });
    const ctx: ScenarioContext = {
      env,
      fake,
      timeoutMs,
      dir,
      home: (h) => (h.id === profiled.id ? profHome : homeOf(h)),
    };
    const s = scenarios[r.id]!;
    await s.setup?.(ctx);
    // An untraced-by-the-profiler run first, with stream-json output and stdout line times,
    // for the timeline (the CPU profiler itself slows every process down).
    const traced: Harness = {
      ...ours,
      id: "ours-traced",
      spec: (run, e) => ours.spec({ ...run, output: "stream" }, e),
    };
    let observed: ObservedRun | undefined;
    const tracedCtx: ScenarioContext = {
      ...ctx,
      home: (h) => (h.id === traced.id ? homeOf(ours) : homeOf(h)),
      trace: true,
      observe: (o) => {
        observed = o;
      },
    };
    const tracedSample = await s.run(traced, tracedCtx, 0);
    await s.run(profiled, ctx, -1); // fills the fresh home's compile cache
    rmSync(profDir, { recursive: true, force: true });
    profilingHarness(ours, env, profDir); // recreate the wrappers removed with the directory
    const sample = await s.run(profiled, ctx, 0);
    const summary = [
      ...(observed ? timelineMarkdown(observed) : []),
      ...(tracedSample.ok ? [] : [`(The traced run failed: ${tracedSample.reason}.)`]),
      "",
      "CPU profile (`node --cpu-prof` on the agent and on every plugin process):",
      "",
      ...profileMarkdown(summarizeDir(profDir, ROOT), machine().cores),
    ];
    if (!sample.ok) summary.push("", `(The profiled run itself failed: ${sample.reason}.)`);
    profiles.push({
      scenario: r.title,
      target: missed.map((t) => t.target).join("; ") || "(none missed)",
      summary,
    });
    process.stdout.write(`\n-- profile: ${r.title}\n${summary.join("\n")}\n`);
    writeReport(false);
  }
}

writeReport(true);
await cleanup();
