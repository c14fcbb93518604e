// Measures the path of one turn through the repository's code: a prompt → the model asks
// for a file read → the tool runs → the next model request. It counts, exactly (no
// sampling), every call of a repository function in that window with V8's precise
// coverage (call counts), and reports the call hops (the sum of those counts), the distinct
// functions, files and packages they live in. Run: `node scripts/turn-path.ts [--list]`.
//
// The kernel runs in this process on its in-process transport (the seam the loop tests use,
// packages/kernel/test/loop/harness.ts), with the scripted model and the tools fixture as
// in-process plugins, so every hop is in one isolate and counted. A warm-up prompt runs the
// same turn first (module loading, first-time caches); the measured window is the second
// prompt of the same session, from send() until the model plugin receives that run's second
// request. Worker threads and plugin processes (first-party providers) are other isolates
// and are not counted; the fixtures' own code is reported apart from the product's.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session as Inspector, type Profiler } from "node:inspector";
import { tmpdir } from "node:os";
import { join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { InProcessPluginFactory } from "../packages/kernel/src/index.ts";

const root = resolve(import.meta.dirname, "..");

export interface PathFigures {
  /** Calls of repository functions in the window (sum of call counts). */
  readonly hops: number;
  readonly functions: number;
  readonly files: number;
  readonly packages: number;
  /** Per package: hops and files, most hops first. */
  readonly byPackage: ReadonlyArray<{ name: string; hops: number; files: number }>;
}

/** The workspace package a repository file belongs to ("packages/kernel"), or its top folder. */
export function packageOf(rel: string): string {
  const parts = rel.split(sep);
  return ["packages", "providers", "testing"].includes(parts[0]!) && parts.length > 2
    ? `${parts[0]}/${parts[1]}`
    : parts[0]!;
}

/** Test code: the fixtures standing in for a vendor and a tool provider, and this script. */
export function isTestCode(rel: string): boolean {
  return rel.split(sep).includes("test") || rel.startsWith(`scripts${sep}`);
}

/** Sums a precise-coverage snapshot over the repository's own files (node_modules left out). */
export function figuresOf(
  coverage: readonly Profiler.ScriptCoverage[],
  keep: (rel: string) => boolean,
): PathFigures {
  let hops = 0;
  let functions = 0;
  const packages = new Map<string, { hops: number; files: Set<string> }>();
  for (const script of coverage) {
    if (!script.url.startsWith("file:")) continue;
    const rel = relative(root, fileURLToPath(script.url));
    if (rel.startsWith("..") || rel.split(sep).includes("node_modules") || !keep(rel)) continue;
    for (const fn of script.functions) {
      // The first range of a function spans its body: its count is how often it was called.
      const count = fn.ranges[0]?.count ?? 0;
      // The module's top level (an unnamed range from offset 0) is not a call on the path.
      if (count === 0 || (fn.functionName === "" && fn.ranges[0]?.startOffset === 0)) continue;
      hops += count;
      functions++;
      const p = packageOf(rel);
      const entry = packages.get(p) ?? { hops: 0, files: new Set<string>() };
      entry.hops += count;
      entry.files.add(rel);
      packages.set(p, entry);
    }
  }
  const byPackage = [...packages]
    .map(([name, e]) => ({ name, hops: e.hops, files: e.files.size }))
    .sort((a, b) => b.hops - a.hops);
  return {
    hops,
    functions,
    files: byPackage.reduce((n, p) => n + p.files, 0),
    packages: byPackage.length,
    byPackage,
  };
}

/** Runs the turn twice (warm-up, measured) and returns the measured window's coverage. */
async function measure(): Promise<Profiler.ScriptCoverage[]> {
  // Loaded here, so the figures' helpers above import nothing of the kernel.
  const { SessionStatus } = await import("@pluggableharness/protocol/session");
  const { createPlugin: modelPlugin } = await import(
    "../packages/kernel/test/loop/fixtures/scripted-model-plugin.ts"
  );
  const { calls, Harness, reply, tool } = await import("../packages/kernel/test/loop/harness.ts");
  const inspector = new Inspector();
  inspector.connect();
  const post = <T>(method: string, params?: object): T => {
    // Same-thread inspector calls answer synchronously: the snapshot is taken at the call.
    let out: T | undefined;
    let failure: Error | null = null;
    inspector.post(method, params ?? {}, (err, res) => {
      failure = err;
      out = res as T;
    });
    if (failure) throw failure;
    return out as T;
  };
  post("Profiler.enable");
  post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });

  let armed = false;
  let requestsSinceArmed = 0;
  let snapshot: Profiler.ScriptCoverage[] | undefined;
  // The scripted model, with a probe at its streaming entry: the measured run's second
  // request ends the window before the plugin does any work on it.
  const model: InProcessPluginFactory = (host) => {
    const plugin = modelPlugin(host);
    for (const s of plugin.services) {
      const impl = s.implementation as Record<string, unknown>;
      const stream = impl["streamCompletion"] as ((...a: unknown[]) => AsyncIterable<unknown>) | undefined;
      if (!stream) continue;
      impl["streamCompletion"] = (...args: unknown[]) => {
        if (armed && ++requestsSinceArmed === 2 && !snapshot)
          snapshot = post<Profiler.TakePreciseCoverageReturnType>("Profiler.takePreciseCoverage").result;
        return stream.apply(impl, args);
      };
    }
    return plugin as ReturnType<InProcessPluginFactory>;
  };

  const h = new Harness();
  // An inline plugin gets only the attributes given: the model's script directory is ours.
  const scriptDir = mkdtempSync(join(tmpdir(), "ph-turn-path-"));
  writeFileSync(
    join(scriptDir, "path.json"),
    JSON.stringify({
      turns: [
        calls(tool("w1", "read", { path: "notes.txt" })),
        reply("read it"),
        calls(tool("m1", "read", { path: "notes.txt" })),
        reply("read it again"),
      ],
    }),
  );
  try {
    const k = await h.kernel({
      only: [
        { name: "model", fixture: "model", factory: model, attrs: { script_dir: JSON.stringify(scriptDir) } },
        { name: "tools", fixture: "tools" },
      ],
    });
    writeFileSync(join(k.projectDir, "notes.txt"), "one line\n");
    const s = await k.kernel.startSession({ prompt: "[path] read notes.txt" });
    if ((await s.idle()) !== SessionStatus.COMPLETED) throw new Error("the warm-up run did not complete");
    // Counters start from zero at the prompt (taking a snapshot resets them).
    post("Profiler.takePreciseCoverage");
    armed = true;
    s.send("[path] read it once more");
    if ((await s.idle()) !== SessionStatus.COMPLETED) throw new Error("the measured run did not complete");
    if (!snapshot) throw new Error("the model plugin never received the measured run's second request");
    return snapshot;
  } finally {
    post("Profiler.stopPreciseCoverage");
    inspector.disconnect();
    await h.dispose();
    rmSync(scriptDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const coverage = await measure();
  const product = figuresOf(coverage, (rel) => !isTestCode(rel));
  const all = figuresOf(coverage, () => true);
  const line = (label: string, f: PathFigures) =>
    `${label}: ${f.hops} call hops, ${f.functions} functions, ${f.files} files, ${f.packages} packages`;
  console.log("prompt → model → read → next model request (in-process transport, after a warm-up):");
  console.log(line("  product code", product));
  console.log(line("  with the test fixtures", all));
  if (process.argv.includes("--list")) {
    for (const p of product.byPackage) console.log(`    ${p.name}: ${p.hops} hops in ${p.files} files`);
  }
}
