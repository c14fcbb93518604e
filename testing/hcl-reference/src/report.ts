// `npm run report -w @pluggableharness/hcl-reference [-- --seed N --count N --show N]`:
// runs the differential and prints the counts, the explained classes and
// every unexplained disagreement.

import { parseArgs } from "node:util";
import { findToolchain } from "./reference.ts";
import { DEFAULT_GENERATED, DEFAULT_SEED, runDifferential } from "./run.ts";

const { values } = parseArgs({
  options: { seed: { type: "string" }, count: { type: "string" }, show: { type: "string" } },
});
const tc = findToolchain();
if ("missing" in tc) {
  console.error(
    `hcl differential: ${tc.missing}. Run .ci/run's apt-get step (golang-go, golang-github-hashicorp-hcl-v2-dev).`,
  );
  process.exit(2);
}
const report = await runDifferential(tc, {
  seed: values.seed === undefined ? DEFAULT_SEED : Number(values.seed),
  generated: values.count === undefined ? DEFAULT_GENERATED : Number(values.count),
});
const total = Object.values(report.inputs).reduce((a, b) => a + b, 0);
console.log(`reference: ${tc.goVersion}, golang-github-hashicorp-hcl-v2-dev ${tc.hclVersion}`);
console.log(
  `inputs: ${total} (${Object.entries(report.inputs)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ")})`,
);
console.log(
  `inputs with a disagreement: ${report.disagreeing}; with an unexplained one: ${report.unexplainedInputs}`,
);
for (const [id, n] of Object.entries(report.explainedBy)) console.log(`  explained by ${id}: ${n}`);
const show = values.show === undefined ? 50 : Number(values.show);
const unexplained = report.findings.filter((f) => f.explainedBy === undefined);
const byKind = new Map<string, typeof unexplained>();
for (const f of unexplained) {
  const key = `${f.disagreement.kind}: ${f.disagreement.reference.split(" ")[0]} <> ${f.disagreement.ours.split(" ")[0]}`;
  byKind.set(key, [...(byKind.get(key) ?? []), f]);
}
for (const [key, fs] of [...byKind].sort((a, b) => b[1].length - a[1].length)) {
  console.log(`\n${fs.length}\t${key}`);
  for (const f of fs.slice(0, Math.max(1, Math.ceil(show / byKind.size)))) {
    console.log(
      `\t${f.input.id} ${f.disagreement.path}\n\t  reference: ${f.disagreement.reference.slice(0, 300)}\n\t  ours:      ${f.disagreement.ours.slice(0, 300)}`,
    );
  }
}
console.log(
  `\nmillis: build ${report.millis.build.toFixed(0)}, reference ${report.millis.reference.toFixed(0)}, ours ${report.millis.ours.toFixed(0)}`,
);
