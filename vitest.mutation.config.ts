// The test set Stryker runs (npm run mutation; see stryker.config.mjs). Only the suites that
// exercise the mutated modules: the pure domain tests, the policy tests and the loop and
// callback tests. The ledger and purity tests read files, not behaviour, and are left out. The gate's
// tests run the loop (in process), so they join only when the gate group is mutated.
import { defineConfig } from "vitest/config";

const groups = (process.env.MUTATE ?? "domain,policy,gate").split(",").map((s) => s.trim());

export default defineConfig({
  test: {
    include: [
      "packages/kernel/test/domain/**/*.test.ts",
      // Policy rules arrive through agent.hcl, so every config suite may exercise the engine.
      "packages/config/test/**/*.test.ts",
      // The gate's own tests, the real-path proofs that go through it (issue 25), and every
      // other loop and callback suite: permission asks, hooks, sub-agents, locks and recovery
      // all run calls through the gate (about 30 s in all, in process).
      ...(groups.includes("gate")
        ? ["packages/kernel/test/loop/**/*.test.ts", "packages/kernel/test/callbacks/**/*.test.ts"]
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
