// Mutation testing (npm run mutation): not part of npm test or CI; run by hand. Reports go to
// reports/mutation/ (git-ignored); the score table lives in docs/conformance.md.
//
// The mutate globs are grouped by area so one area can be run alone:
//   MUTATE=domain,policy npm run mutation          (the default is every group)
//   npm run mutation -- --mutate packages/kernel/src/domain/cost.ts   (one file)
//   npm run mutation -- --concurrency 2            (when the machine is otherwise idle)
// The gate is its own module (packages/kernel/src/loop/gate/); its tests are named in
// vitest.mutation.config.ts.
export const GROUPS = {
  // The pure domain core, the stream accumulator (domain/accumulator.ts) included.
  domain: ["packages/kernel/src/domain/**/*.ts", "!packages/kernel/src/domain/index.ts"],
  // The policy engine: rule layers, specificity and conflicts, argument matching, built-ins.
  policy: [
    "packages/config/src/policy-engine.ts",
    "packages/config/src/policy.ts",
    "packages/config/src/arg-match.ts",
    "packages/config/src/builtin-rules.ts",
  ],
  // The plan/apply gate.
  gate: ["packages/kernel/src/loop/gate/**/*.ts"],
};

const wanted = (process.env.MUTATE ?? "domain,policy,gate").split(",").map((s) => s.trim());
for (const g of wanted)
  if (!(g in GROUPS)) throw new Error(`MUTATE: unknown group ${g} (${Object.keys(GROUPS)})`);

// Where reports go; two runs at once (one per area) need different places.
const reports = process.env.MUTATION_REPORTS ?? "reports/mutation";

/** @type {import("@stryker-mutator/api/core").PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  plugins: ["@stryker-mutator/vitest-runner"],
  // Each mutant runs only the tests that covered it (perTest), and vitest only loads the test
  // files related to the mutated file.
  vitest: { configFile: "vitest.mutation.config.ts", related: true },
  coverageAnalysis: "perTest",
  // Two shared cores: one worker keeps the machine usable.
  concurrency: 1,
  mutate: wanted.flatMap((g) => GROUPS[g]),
  ignorePatterns: ["dist", "bench", "reports", "third_party", ".agent-test-tmp", ".stryker-tmp*"],
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: `${reports}/index.html` },
  jsonReporter: { fileName: `${reports}/mutation.json` },
  tempDirName: ".stryker-tmp",
  // Re-runs test only the mutants and tests that changed since the last run.
  incremental: true,
  incrementalFile: `${reports}/incremental.json`,
  // Static mutants (module-level tables and constants) cannot be traced to single tests, so
  // each would rerun every test: about 80% of the run time on two cores. They are skipped
  // (reported as "ignored", outside the score); docs/conformance.md says so.
  ignoreStatic: true,
  thresholds: { high: 85, low: 70, break: null },
};
