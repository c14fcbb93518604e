// The batch budget's rule, kept pure so it is tested without engines. The catalog applies
// it inside the transaction that holds the batch's row, so concurrent workers see each
// other's reservations: a task starts only when what is left after the spend so far and
// the estimates of running tasks covers its own estimate; a running task's session gets
// what is left as its own max_cost_usd, so the kernel stops it at the limit.

export interface BudgetInput {
  readonly budgetUsd: number | undefined;
  readonly taskBudgetUsd: number | undefined;
  /** Spend so far: finished tasks, and running ones up to their last turn boundary. */
  readonly spentUsd: number;
  /** Estimates reserved by the other running tasks. */
  readonly reservedUsd: number;
  /** What the batch's completed tasks cost on average, when any completed. */
  readonly averageTaskCostUsd: number | undefined;
  /** The batch's other tasks running now. */
  readonly othersRunning: number;
}

export type BudgetDecision =
  | { readonly start: true; readonly estimateUsd: number; readonly maxCostUsd?: number }
  | { readonly start: false; readonly wait?: false; readonly reason: string }
  /** Not now: ask again once a running task has finished. */
  | { readonly start: false; readonly wait: true; readonly reason: string };

const usd = (n: number) => `$${n.toFixed(2)}`;

/**
 * A task's estimate is its own budget when the batch sets one, else the average of the
 * batch's completed tasks. With neither, nothing is known about what a task costs: one
 * task runs alone until it completes and gives the first measure, so a batch budget is
 * never overrun by a first wave of tasks started blind.
 */
export function decideStart(b: BudgetInput): BudgetDecision {
  if (b.budgetUsd !== undefined && b.taskBudgetUsd === undefined && b.averageTaskCostUsd === undefined) {
    if (b.othersRunning > 0) {
      return { start: false, wait: true, reason: "the first task is measuring what a task costs" };
    }
  }
  const estimate = b.taskBudgetUsd ?? b.averageTaskCostUsd ?? 0;
  if (b.budgetUsd === undefined) {
    return {
      start: true,
      estimateUsd: estimate,
      ...(b.taskBudgetUsd !== undefined ? { maxCostUsd: b.taskBudgetUsd } : {}),
    };
  }
  const left = b.budgetUsd - b.spentUsd - b.reservedUsd;
  // A micro-dollar of slack: float sums must not refuse a task the budget covers exactly.
  if (left <= 0.000_001 || left + 0.000_001 < estimate) {
    return {
      start: false,
      reason: `the batch budget cannot cover this task: ${usd(Math.max(0, left))} of ${usd(b.budgetUsd)} left (spent ${usd(b.spentUsd)}, ${usd(b.reservedUsd)} reserved by running tasks), estimate ${usd(estimate)}`,
    };
  }
  const maxCostUsd = b.taskBudgetUsd === undefined ? left : Math.min(b.taskBudgetUsd, left);
  return { start: true, estimateUsd: estimate, maxCostUsd };
}
