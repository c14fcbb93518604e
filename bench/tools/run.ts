// First-party tool provider benchmark: `node bench/tools/run.ts` (from the repository root).
//  1. Cold start of every first-party tool and context provider to its first answered
//     call (spawn, handshake, health check, discovery, GetSchema / GetCapabilities).
//  2. search on a generated 10,000-file tree (100 directories x 100 files): grep for a
//     rare literal, a common regex, files_with_matches, and a recursive glob.
//  3. web_fetch's HTML reduction (htmlToText) on generated pages of 256 KiB to 2 MiB:
//     time per size and the time ratio to the smallest, which stays near the size ratio
//     when the reduction is linear.
// Environment: BENCH_LAUNCHES (default 10), BENCH_RUNS (default 15).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolHarness } from "@pluggableharness/conformance";
import { ContextService } from "@pluggableharness/protocol/context";
import { ToolService } from "@pluggableharness/protocol/tool";
import { PluginHost } from "@pluggableharness/runtime";
import { htmlToText } from "../../providers/web/src/html.ts";

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

function page(bytes: number): string {
  const row = (i: number) =>
    `<section><h2>Part ${i}</h2><p>Some <strong>bold</strong> text and a <a href="/p/${i}">link</a>.</p>` +
    `<ul><li>one</li><li>two <code>x()</code></li></ul><table><tr><td>a</td><td>${i}</td></tr></table></section>\n`;
  let body = "";
  for (let i = 0; body.length < bytes; i++) body += row(i);
  return `<!doctype html><html><head><title>Bench</title><style>p{}</style></head><body>${body}</body></html>`;
}

function htmlReduction(): void {
  const sizes = [256, 512, 1024, 2048].map((k) => k * 1024);
  let base: number | undefined;
  for (const size of sizes) {
    const html = page(size);
    const samples: number[] = [];
    for (let i = 0; i < Math.max(3, Math.floor(runs / 3)); i++) {
      const t0 = performance.now();
      htmlToText(html, "https://example.org/");
      samples.push(performance.now() - t0);
    }
    const median = [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
    base ??= median;
    console.log(
      `htmlToText ${String(size / 1024).padStart(5)} KiB page: ${stats(samples)}, ${(median / base).toFixed(1)}x the 256 KiB time (${size / sizes[0]!}x the size)`,
    );
  }
}

for (const name of [...TOOL_PROVIDERS, "project-context"]) await coldStart(name);
await search();
htmlReduction();
