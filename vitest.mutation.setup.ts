// Loaded before every test file in mutation runs (vitest.mutation.config.ts). A mutant that
// breaks a property fails on its first counterexample: shrinking it, which can take longer
// than Stryker's timeout, tells a mutation run nothing.
import fc from "fast-check";

fc.configureGlobal({ endOnFailure: true });
