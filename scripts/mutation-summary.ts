// Summarises a Stryker JSON report (reports/mutation/mutation.json by default) as the
// markdown tables docs/conformance.md keeps: the score per area and per file, and every
// surviving or uncovered mutant with its place and replacement, for the survivors list.
//   node scripts/mutation-summary.ts [report.json ...] [--survivors]
// Several reports (runs over different files) are merged; a later report's file replaces
// an earlier one's.
import { readFileSync } from "node:fs";

interface Mutant {
  mutatorName: string;
  replacement?: string;
  status: string;
  location: { start: { line: number; column: number } };
}
interface Report {
  files: Record<string, { mutants: Mutant[] }>;
}

const args = process.argv.slice(2);
const paths = args.filter((a) => !a.startsWith("--"));
const report: Report = { files: {} };
for (const path of paths.length > 0 ? paths : ["reports/mutation/mutation.json"]) {
  const r = JSON.parse(readFileSync(path, "utf8")) as Report;
  Object.assign(report.files, r.files);
}

/** The area a mutated file belongs to, as the score table groups them. */
function area(file: string): string {
  if (file.endsWith("domain/accumulator.ts")) return "accumulator";
  if (file.includes("packages/kernel/src/domain/")) return "domain";
  if (file.includes("packages/config/src/")) return "policy engine";
  if (file.includes("packages/kernel/src/loop/")) return "gate";
  return "other";
}

interface Tally {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  errors: number;
}
const empty = (): Tally => ({ killed: 0, timeout: 0, survived: 0, noCoverage: 0, ignored: 0, errors: 0 });

function count(t: Tally, m: Mutant): void {
  if (m.status === "Killed") t.killed++;
  else if (m.status === "Timeout") t.timeout++;
  else if (m.status === "Survived") t.survived++;
  else if (m.status === "NoCoverage") t.noCoverage++;
  else if (m.status === "Ignored") t.ignored++;
  else t.errors++;
}

/** Stryker's mutation score: detected over valid mutants (ignored and errors left out). */
function score(t: Tally): string {
  const valid = t.killed + t.timeout + t.survived + t.noCoverage;
  return valid === 0 ? "n/a" : `${((100 * (t.killed + t.timeout)) / valid).toFixed(2)}%`;
}

const row = (name: string, t: Tally) =>
  `| ${name} | ${score(t)} | ${t.killed} | ${t.timeout} | ${t.survived} | ${t.noCoverage} | ${t.ignored} |`;
const header = [
  "| Area | Score | Killed | Timed out | Survived | No coverage | Ignored (static) |",
  "| --- | --- | --- | --- | --- | --- | --- |",
];

const byArea = new Map<string, Tally>();
const byFile = new Map<string, Tally>();
const total = empty();
for (const [file, { mutants }] of Object.entries(report.files)) {
  const a = byArea.get(area(file)) ?? empty();
  const f = empty();
  for (const m of mutants) {
    count(a, m);
    count(f, m);
    count(total, m);
  }
  byArea.set(area(file), a);
  byFile.set(file, f);
}

const lines = [...header];
for (const [name, t] of [...byArea].sort()) lines.push(row(name, t));
lines.push(row("**all**", total));
lines.push("", ...header.map((h) => h.replace("| Area |", "| File |")));
for (const [file, t] of [...byFile].sort()) lines.push(row(`\`${file}\``, t));

if (args.includes("--survivors")) {
  lines.push("");
  for (const [file, { mutants }] of Object.entries(report.files).sort()) {
    for (const m of mutants) {
      if (m.status !== "Survived" && m.status !== "NoCoverage") continue;
      const at = `${file}:${m.location.start.line}:${m.location.start.column}`;
      const replacement = (m.replacement ?? "").replace(/\s+/g, " ").slice(0, 100);
      lines.push(`${m.status}\t${at}\t${m.mutatorName}\t${replacement}`);
    }
  }
}
console.log(lines.join("\n"));
