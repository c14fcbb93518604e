import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/test/**/*.test.ts",
      "providers/*/test/**/*.test.ts",
      "testing/*/test/**/*.test.ts",
      "scripts/test/**/*.test.ts",
    ],
    // A scratch directory for the packed and installed CLI (packages/cli/test/installed.ts).
    globalSetup: ["packages/cli/test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Two cores on CI: plugin subprocess tests oversubscribe quickly.
    maxWorkers: 2,
  },
});
