// The micro-benchmarks other areas own (bench/runtime: plugin cold launch and streaming
// through the plugin boundary; bench/state: append and replay throughput; bench/tools: the
// tool providers), run as they are and folded into the report verbatim, so one command
// gives the whole picture without duplicating them.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { failureReason, runProcess } from "./spawn.ts";

export const MICRO_SUITES = ["runtime", "state", "tools"];

export interface MicroResult {
  name: string;
  command: string;
  ok: boolean;
  output: string;
}

export async function runMicro(root: string, timeoutMs: number): Promise<MicroResult[]> {
  const out: MicroResult[] = [];
  for (const name of MICRO_SUITES) {
    const script = join(root, "bench", name, "run.ts");
    if (!existsSync(script)) continue;
    const result = await runProcess(
      {
        command: process.execPath,
        args: [script],
        env: { ...process.env } as Record<string, string>,
        cwd: root,
      },
      { timeoutMs },
    );
    const failed = failureReason(result);
    out.push({
      name,
      command: `node bench/${name}/run.ts`,
      ok: failed === undefined,
      output: failed ? `${result.stdout.trim()}\n(failed: ${failed})` : result.stdout.trim(),
    });
  }
  return out;
}
