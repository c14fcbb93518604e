// Fleet mode (issue 37): batches of headless sessions on BullMQ/Redis with a PostgreSQL
// catalog. The CLI's `agent batch` and `agent worker` import this package lazily, so an
// ordinary `agent run` never loads it.
import "./no-native.ts";

export { type BudgetDecision, type BudgetInput, decideStart } from "./budget.ts";
export { Catalog, type CheckpointVerdict } from "./catalog.ts";
export { applyWorkDiff, checkoutDir, prepareCheckout, workDiff } from "./checkout.ts";
export { FleetQueue, PREFIX, QUEUE_NAME } from "./queue.ts";
export { RedisThrottle } from "./rate-limit.ts";
export { redisConnection } from "./redis.ts";
export { RESUME_PROMPT, runTask } from "./run-task.ts";
export { snapshotSessions } from "./snapshot.ts";
export { ledgerTotals } from "./summary.ts";
export {
  fillTemplate,
  type PlannedTask,
  parseTarget,
  readTargetsFile,
  TargetError,
  tasksFromJsonl,
  tasksFromTargets,
} from "./targets.ts";
export type * from "./types.ts";
export { FINAL_STATUSES } from "./types.ts";
export { FleetWorker, type FleetWorkerOptions } from "./worker.ts";
