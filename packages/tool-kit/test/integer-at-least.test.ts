import { type Diagnostic, integerAtLeast } from "@pluggableharness/tool-kit";
import { describe, expect, it } from "vitest";

describe("integerAtLeast", () => {
  it("passes whole numbers at or above the minimum", () => {
    const problems: Diagnostic[] = [];
    expect(integerAtLeast({ a: 1000, b: 5000 }, problems, "a", 1000)).toBe(1000);
    expect(integerAtLeast({ a: 1000, b: 5000 }, problems, "b", 1000)).toBe(5000);
    expect(problems).toEqual([]);
  });

  it("records one problem naming the attribute for a fraction or a value below the minimum", () => {
    const problems: Diagnostic[] = [];
    integerAtLeast({ a: 99 }, problems, "a", 100);
    integerAtLeast({ b: 1.5 }, problems, "b", 0);
    expect(problems.map((p) => [p.attributePath, p.summary])).toEqual([
      [["a"], "a must be an integer of at least 100"],
      [["b"], "b must be an integer of at least 0"],
    ]);
  });
});
