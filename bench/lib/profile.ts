// Profiling of our harness for a missed target: one more run of the scenario with
// `node --cpu-prof` on the agent process and on every plugin, then a summary of where the
// CPU time went (self time by package and by function, per process or thread).
//
// First-party plugins run in worker threads of the agent by default; those inherit the
// agent's --cpu-prof and write one profile per thread, so they are profiled exactly as
// they run. Plugin processes start with an allowlisted environment (NODE_OPTIONS does not
// reach them), so a provider that runs as a process (the slow-tool fixture, or every one
// with BENCH_PLUGIN_ISOLATION=process) is pointed, through the global config's
// dev_overrides, at a small shell wrapper that execs Node with the profiling flags on the
// provider's real main.ts.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";
import { agentBin, isolationOverride, presentProviders, slowToolMain } from "../harnesses/ours.ts";
import type { BenchEnv, Harness } from "../harnesses/types.ts";

const INTERVAL_US = 250;

export function profilingHarness(base: Harness, env: BenchEnv, profDir: string): Harness {
  mkdirSync(profDir, { recursive: true });
  const wrappers = join(profDir, "wrappers");
  mkdirSync(wrappers, { recursive: true });
  const flags = (name: string) =>
    `--cpu-prof --cpu-prof-interval=${INTERVAL_US} --cpu-prof-dir="${profDir}" --cpu-prof-name="${name}-$$.cpuprofile"`;
  const { tools, context } = presentProviders(env.root);
  const targets: Record<string, string> = { slow: slowToolMain(env.root) };
  if (isolationOverride() === "process") {
    for (const name of ["anthropic", ...tools, ...context]) {
      targets[name] = join(env.root, "providers", name, "src", "main.ts");
    }
  }
  const overrides: string[] = [];
  for (const [name, main] of Object.entries(targets)) {
    const wrapper = join(wrappers, name);
    writeFileSync(
      wrapper,
      "#!/bin/sh\n" +
        "# Benchmark profiling wrapper: the plugin, with Node's CPU profiler on.\n" +
        `export NODE_COMPILE_CACHE="\${HOME}/.cache/agent/node-compile-cache"\n` +
        `exec "${process.execPath}" ${flags(name)} "${main}" "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    overrides.push(`  ${name} = "${wrapper}"`);
  }
  const nodeFlags = ["--cpu-prof", `--cpu-prof-interval=${INTERVAL_US}`, `--cpu-prof-dir=${profDir}`];
  return {
    ...base,
    id: "ours-profiled",
    nodeFlags,
    setupHome(home: string) {
      const dir = join(home, ".config", "agent");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "config.hcl"), `dev_overrides {\n${overrides.join("\n")}\n}\n`);
    },
    spec(run, e) {
      const spec = base.spec(run, e);
      const i = spec.args.indexOf(agentBin(e.root));
      return { ...spec, args: [...spec.args.slice(0, i), ...nodeFlags, ...spec.args.slice(i)] };
    },
  };
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Which package or area a script URL belongs to. */
function area(url: string, root: string): string {
  if (url === "") return "(native / VM)";
  if (url.startsWith("node:internal/modules") || url.startsWith("node:internal/process/")) {
    return "node: module loading and bootstrap";
  }
  if (url.startsWith("node:")) return `node: ${url.slice(5).split("/").slice(0, 2).join("/")}`;
  const path = url.startsWith("file://") ? decodeURIComponent(url.slice(7)) : url;
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) {
    const rest = path.slice(nm + 14).split("/");
    const pkg = rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
    return pkg;
  }
  const rel = relative(root, path);
  if (!rel.startsWith("..")) return rel.split("/").slice(0, 2).join("/");
  return path;
}

function shortUrl(url: string, root: string): string {
  const path = url.startsWith("file://") ? decodeURIComponent(url.slice(7)) : url;
  const nm = path.lastIndexOf("/node_modules/");
  if (nm >= 0) return path.slice(nm + 14);
  const rel = relative(root, path);
  return rel.startsWith("..") ? path : rel;
}

export interface ProcessProfile {
  name: string;
  wallMs: number;
  busyMs: number;
  areas: [string, number][];
  functions: [string, number][];
}

export function summarizeProfile(file: string, root: string): ProcessProfile {
  const p = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i + 1] ?? 0) / 1000;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt);
  }
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of self) {
    const f = byId.get(id)!;
    if (f.functionName === "(idle)" || f.functionName === "(root)") continue;
    busy += ms;
    const a = f.url === "" ? f.functionName || "(native)" : area(f.url, root);
    areas.set(a, (areas.get(a) ?? 0) + ms);
    const fn = `${f.functionName || "(anonymous)"}${f.url ? ` ${shortUrl(f.url, root)}:${f.lineNumber + 1}` : ""}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
  }
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  // Node's default name (CPU.<date>.<time>.<pid>.<tid>.<seq>) is the agent's: thread 0 is
  // the kernel, any other a plugin's worker, named after the provider whose code it ran.
  // Plugin processes are named by their wrapper.
  const m = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\./.exec(basename(file));
  let name = basename(file).replace(/\.cpuprofile$/, "");
  if (m && m[2] === "0") name = `agent-${m[1]}`;
  else if (m) {
    const provider = p.nodes
      .map((n) => /\/providers\/([^/]+)\/src\//.exec(n.callFrame.url)?.[1])
      .find(Boolean);
    name = `agent-${m[1]} worker ${provider ?? `thread ${m[2]}`}`;
  }
  return {
    name,
    wallMs: (p.endTime - p.startTime) / 1000,
    busyMs: busy,
    areas: top(areas, 6),
    functions: top(functions, 6),
  };
}

export function summarizeDir(dir: string, root: string): ProcessProfile[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".cpuprofile"))
    .map((f) => summarizeProfile(join(dir, f), root))
    .sort((a, b) => b.busyMs - a.busyMs);
}

/** Markdown lines: the totals across processes, then each process's heaviest areas and functions. */
export function profileMarkdown(profiles: ProcessProfile[], cores: number): string[] {
  if (profiles.length === 0)
    return ["No profile was written (the processes may have been killed before exiting)."];
  const busy = profiles.reduce((a, p) => a + p.busyMs, 0);
  const ms = (v: number) => `${v.toFixed(0)} ms`;
  const lines = [
    `${profiles.length} processes profiled; CPU busy ${ms(busy)} in total (at least ${ms(busy / cores)} of wall ` +
      `time on ${cores} cores even with perfect overlap).`,
    "",
    "| process | profiled | busy | heaviest self time by area | heaviest functions (self) |",
    "| --- | --- | --- | --- | --- |",
  ];
  for (const p of profiles) {
    const areas = p.areas.map(([a, v]) => `${a} ${ms(v)}`).join("; ");
    const fns = p.functions
      .slice(0, 4)
      .map(([f, v]) => `\`${f}\` ${ms(v)}`)
      .join("; ");
    lines.push(
      `| ${p.name} | ${ms(p.wallMs)} | ${ms(p.busyMs)} | ${areas.replace(/\|/g, "\\|")} | ${fns.replace(/\|/g, "\\|")} |`,
    );
  }
  return lines;
}
