// The batch-budget rule, without engines: who may start, what a start reserves, and the
// bound a started session gets.
import { describe, expect, it } from "vitest";
import { decideStart } from "../src/budget.ts";

const base = {
  budgetUsd: 10,
  taskBudgetUsd: undefined,
  spentUsd: 0,
  reservedUsd: 0,
  averageTaskCostUsd: undefined,
  othersRunning: 0,
};

describe("batch budget", () => {
  it("without a budget, everything starts, bounded by the task budget only", () => {
    expect(decideStart({ ...base, budgetUsd: undefined })).toEqual({ start: true, estimateUsd: 0 });
    expect(decideStart({ ...base, budgetUsd: undefined, taskBudgetUsd: 2 })).toEqual({
      start: true,
      estimateUsd: 2,
      maxCostUsd: 2,
    });
  });

  it("with nothing known about a task's cost, one task runs alone first", () => {
    expect(decideStart(base)).toEqual({ start: true, estimateUsd: 0, maxCostUsd: 10 });
    expect(decideStart({ ...base, othersRunning: 1 })).toMatchObject({ start: false, wait: true });
    // Once a task completed, its cost is the estimate and tasks run side by side.
    expect(
      decideStart({ ...base, othersRunning: 3, averageTaskCostUsd: 1, spentUsd: 1, reservedUsd: 3 }),
    ).toEqual({
      start: true,
      estimateUsd: 1,
      maxCostUsd: 6,
    });
  });

  it("a task whose estimate the rest of the budget cannot cover does not start, saying why", () => {
    const d = decideStart({ ...base, taskBudgetUsd: 2, spentUsd: 7, reservedUsd: 2 });
    expect(d).toEqual({
      start: false,
      reason:
        "the batch budget cannot cover this task: $1.00 of $10.00 left (spent $7.00, $2.00 reserved by running tasks), estimate $2.00",
    });
    // Exactly covered is covered (float sums must not refuse it).
    // (1 - 0.7 - 0.2 is 0.09999999999999998 in floating point.)
    expect(
      decideStart({ ...base, budgetUsd: 1, taskBudgetUsd: 0.1, spentUsd: 0.7, reservedUsd: 0.2 }),
    ).toMatchObject({
      start: true,
    });
    // A spent budget refuses even an estimate of zero.
    expect(decideStart({ ...base, spentUsd: 10 })).toMatchObject({ start: false });
  });

  it("a started session is bounded by the smaller of its task budget and what is left", () => {
    expect(decideStart({ ...base, taskBudgetUsd: 2, spentUsd: 5 })).toEqual({
      start: true,
      estimateUsd: 2,
      maxCostUsd: 2,
    });
    expect(decideStart({ ...base, averageTaskCostUsd: 1, spentUsd: 8.5 })).toEqual({
      start: true,
      estimateUsd: 1,
      maxCostUsd: 1.5,
    });
  });
});
