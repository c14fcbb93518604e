// First-party tool provider benchmark: `node bench/tools/run.ts` (from the repository root).
//  1. Cold start of every first-party tool and context provider to its first answered
//     call (spawn, handshake, health check, discovery, GetSchema / GetCapabilities).
//  2. search on a generated 10,000-file tree (100 directories x 100 files): grep for a
//     rare literal, a common regex, files_with_matches, and a recursive glob.
// Environment: BENCH_LAUNCHES (default 10), BENCH_RUNS (default 15).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { ContextService } from "@pluggableharness/protocol/context";
import { ToolService } from "@pluggableharness/protocol/tool";
import { PluginHost } from "@pluggableharness/runtime";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const launches = Number(process.env["BENCH_LAUNCHES"] ?? 10);
const runs = Number(process.env["BENCH_RUNS"] ?? 15);
const TOOL_PROVIDERS = ["filesystem", "search", "exec", "web", "user", "task"];

function stats(samples: number[]): string {
  const s = [...samples].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return `median ${at(50).toFixed(1)} ms, p95 ${at(95).toFixed(1)} ms, min ${s[0]!.toFixed(1)} ms (n=${s.length})`;
}

async function coldStart(name: string): Promise<void> {
  const command = join(ROOT, "providers", name, "src", "main.ts");
  const samples: number[] = [];
  for (let i = 0; i < launches; i++) {
    const host = new PluginHost({ name, command });
    const t0 = performance.now();
    if (name === "project-context") await host.client(ContextService).getCapabilities({});
    else await host.client(ToolService).getSchema({});
    samples.push(performance.now() - t0);
    await host.shutdown();
  }
  console.log(`cold start ${name.padEnd(16)} ${stats(samples)}`);
}

async function search(): Promise<void> {
  const tree = mkdtempSync(join(tmpdir(), "ph-bench-search-"));
  try {
    for (let d = 0; d < 100; d++) {
      const dir = join(tree, `pkg${d}`, "src");
      mkdirSync(dir, { recursive: true });
      for (let f = 0; f < 100; f++) {
        const body = `// module ${d}/${f}\nimport { helper } from "../lib";\nexport function run${f}(x: number) {\n  return helper(x) + ${f};\n}\n`;
        writeFileSync(
          join(dir, `file${f}.ts`),
          (d === 42 && f === 7 ? "// NEEDLE here\n" : "") + body.repeat(4),
        );
      }
    }
    const h = new ToolHarness({
      executable: join(ROOT, "providers", "search", "src", "main.ts"),
      name: "search",
    });
    await h.configure({ roots: [tree] });
    const cases: [string, string, Record<string, unknown>][] = [
      ["grep rare literal", "grep", { pattern: "NEEDLE", literal: true }],
      ["grep common regex (capped at 100)", "grep", { pattern: "helper\\(x\\) \\+ \\d+" }],
      ["grep files_with_matches, all files", "grep", { pattern: "export function", output_mode: "count" }],
      ["glob **/file9?.ts", "glob", { pattern: "**/file9?.ts", limit: 2000 }],
    ];
    for (const [label, tool, args] of cases) {
      await h.invoke(tool, args as never, { cwd: tree }); // warm the page cache
      const samples: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        const res = await h.invoke(tool, args as never, { cwd: tree });
        samples.push(performance.now() - t0);
        if (res.error) throw new Error(`${label}: ${res.error.message}`);
      }
      console.log(`search 10k files: ${label.padEnd(36)} ${stats(samples)}`);
    }
    await h.close();
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
}

for (const name of [...TOOL_PROVIDERS, "project-context"]) await coldStart(name);
await search();
