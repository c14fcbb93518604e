// `agent worker`: takes the fleet's jobs and runs each task (run-task.ts). BullMQ gives the
// distributed parts: a job is held under a lock the worker renews; a worker that dies
// (SIGKILL, machine gone) stops renewing it, and another worker's stalled-job check puts
// the job back in the queue, where the next taker resumes the task from its last upload.
// A task that keeps crashing is retried up to the batch's attempts, then ends failed with
// its reason. The catalog decides whether a claimed task may start at all.
import { hostname } from "node:os";
import type { Tracer } from "@pluggableharness/kernel";
import { DelayedError, type Job, Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { Catalog } from "./catalog.ts";
import { PREFIX, QUEUE_NAME } from "./queue.ts";
import { RedisThrottle } from "./rate-limit.ts";
import { redisConnection } from "./redis.ts";
import { runTask } from "./run-task.ts";
import type { JobData } from "./types.ts";

export interface FleetWorkerOptions {
  readonly redisUrl: string;
  readonly postgresUrl: string;
  /** Tasks run at once by this worker. */
  readonly concurrency: number;
  /** Where checkouts and session files live while a task runs (the same path on every machine). */
  readonly workRoot: string;
  readonly installationRoot: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** How long a job's lock lasts without renewal: a dead worker's job is free after it. */
  readonly lockMs: number;
  /** How often this worker looks for stalled jobs (other workers' dead ones). */
  readonly stalledCheckMs: number;
  readonly heartbeatMs?: number;
  readonly log: (line: string) => void;
  readonly workerId?: string;
  /** Every task's trace events, labelled with their batch and task (run-task.ts). */
  readonly trace?: Tracer;
}

/** How often a job a batch's concurrency limit holds back is offered again. */
const BUSY_RETRY_MS = 500;
const MAX_STALLS = 2;
/** How long a job waits when the catalog could not be reached to claim it. */
const CATALOG_RETRY_MS = 1_000;

export class FleetWorker {
  readonly id: string;
  readonly #worker: Worker<JobData>;
  readonly #catalog: Catalog;
  readonly #connection: Redis;
  readonly #queue: Queue<JobData>;
  readonly #handBack = new AbortController();
  #closing: Promise<void> | undefined;

  private constructor(
    id: string,
    worker: Worker<JobData>,
    catalog: Catalog,
    connection: Redis,
    queue: Queue<JobData>,
  ) {
    this.id = id;
    this.#worker = worker;
    this.#catalog = catalog;
    this.#connection = connection;
    this.#queue = queue;
  }

  static async start(o: FleetWorkerOptions): Promise<FleetWorker> {
    const id = o.workerId ?? `${hostname()}:${process.pid}`;
    const catalog = await Catalog.connect(o.postgresUrl, { max: Math.max(4, o.concurrency * 2 + 2) });
    const connection = redisConnection(o.redisUrl);
    const queue = new Queue<JobData>(QUEUE_NAME, { connection, prefix: PREFIX });
    // One 429 anywhere: every kernel behind this throttle waits, and no worker takes a new job.
    const throttle = new RedisThrottle(connection, PREFIX, (ms) => {
      queue.rateLimit(ms).catch(() => {});
    });
    let self: FleetWorker | undefined;
    const processor = async (job: Job<JobData>, token?: string) => {
      const { taskId, batchId } = job.data;
      const claimed = performance.now();
      let claim: Awaited<ReturnType<Catalog["claim"]>>;
      try {
        claim = await catalog.claim(taskId, id);
      } catch (err) {
        // The catalog is unreachable (restarting, say): that is no attempt of the task's;
        // the job waits and is offered again.
        o.log(`task ${taskId}: the catalog is unreachable (${(err as Error).message}); trying again shortly`);
        await job.moveToDelayed(Date.now() + CATALOG_RETRY_MS, token);
        throw new DelayedError();
      }
      const claimMs = performance.now() - claimed;
      if (claim.kind === "busy") {
        await job.moveToDelayed(Date.now() + BUSY_RETRY_MS + Math.floor(Math.random() * 250), token);
        throw new DelayedError();
      }
      if (claim.kind !== "run") {
        if (claim.kind === "ended")
          o.log(`task ${taskId}: ${claim.status}${claim.detail ? `: ${claim.detail}` : ""}`);
        return;
      }
      o.log(`task ${taskId} (batch ${batchId}): attempt ${claim.attempt} on ${id}`);
      try {
        const outcome = await runTask({
          catalog,
          batch: claim.batch,
          task: claim.task,
          attempt: claim.attempt,
          ...(claim.maxCostUsd !== undefined ? { maxCostUsd: claim.maxCostUsd } : {}),
          workRoot: o.workRoot,
          installationRoot: o.installationRoot,
          env: o.env,
          throttle,
          log: o.log,
          handBack: self!.#handBack.signal,
          heartbeatMs: o.heartbeatMs ?? 1_000,
          claimMs,
          ...(o.trace ? { trace: o.trace } : {}),
        });
        if (outcome.kind === "handed_back") {
          await job.moveToDelayed(Date.now(), token);
          throw new DelayedError();
        }
        if (outcome.kind === "done") o.log(`task ${taskId}: ${outcome.result.status}`);
      } catch (err) {
        if (err instanceof DelayedError) throw err;
        const reason = (err as Error).message.split("\n")[0] ?? String(err);
        await catalog.attemptFailed(taskId, claim.attempt, reason).catch(() => {});
        const attempts = job.opts.attempts ?? 1;
        if (job.attemptsMade + 1 >= attempts) {
          await catalog.fail(taskId, `failed ${attempts} attempt(s); the last: ${reason}`).catch(() => {});
        }
        o.log(`task ${taskId}: attempt ${claim.attempt} failed: ${reason}`);
        throw err;
      }
    };
    const worker = new Worker<JobData>(QUEUE_NAME, processor, {
      connection,
      prefix: PREFIX,
      concurrency: o.concurrency,
      lockDuration: o.lockMs,
      stalledInterval: o.stalledCheckMs,
      // A job whose worker died this many times more is given up, and ends failed saying so.
      maxStalledCount: MAX_STALLS,
      autorun: false,
    });
    // A job the queue gave up on without our processor deciding (too many stalls) still
    // ends in the catalog, with BullMQ's reason.
    worker.on("failed", (job, err) => {
      if (!job) return;
      if (err.message.includes("stalled more than allowable limit")) {
        catalog
          .fail(job.data.taskId, `its worker died ${MAX_STALLS + 1} times (${err.message})`)
          .catch(() => {});
      }
    });
    worker.on("error", (err) => o.log(`worker: ${err.message}`));
    self = new FleetWorker(id, worker, catalog, connection, queue);
    worker.run().catch((err) => o.log(`worker stopped: ${(err as Error).message}`));
    await worker.waitUntilReady();
    return self;
  }

  /** Stops taking jobs and waits for the running ones to finish. */
  drain(): Promise<void> {
    this.#closing ??= this.#close(false);
    return this.#closing;
  }

  /** Stops now: running sessions are interrupted, uploaded and their jobs handed back. */
  handBack(): Promise<void> {
    this.#handBack.abort();
    this.#closing ??= this.#close(false);
    return this.#closing;
  }

  async #close(force: boolean): Promise<void> {
    await this.#worker.close(force).catch(() => {});
    await this.#queue.close().catch(() => {});
    await this.#catalog.close().catch(() => {});
    this.#connection.disconnect();
  }
}
