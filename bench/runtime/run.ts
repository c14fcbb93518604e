// Plugin runtime benchmark: `npm run bench:runtime`.
//  1. Cold launch of a minimal TypeScript plugin to its first successful call
//     (spawn, handshake, health check, broker/stdio streams, discovery, GetSchema),
//     with Node's compile cache warm (the default) and disabled.
//  2. Server-streaming throughput through the plugin boundary (ToolService.Invoke),
//     one event per message and with small events batched into larger messages.
// Both with AutoMTLS (the default) and without it (plaintext with the launch token), which
// is what the TLS costs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolService } from "@pluggableharness/protocol/tool";
import { PluginHost } from "@pluggableharness/runtime";

const plugin = fileURLToPath(new URL("./plugin/minimal-plugin.ts", import.meta.url));
const launches = Number(process.env["BENCH_LAUNCHES"] ?? 25);
const events = Number(process.env["BENCH_EVENTS"] ?? 200_000);

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

async function coldLaunch(label: string, nodeCompileCache: string | false, autoMTLS = true): Promise<void> {
  const samples: number[] = [];
  for (let i = 0; i < launches; i++) {
    const host = new PluginHost({ name: "minimal", command: plugin, nodeCompileCache, autoMTLS });
    const t0 = performance.now();
    await host.client(ToolService).getSchema({});
    samples.push(performance.now() - t0);
    await host.shutdown();
  }
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `cold launch to first call (${label}, n=${launches}): median ${percentile(sorted, 50).toFixed(1)} ms, ` +
      `p95 ${percentile(sorted, 95).toFixed(1)} ms, min ${sorted[0]!.toFixed(1)} ms`,
  );
}

async function throughput(host: PluginHost, bytes: number, batch: number, label = ""): Promise<void> {
  const tools = host.client(ToolService);
  const run = async (n: number) => {
    let messages = 0;
    const t0 = performance.now();
    for await (const _ of tools.invoke({
      call: { toolName: "stream", arguments: { events: n, bytes, batch } },
    })) {
      messages++;
    }
    return { seconds: (performance.now() - t0) / 1000, messages };
  };
  await run(Math.min(events, 20_000)); // warm-up
  const { seconds, messages } = await run(events);
  console.log(
    `streaming ${bytes} B events${label}, ${batch === 1 ? "one per message" : `${batch} per message`}: ` +
      `${Math.round(events / seconds).toLocaleString("en-US")} events/s ` +
      `(${Math.round(messages / seconds).toLocaleString("en-US")} messages/s, ` +
      `${((events * bytes) / seconds / 1e6).toFixed(1)} MB/s)`,
  );
}

const cacheDir = mkdtempSync(join(tmpdir(), "ph-bench-cache-"));
try {
  console.log(`Node ${process.version}, ${process.platform}/${process.arch}`);
  await coldLaunch("compile cache warm", cacheDir);
  await coldLaunch("compile cache warm, no AutoMTLS", cacheDir, false);
  await coldLaunch("no compile cache", false);
  for (const autoMTLS of [true, false]) {
    const host = new PluginHost({ name: "minimal", command: plugin, nodeCompileCache: cacheDir, autoMTLS });
    const label = autoMTLS ? "" : " (no AutoMTLS)";
    try {
      await throughput(host, 100, 1, label);
      await throughput(host, 100, 100, label);
      await throughput(host, 16 * 1024, 1, label);
    } finally {
      await host.shutdown();
    }
  }
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
