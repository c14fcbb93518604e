// One measurement of one transport option, in a fresh process standing in for the kernel
// (run.ts starts one per sample, so memory and start-up never carry over). Prints one JSON
// line.
//   measure.ts load <option> <plugin>=<entry>...   cold start of those plugins, launched at
//       once, to each one's first answered call; then the RSS of this process and all its
//       descendants with them loaded.
//   measure.ts calls <option> <entry>              per-call latency against one plugin: a
//       unary call, a 10-message streaming call, and streaming throughput.
import { readdirSync, readFileSync } from "node:fs";
import { ContextService } from "@pluggableharness/protocol/context";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { ModelService } from "@pluggableharness/protocol/model";
import { ToolService } from "@pluggableharness/protocol/tool";
import { median, percentile } from "../lib/stats.ts";
import { type StartedPlugin, type TransportOption, transportSet } from "./hosts.ts";

const MODEL_PROVIDERS = new Set(["anthropic", "openai", "google", "xai", "openai-compatible"]);
const CONTEXT_PROVIDERS = new Set(["project-context"]);
const FRONTENDS = new Set(["tui"]);

/** Resident memory of `root` and every descendant, in MB (VmRSS from /proc). */
export function treeRssMb(root = process.pid): number {
  const children = new Map<number, number[]>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // gone
    }
  }
  let kb = 0;
  const visit = (pid: number) => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      kb += Number(m?.[1] ?? 0);
    } catch {
      // gone
    }
    for (const c of children.get(pid) ?? []) visit(c);
  };
  visit(root);
  return kb / 1024;
}

async function firstCall(p: StartedPlugin): Promise<void> {
  if (MODEL_PROVIDERS.has(p.name)) await p.client(ModelService).getCapabilities({});
  else if (CONTEXT_PROVIDERS.has(p.name)) await p.client(ContextService).getCapabilities({});
  else if (FRONTENDS.has(p.name)) await p.client(FrontendService).getCapabilities({});
  else await p.client(ToolService).getSchema({});
}

async function load(option: TransportOption, specs: string[]): Promise<object> {
  const plugins = specs.map((s) => {
    const i = s.indexOf("=");
    return { name: s.slice(0, i), command: s.slice(i + 1) };
  });
  const baseRssMb = treeRssMb();
  const set = transportSet(option, process.cwd());
  const t0 = performance.now();
  try {
    const answered = await Promise.all(
      set.start(plugins).map(async (started) => {
        const p = await started;
        await firstCall(p);
        return performance.now() - t0;
      }),
    );
    const allMs = Math.max(...answered);
    // Let start-up garbage settle, as it would before a session's first turn.
    await new Promise((r) => setTimeout(r, 1_000));
    return {
      option,
      plugins: plugins.length,
      allMs,
      firstMs: Math.min(...answered),
      baseRssMb,
      rssMb: treeRssMb(),
    };
  } finally {
    await set.stop();
  }
}

async function calls(option: TransportOption, entry: string): Promise<object> {
  const set = transportSet(option, process.cwd());
  try {
    const [started] = set.start([{ name: "minimal", command: entry }]);
    const p = await started!;
    const tools = p.client(ToolService);
    const unary: number[] = [];
    for (let i = 0; i < 1_200; i++) {
      const t = performance.now();
      await tools.getSchema({});
      if (i >= 200) unary.push(performance.now() - t);
    }
    const stream: number[] = [];
    const invoke = async (events: number) => {
      let n = 0;
      for await (const _ of tools.invoke({ call: { toolName: "stream", arguments: { events, bytes: 100 } } }))
        n++;
      return n;
    };
    for (let i = 0; i < 350; i++) {
      const t = performance.now();
      await invoke(10);
      if (i >= 50) stream.push(performance.now() - t);
    }
    await invoke(5_000);
    const t = performance.now();
    const got = await invoke(20_000);
    const seconds = (performance.now() - t) / 1000;
    const sorted = (v: number[]) => [...v].sort((a, b) => a - b);
    return {
      option,
      unaryMs: median(unary),
      unaryP95Ms: percentile(sorted(unary), 95),
      streamCallMs: median(stream),
      streamCallP95Ms: percentile(sorted(stream), 95),
      eventsPerSecond: (got - 1) / seconds,
    };
  } finally {
    await set.stop();
  }
}

const [mode, option, ...rest] = process.argv.slice(2);
const result =
  mode === "load"
    ? await load(option as TransportOption, rest)
    : await calls(option as TransportOption, rest[0]!);
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
