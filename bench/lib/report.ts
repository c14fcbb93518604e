// Turns scenario results into console tables, a Markdown report and a JSON document.
import { cpus, totalmem } from "node:os";
import type { Harness } from "../harnesses/types.ts";
import type { MicroResult } from "./micro.ts";
import type { HarnessResult, MetricDef, ScenarioResult } from "./scenario.ts";
import { fmt } from "./scenario.ts";

export interface HarnessInfo {
  id: string;
  label: string;
  kind: Harness["kind"];
  available: boolean;
  version?: string;
  note?: string;
  reason?: string;
}

export interface ProfileFinding {
  scenario: string;
  target: string;
  summary: string[];
}

export interface Report {
  date: string;
  command: string;
  machine: { cpu: string; cores: number; memoryGiB: number; platform: string; node: string };
  commit: string;
  harnesses: HarnessInfo[];
  scenarios: ScenarioResult[];
  toolMapping: Record<string, Record<string, string>>;
  profiles: ProfileFinding[];
  micro: MicroResult[];
  complete: boolean;
  /** False while the run is still going (the files are rewritten after every scenario). */
  finished: boolean;
}

export function machine(): Report["machine"] {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? "unknown",
    cores: c.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    platform: `${process.platform}/${process.arch}`,
    node: process.version,
  };
}

function cell(r: HarnessResult, m: MetricDef): string {
  const s = r.metrics[m.key];
  if (!s) return "–";
  return m.p95 && s.n > 1 ? `${fmt(s.median, m.unit)} (p95 ${fmt(s.p95, m.unit)})` : fmt(s.median, m.unit);
}

function status(r: HarnessResult): string {
  if (r.status === "ok") return r.failures.length > 0 ? `ok (${r.failures.length} failed runs)` : "ok";
  return `${r.status}: ${r.reason ?? ""}`;
}

function advantage(r: HarnessResult): string {
  if (r.kind === "ours") return "1.00× (ours)";
  return r.oursAdvantage === undefined ? "–" : `${r.oursAdvantage.toFixed(2)}×`;
}

function rows(s: ScenarioResult): string[][] {
  const header = ["harness", ...s.metrics.map((m) => m.label), "ours vs it", "runs", "status"];
  const body = s.harnesses.map((r) => [
    r.label,
    ...s.metrics.map((m) => (r.status === "ok" ? cell(r, m) : "–")),
    r.status === "ok" ? advantage(r) : "–",
    String(r.runs),
    status(r),
  ]);
  return [header, ...body];
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}

function markdownTable(table: string[][]): string {
  const [head, ...body] = table;
  return [
    `| ${head!.map(escapeCell).join(" | ")} |`,
    `| ${head!.map(() => "---").join(" | ")} |`,
    ...body.map((r) => `| ${r.map(escapeCell).join(" | ")} |`),
  ].join("\n");
}

/** A plain-text table for the console; long status cells are cut to keep lines readable. */
export function consoleTable(table: string[][]): string {
  const cut = table.map((r) => r.map((c) => (c.length > 70 ? `${c.slice(0, 67)}...` : c)));
  const widths = cut[0]!.map((_, i) => Math.max(...cut.map((r) => r[i]!.length)));
  return cut.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ")).join("\n");
}

export function consoleScenario(s: ScenarioResult): string {
  const lines = [`\n== ${s.title} (${s.runsPerHarness} runs each, medians)`, consoleTable(rows(s))];
  const primary = s.metrics.find((m) => m.key === s.primary)!;
  lines.push(
    `   "ours vs it": how many times better ours is on ${primary.label} (> 1: ours ${primary.better === "lower" ? "faster/smaller" : "higher"}).`,
  );
  for (const t of s.tables ?? []) {
    // The console gets the first rows and the last; the Markdown report has them all.
    const rows =
      t.rows.length > 14 ? [...t.rows.slice(0, 8), t.rows[0]!.map(() => "..."), ...t.rows.slice(-4)] : t.rows;
    lines.push(`   ${t.title}:`, consoleTable(rows));
  }
  for (const t of s.targets) {
    lines.push(
      `   target ${t.target}: ${t.measured} — ${t.met ? "met" : `MISSED${t.miss ? ` (${t.miss})` : ""}`}`,
    );
  }
  return lines.join("\n");
}

export function markdown(report: Report): string {
  const m = report.machine;
  const out: string[] = [
    `# Benchmark results, ${report.date}`,
    "",
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}; runner on Node ${m.node}; ` +
      `checkout ${report.commit}.`,
    "",
    `Command: \`${report.command}\`${report.complete ? "" : report.finished ? " (a partial run: not every scenario or harness was selected)" : " (IN PROGRESS: written after each scenario; the run has not finished)"}`,
    "",
    "How each figure is measured, how the peers are installed and pointed at the fake vendor, and the caveats: " +
      "[bench/README.md](../README.md). Every harness ran against the same loopback fake vendor with zero " +
      'latency, interleaved run by run; "ours vs it" is how many times better ours is on the scenario\'s main ' +
      "metric (above 1: ours is better), from medians measured in this same run.",
    "",
    "## Harnesses",
    "",
    markdownTable([
      ["harness", "version", "state"],
      ...report.harnesses.map((h) => [
        h.label,
        h.version ?? "–",
        h.available ? (h.note ?? "ok") : `unavailable: ${h.reason ?? ""}`,
      ]),
    ]),
    "",
    "## Targets",
    "",
    markdownTable([
      ["scenario", "target", "measured", "result"],
      ...report.scenarios.flatMap((s) =>
        s.targets.map((t) => [
          s.title,
          t.target,
          t.measured,
          t.met ? "met" : `missed${t.miss ? `: ${t.miss}` : ""}`,
        ]),
      ),
    ]),
    "",
  ];
  report.scenarios.forEach((s, i) => {
    out.push(
      `## ${i + 1}. ${s.title}`,
      "",
      s.what,
      "",
      `${s.runsPerHarness} timed runs per harness after one warm-up.`,
      "",
    );
    out.push(markdownTable(rows(s)), "");
    for (const n of s.notes) out.push(`- ${n}`);
    const failures = s.harnesses.filter((r) => r.failures.length > 0);
    for (const r of failures)
      out.push(`- ${r.label}: failed runs: ${[...new Set(r.failures)].slice(0, 3).join("; ")}`);
    if (s.notes.length > 0 || failures.length > 0) out.push("");
    for (const t of s.tables ?? []) out.push(`### ${t.title}`, "", t.what, "", markdownTable(t.rows), "");
  });
  const mapped = Object.keys(report.toolMapping);
  if (mapped.length > 0) {
    const ops = Object.keys(report.toolMapping[mapped[0]!]!);
    out.push(
      "## Tool mapping of the scripted calls",
      "",
      markdownTable([
        ["action", ...mapped.map((id) => report.harnesses.find((h) => h.id === id)?.label ?? id)],
        ...ops.map((op) => [op, ...mapped.map((id) => report.toolMapping[id]![op] ?? "–")]),
      ]),
      "",
    );
  }
  if (report.profiles.length > 0) {
    out.push("## Profiles of missed targets", "");
    for (const p of report.profiles) {
      out.push(`### ${p.scenario}: ${p.target}`, "", ...p.summary, "");
    }
  }
  if (report.micro.length > 0) {
    out.push("## Micro-benchmarks", "", "Run as they are, once each; their own output:", "");
    for (const m of report.micro) out.push(`### \`${m.command}\``, "", "```text", m.output, "```", "");
  }
  return `${out.join("\n")}\n`;
}

export function toJson(report: Report): string {
  return `${JSON.stringify(report, (_, v) => (typeof v === "bigint" ? Number(v) : v), 2)}\n`;
}
