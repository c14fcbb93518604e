// The test set Stryker runs (npm run mutation; see stryker.config.mjs). Only the suites that
// exercise the mutated modules: the pure domain tests, the policy tests and the gate's loop
// tests. The ledger and purity tests read files, not behaviour, and are left out. The gate's
// tests run the loop (in process), so they join only when the gate group is mutated.
import { defineConfig } from "vitest/config";

const groups = (process.env.MUTATE ?? "domain,policy,gate").split(",").map((s) => s.trim());

export default defineConfig({
  test: {
    include: [
      "packages/kernel/test/domain/**/*.test.ts",
      // Policy rules arrive through agent.hcl, so every config suite may exercise the engine.
      "packages/config/test/**/*.test.ts",
      // The gate's own tests, and the real-path proofs that go through it (issue 25).
      ...(groups.includes("gate")
        ? ["packages/kernel/test/loop/gate.test.ts", "packages/kernel/test/loop/wiring.test.ts"]
        : []),
    ],
    exclude: ["packages/kernel/test/domain/ledger.test.ts", "packages/kernel/test/domain/purity.test.ts"],
    // One worker that keeps its module graph between runs: Stryker switches mutants at run
    // time, so reloading every test file's imports for each mutant is pure overhead.
    isolate: false,
    setupFiles: ["vitest.mutation.setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
