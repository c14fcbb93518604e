// The queue: one BullMQ queue for every batch, one job per task whose id is the task's
// id (so a task is never queued twice), retried on a crash up to the batch's attempts.
// Everything a worker needs beyond the ids is in the catalog.
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { JobData } from "./types.ts";

export const QUEUE_NAME = "agent-fleet";
/** Redis key prefix: BullMQ's keys and the shared vendor pauses. */
export const PREFIX = "agent-fleet";

export class FleetQueue {
  readonly queue: Queue<JobData>;

  constructor(connection: Redis) {
    this.queue = new Queue<JobData>(QUEUE_NAME, { connection, prefix: PREFIX });
  }

  async enqueue(batchId: string, taskIds: readonly string[], maxAttempts: number): Promise<void> {
    // A requeued task's earlier job (failed, kept for its reason) would block the id.
    await Promise.all(taskIds.map((id) => this.queue.remove(id).catch(() => 0)));
    await this.queue.addBulk(
      taskIds.map((taskId) => ({
        name: "task",
        data: { batchId, taskId },
        opts: {
          jobId: taskId,
          attempts: maxAttempts,
          backoff: { type: "fixed", delay: 200 },
          removeOnComplete: true,
          removeOnFail: { count: 10_000 },
        },
      })),
    );
  }

  /** Removes the tasks' jobs that no worker holds; a held one ends at the worker's next check. */
  async remove(taskIds: readonly string[]): Promise<number> {
    let removed = 0;
    for (const id of taskIds) removed += await this.queue.remove(id).catch(() => 0);
    return removed;
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
