// Where the time of one traced run of ours went, from the outside: stdout lines of
// `--output-format stream-json` (by type) and the requests the fake vendor received, all on
// the runner's clock. Complements the CPU profile, which cannot see waiting (fsync, sockets,
// timers, other processes).
import type { ObservedRun } from "./scenario.ts";
import { median, nsToMs } from "./stats.ts";

const ms = (v: number) => `${v.toFixed(0)} ms`;

export function timelineMarkdown(run: ObservedRun): string[] {
  const { result, requests } = run;
  const t = (at: bigint) => nsToMs(at - result.spawnAt);
  const lines = result.lines ?? [];
  const other = run.other.filter((r) => r.endpoint !== "other" || r.path.includes("count_tokens"));
  const out: string[] = [];
  const init = lines.find((l) => l.type === "init");
  const first = requests[0];
  const head = [
    `spawn → first stdout line (\`${lines[0]?.type ?? "none"}\`) ${lines[0] ? ms(t(lines[0].at)) : "–"}`,
  ];
  if (init && init !== lines[0]) head.push(`\`init\` line ${ms(t(init.at))}`);
  const before = other.filter((r) => first && r.receivedAt.hrtime < first.receivedAt.hrtime);
  if (before.length > 0)
    head.push(
      `${before.length} other vendor call(s) first (${before.map((r) => r.path).join(", ")}) from ${ms(t(before[0]!.receivedAt.hrtime))}`,
    );
  if (first) head.push(`first model request ${ms(t(first.receivedAt.hrtime))}`);
  head.push(`exit ${ms(t(result.exitAt))}`);
  out.push(`Timeline of a traced run (times from spawn): ${head.join("; ")}.`);

  if (requests.length >= 2) {
    const answered: number[] = [];
    const tools: number[] = [];
    const after: number[] = [];
    const extra: number[] = [];
    const gaps: number[] = [];
    for (let i = 0; i + 1 < requests.length; i++) {
      const from = requests[i]!.bodyCompleteAt.hrtime;
      const to = requests[i + 1]!.receivedAt.hrtime;
      gaps.push(nsToMs(to - from));
      const inTurn = lines.filter((l) => l.at >= from && l.at <= to);
      const assistant = inTurn.find((l) => l.type === "message" && l.role === "assistant");
      const results = inTurn.filter((l) => l.type === "tool_result");
      if (assistant) answered.push(nsToMs(assistant.at - from));
      if (assistant && results.length > 0) tools.push(nsToMs(results[results.length - 1]!.at - assistant.at));
      if (results.length > 0) after.push(nsToMs(to - results[results.length - 1]!.at));
      const calls = other.filter((r) => r.receivedAt.hrtime >= from && r.receivedAt.hrtime <= to);
      extra.push(calls.length);
    }
    const part = (label: string, values: number[]) =>
      values.length > 0 ? `${label} ${ms(median(values))}` : `${label} –`;
    out.push(
      `Between consecutive model requests (${gaps.length} turns, medians): request received in full → next request ` +
        `${ms(median(gaps))}, made of: ${part("answer streamed and the assistant message printed", answered)}; ` +
        `${part("assistant message → last tool_result printed", tools)}; ` +
        `${part("last tool_result → next model request", after)} (with ${median(extra)} other vendor call(s) per turn, e.g. count_tokens).`,
    );
    // Medians hide the few slow turns (a plugin started on its first call, say): show them.
    const slowest = gaps
      .map((gap, i) => ({ gap, turn: i + 1 }))
      .sort((a, b) => b.gap - a.gap)
      .slice(0, 3);
    out.push(
      `All turns together ${ms(gaps.reduce((a, b) => a + b, 0))}; slowest: ` +
        `${slowest.map((s) => `turn ${s.turn} ${ms(s.gap)}`).join(", ")}.`,
    );
  }
  const resultLine = lines.find((l) => l.type === "result");
  const last = requests[requests.length - 1];
  if (resultLine && last) {
    out.push(
      `Last model request received in full → \`result\` line ${ms(nsToMs(resultLine.at - last.bodyCompleteAt.hrtime))}; ` +
        `\`result\` line → exit ${ms(nsToMs(result.exitAt - resultLine.at))}.`,
    );
  }
  if (result.memory) {
    const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
    out.push(
      `Peak RSS of the tree ${mb(result.memory.peakKb)} over ${result.memory.peakProcesses} processes: ` +
        `${result.memory.breakdown.map((b) => `${b.process} ${mb(b.kb)}`).join(", ")}.`,
    );
  }
  return out;
}
