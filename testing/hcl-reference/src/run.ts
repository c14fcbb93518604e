// Runs the whole differential: builds the reference, feeds it every input,
// compares each answer with ours and sorts the disagreements into explained
// (by an allowlist entry) and unexplained.

import { type AllowlistEntry, explain } from "./allowlist.ts";
import { compareResults, type Disagreement } from "./compare.ts";
import {
  type CorpusInput,
  fixtureInputs,
  identifierInputs,
  STANDARD_ENV,
  STANDARD_VARIABLES,
  specInputs,
  upstreamInputs,
} from "./corpus.ts";
import { generateInputs } from "./generate.ts";
import { ours } from "./ours.ts";
import { buildReference, runReference, type Toolchain } from "./reference.ts";

export interface Finding {
  input: CorpusInput;
  disagreement: Disagreement;
  explainedBy?: AllowlistEntry;
}

export interface DifferentialReport {
  toolchain: Toolchain;
  inputs: Record<CorpusInput["source"], number>;
  /** Inputs with at least one disagreement, explained or not. */
  disagreeing: number;
  /** Inputs with at least one unexplained disagreement. */
  unexplainedInputs: number;
  findings: Finding[];
  /** How many findings each allowlist entry explained. */
  explainedBy: Record<string, number>;
  millis: { build: number; reference: number; ours: number };
}

export const DEFAULT_SEED = 20250425;
export const DEFAULT_GENERATED = 3000;

export async function runDifferential(
  toolchain: Toolchain,
  options: { seed?: number; generated?: number } = {},
): Promise<DifferentialReport> {
  const t0 = performance.now();
  const bin = buildReference(toolchain);
  const t1 = performance.now();
  const enc = new TextEncoder();
  const generated = generateInputs(options.seed ?? DEFAULT_SEED, options.generated ?? DEFAULT_GENERATED).map(
    (text, i): CorpusInput => ({
      source: "generated",
      id: `generated:${i}`,
      bytes: enc.encode(text),
      variables: STANDARD_VARIABLES,
      env: STANDARD_ENV,
    }),
  );
  const inputs = [
    ...specInputs(),
    ...upstreamInputs(),
    ...fixtureInputs(),
    ...identifierInputs(),
    ...generated,
  ];
  const refs = await runReference(bin, inputs);
  const t2 = performance.now();
  const findings: Finding[] = [];
  const dec = new TextDecoder();
  let disagreeing = 0;
  let unexplainedInputs = 0;
  const explainedBy: Record<string, number> = {};
  inputs.forEach((input, i) => {
    const ref = refs[i]!;
    const mine = ours(input);
    const ds = compareResults(ref, mine);
    if (ds.length === 0) return;
    disagreeing++;
    let unexplained = false;
    const text = dec.decode(input.bytes);
    for (const disagreement of ds) {
      const entry = explain({ input, text, ref, ours: mine, disagreement });
      if (entry === undefined) unexplained = true;
      else explainedBy[entry.id] = (explainedBy[entry.id] ?? 0) + 1;
      findings.push({ input, disagreement, ...(entry === undefined ? {} : { explainedBy: entry }) });
    }
    if (unexplained) unexplainedInputs++;
  });
  const t3 = performance.now();
  const count = (s: CorpusInput["source"]) => inputs.filter((i) => i.source === s).length;
  return {
    toolchain,
    inputs: {
      spec: count("spec"),
      upstream: count("upstream"),
      fixtures: count("fixtures"),
      identifiers: count("identifiers"),
      generated: count("generated"),
    },
    disagreeing,
    unexplainedInputs,
    findings,
    explainedBy,
    millis: { build: t1 - t0, reference: t2 - t1, ours: t3 - t2 },
  };
}
