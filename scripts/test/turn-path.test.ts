// The turn-path figures: call counts of repository functions summed from a precise-coverage
// snapshot, module top levels and node_modules left out, files and packages counted once.
import { join, sep } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { figuresOf, isTestCode, packageOf } from "../turn-path.ts";

const root = join(import.meta.dirname, "..", "..");
const url = (rel: string) => pathToFileURL(join(root, rel)).href;
const fn = (functionName: string, startOffset: number, count: number) => ({
  functionName,
  isBlockCoverage: true,
  ranges: [{ startOffset, endOffset: startOffset + 10, count }],
});

describe("turn-path figures", () => {
  it("sums call counts per package and leaves out top levels, uncalled functions and node_modules", () => {
    const f = figuresOf(
      [
        { scriptId: "1", url: url("packages/kernel/src/a.ts"), functions: [fn("", 0, 1), fn("run", 20, 3)] },
        {
          scriptId: "2",
          url: url("packages/kernel/src/b.ts"),
          functions: [fn("step", 5, 2), fn("idle", 40, 0)],
        },
        { scriptId: "3", url: url("packages/state/src/c.ts"), functions: [fn("append", 5, 4)] },
        { scriptId: "4", url: url("node_modules/zod/x.js"), functions: [fn("parse", 5, 100)] },
        { scriptId: "5", url: "node:fs", functions: [fn("readFileSync", 5, 9)] },
      ],
      () => true,
    );
    expect(f).toMatchObject({ hops: 9, functions: 3, files: 3, packages: 2 });
    expect(f.byPackage[0]).toEqual({ name: "packages/kernel", hops: 5, files: 2 });
  });

  it("names packages and test code by path", () => {
    expect(packageOf(["providers", "openai", "src", "x.ts"].join(sep))).toBe("providers/openai");
    expect(isTestCode(["packages", "kernel", "test", "loop", "harness.ts"].join(sep))).toBe(true);
    expect(isTestCode(["packages", "kernel", "src", "kernel.ts"].join(sep))).toBe(false);
  });
});
