// `npm run faults`: runs every fault scenario `runs` times (FAULTS_RUNS overrides the
// count, FAULTS_ONLY=<substring> picks scenarios) and prints one row per fault kind.
// Exit status 1 when any run did not survive or lost an event.
import { scenarios } from "./scenarios/index.ts";

interface Row {
  fault: string;
  proves: string;
  runs: number;
  survived: number;
  lost: number;
  notes: string[];
}

const only = process.env.FAULTS_ONLY;
const override = process.env.FAULTS_RUNS ? Number(process.env.FAULTS_RUNS) : undefined;
const rows: Row[] = [];

for (const scenario of scenarios) {
  if (only && !scenario.name.includes(only)) continue;
  const runs = override ?? scenario.runs;
  const row: Row = { fault: scenario.name, proves: scenario.proves, runs, survived: 0, lost: 0, notes: [] };
  for (let i = 0; i < runs; i++) {
    let outcome: Awaited<ReturnType<typeof scenario.run>>;
    try {
      outcome = await scenario.run(i);
    } catch (error) {
      outcome = { survived: false, lost: 0, note: `scenario threw: ${(error as Error).message}` };
    }
    if (outcome.survived) row.survived++;
    row.lost += outcome.lost;
    if (outcome.note && row.notes.length < 3) row.notes.push(`#${i}: ${outcome.note}`);
    process.stderr.write(outcome.survived && outcome.lost === 0 ? "." : "x");
  }
  process.stderr.write(` ${scenario.name}\n`);
  rows.push(row);
}

const header = ["fault", "runs", "survived", "lost", "proves"];
const table = rows.map((r) => [r.fault, String(r.runs), String(r.survived), String(r.lost), r.proves]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((t) => (t[i] ?? "").length)));
const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const t of table) console.log(line(t));
for (const r of rows) for (const n of r.notes) console.log(`  ${r.fault} ${n}`);

const failed = rows.some((r) => r.survived < r.runs || r.lost > 0);
process.exitCode = failed ? 1 : 0;
