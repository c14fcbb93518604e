// Per-turn cost of the dynamic context and memory providers, over the real go-plugin process
// transport: workspace-context's Contribute (git state, file tree, files touched) on a
// repository (default: this checkout), and the memory provider's Recall for each store with
// N records. Prints median / p90 / max in ms; nothing is asserted.
//
// Usage: node bench/context/run.ts [--repo DIR] [--runs N] [--records N]
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { launchPlugin } from "@pluggableharness/conformance";
import { ContextService } from "@pluggableharness/protocol/context";
import { MemoryScope, MemoryService, MemoryType } from "@pluggableharness/protocol/memory";

const root = fileURLToPath(new URL("../..", import.meta.url));
const { values } = parseArgs({
  options: {
    repo: { type: "string", default: root },
    runs: { type: "string", default: "30" },
    records: { type: "string", default: "500" },
  },
});
const runs = Number(values.runs);

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1);
  return `median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${s[s.length - 1]!.toFixed(1)} ms (${s.length} runs)`;
}

async function time(n: number, f: () => Promise<unknown>): Promise<number[]> {
  await f(); // warm-up
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    out.push(performance.now() - t);
  }
  return out;
}

const ws = launchPlugin({
  executable: join(root, "providers/workspace-context/src/main.ts"),
  name: "workspace-context",
});
const ctx = ws.host.client(ContextService);
const contribute = () =>
  ctx.contribute({
    sessionId: "s",
    turnId: "t",
    tokenBudget: 2000n,
    workingDirectory: values.repo!,
    filesTouched: ["src/a.ts"],
  });
console.log(`workspace-context Contribute on ${values.repo}: ${stats(await time(runs, contribute))}`);
await ws.close();

for (const store of ["markdown", "sqlite"]) {
  const dir = mkdtempSync(join(tmpdir(), "bench-memory-"));
  mkdirSync(join(dir, "project", ".git"), { recursive: true });
  const m = launchPlugin({
    executable: join(root, "providers/memory/src/main.ts"),
    name: "memory",
    env: { XDG_DATA_HOME: join(dir, "data") },
  });
  const mem = m.host.client(MemoryService);
  await mem.configure({ config: { store } });
  const callContext = { sessionId: "s", turnId: "t", workingDirectory: join(dir, "project") };
  for (let i = 0; i < Number(values.records); i++) {
    await mem.record({
      type: [MemoryType.USER, MemoryType.FEEDBACK, MemoryType.PROJECT, MemoryType.REFERENCE][i % 4]!,
      scope: i % 3 === 0 ? MemoryScope.GLOBAL : MemoryScope.PROJECT,
      id: `record-${i}`,
      title: `Record ${i}`,
      content: [
        {
          block: { case: "text", value: { text: `Fact number ${i} about module m${i % 50} and its tests.` } },
        },
      ],
      provenance: { sourceSessionId: "s", recordedBy: "bench" },
      callContext,
    });
  }
  const recall = () =>
    mem.recall({
      sessionId: "s",
      turnId: "t",
      tokenBudget: 1500n,
      workingDirectory: callContext.workingDirectory,
      filesTouched: ["src/m7/index.ts"],
    });
  console.log(`memory (${store}) Recall over ${values.records} records: ${stats(await time(runs, recall))}`);
  await m.close();
  rmSync(dir, { recursive: true, force: true });
}
