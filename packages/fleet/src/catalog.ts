// The catalog: every batch, task, attempt and uploaded session file, in PostgreSQL. It is
// the fleet's source of truth (Redis only says which job to run next): results, spend and
// budgets live here, and every write a worker makes is fenced by the task's attempt
// number, so a worker that lost its task (declared stalled, then came back) can neither
// upload over its successor nor complete the task a second time.
import pg from "pg";
import { type BudgetDecision, decideStart } from "./budget.ts";
import { SCHEMA, SCHEMA_LOCK } from "./schema.ts";
import type {
  BatchRecord,
  BatchSpec,
  BatchStatusCounts,
  ClaimResult,
  SessionFileRow,
  TaskRecord,
  TaskResult,
  TaskStatus,
} from "./types.ts";

/** A task counts toward a batch's concurrency while its worker's heartbeat is this fresh. */
export const HEARTBEAT_FRESH_MS = 15_000;

type Row = Record<string, unknown>;

function num(v: unknown): number | undefined {
  return v === null || v === undefined ? undefined : Number(v);
}

function batchOf(r: Row): BatchRecord {
  return {
    id: String(r["id"]),
    createdAt: new Date(r["created_at"] as string),
    prompt: String(r["prompt"]),
    profile: String(r["profile"]),
    configSource: String(r["config_source"]),
    configName: String(r["config_name"]),
    headlessAsk: r["headless_ask"] === "allow" ? "allow" : "deny",
    taskBudgetUsd: num(r["task_budget_usd"]),
    budgetUsd: num(r["budget_usd"]),
    maxAttempts: Number(r["max_attempts"]),
    concurrency: num(r["concurrency"]),
    taskCount: Number(r["task_count"]),
    status: r["status"] === "cancelled" ? "cancelled" : "running",
    spentUsd: Number(r["spent_usd"]),
    reservedUsd: Number(r["reserved_usd"]),
    labels: (r["labels"] ?? {}) as Record<string, string>,
  };
}

function taskOf(r: Row): TaskRecord {
  return {
    id: String(r["id"]),
    batchId: String(r["batch_id"]),
    idx: Number(r["idx"]),
    target: r["target"] as TaskRecord["target"],
    prompt: String(r["prompt"]),
    status: String(r["status"]) as TaskStatus,
    attempt: Number(r["attempt"]),
    worker: (r["worker"] as string | null) ?? undefined,
    sessionId: (r["session_id"] as string | null) ?? undefined,
    baseTree: (r["base_tree"] as string | null) ?? undefined,
    workDiff: (r["work_diff"] as string | null) ?? undefined,
    exitCode: num(r["exit_code"]),
    sessionStatus: (r["session_status"] as string | null) ?? undefined,
    detail: (r["detail"] as string | null) ?? undefined,
    finalMessage: (r["final_message"] as string | null) ?? undefined,
    costUsd: Number(r["cost_usd"]),
    inputTokens: Number(r["input_tokens"]),
    outputTokens: Number(r["output_tokens"]),
    turns: Number(r["turns"]),
    denials: Number(r["denials"]),
    resumedFrom: num(r["resumed_from"]),
    overheadMs: num(r["overhead_ms"]),
    startedAt: r["started_at"] ? new Date(r["started_at"] as string) : undefined,
    finishedAt: r["finished_at"] ? new Date(r["finished_at"] as string) : undefined,
  };
}

export class Catalog {
  readonly #pool: pg.Pool;

  private constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Connects and creates the tables when missing. */
  static async connect(url: string, options: { max?: number } = {}): Promise<Catalog> {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.max ?? 4,
      connectionTimeoutMillis: 10_000,
      // An idle client whose server went away must not crash the process.
      idleTimeoutMillis: 10_000,
    });
    pool.on("error", () => {});
    const catalog = new Catalog(pool);
    await catalog.#tx(async (c) => {
      await c.query("select pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
      await c.query(SCHEMA);
    });
    return catalog;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }

  async #tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.#pool.connect();
    // A checked-out client whose server goes away emits "error" besides failing its query;
    // unheard, that event would end the process. The failed query is what we act on.
    const ignore = () => {};
    c.on("error", ignore);
    let broken: Error | undefined;
    try {
      await c.query("begin");
      const out = await fn(c);
      await c.query("commit");
      return out;
    } catch (err) {
      await c.query("rollback").catch((e: Error) => {
        broken = e;
      });
      throw err;
    } finally {
      c.off("error", ignore);
      // A connection that could not even roll back is discarded, not reused.
      c.release(broken);
    }
  }

  async createBatch(spec: BatchSpec): Promise<void> {
    await this.#tx(async (c) => {
      await c.query(
        `insert into fleet_batches (id, prompt, profile, config_source, config_name, headless_ask,
           task_budget_usd, budget_usd, max_attempts, concurrency, task_count, labels)
         values ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
        [
          spec.id,
          spec.prompt,
          spec.profile,
          spec.configSource,
          spec.configName,
          spec.headlessAsk,
          spec.taskBudgetUsd ?? null,
          spec.budgetUsd ?? null,
          spec.maxAttempts,
          spec.concurrency ?? null,
          spec.tasks.length,
          JSON.stringify(spec.labels ?? {}),
        ],
      );
      for (const t of spec.tasks) {
        await c.query("insert into fleet_tasks (id, batch_id, idx, target, prompt) values ($1,$2,$3,$4,$5)", [
          t.id,
          spec.id,
          t.idx,
          JSON.stringify(t.target),
          t.prompt,
        ]);
      }
    });
  }

  async batch(id: string): Promise<BatchRecord | undefined> {
    const r = await this.#pool.query("select * from fleet_batches where id = $1", [id]);
    return r.rows[0] ? batchOf(r.rows[0]) : undefined;
  }

  /** Batches whose id starts with `prefix`, newest first (ids are ULIDs). */
  async findBatches(prefix: string): Promise<BatchRecord[]> {
    const r = await this.#pool.query(
      "select * from fleet_batches where id like $1 order by id desc limit 20",
      [`${prefix.replace(/[%_\\]/g, "\\$&")}%`],
    );
    return r.rows.map(batchOf);
  }

  async listBatches(limit = 20): Promise<BatchRecord[]> {
    const r = await this.#pool.query("select * from fleet_batches order by id desc limit $1", [limit]);
    return r.rows.map(batchOf);
  }

  async task(id: string): Promise<TaskRecord | undefined> {
    const r = await this.#pool.query("select * from fleet_tasks where id = $1", [id]);
    return r.rows[0] ? taskOf(r.rows[0]) : undefined;
  }

  async tasks(batchId: string): Promise<TaskRecord[]> {
    const r = await this.#pool.query("select * from fleet_tasks where batch_id = $1 order by idx", [batchId]);
    return r.rows.map(taskOf);
  }

  async attempts(
    taskId: string,
  ): Promise<Array<{ attempt: number; worker: string; outcome: string | undefined }>> {
    const r = await this.#pool.query(
      "select attempt, worker, outcome from fleet_attempts where task_id = $1 order by attempt",
      [taskId],
    );
    return r.rows.map((x: Row) => ({
      attempt: Number(x["attempt"]),
      worker: String(x["worker"]),
      outcome: (x["outcome"] as string | null) ?? undefined,
    }));
  }

  /**
   * A worker takes a task: in one transaction holding the batch's row, so concurrent
   * claims see each other's reservations. Ends a task that may not start (batch
   * cancelled; the budget left cannot cover its estimate) instead of running it.
   */
  async claim(taskId: string, worker: string): Promise<ClaimResult> {
    return this.#tx(async (c) => {
      const t = await c.query("select * from fleet_tasks where id = $1 for update", [taskId]);
      if (!t.rows[0]) return { kind: "missing" };
      const task = taskOf(t.rows[0]);
      const b = await c.query("select * from fleet_batches where id = $1 for update", [task.batchId]);
      const batch = batchOf(b.rows[0]);
      if (task.finishedAt) return { kind: "finished", task };
      const end = async (status: TaskStatus, detail: string) => {
        await c.query(
          `update fleet_tasks set status = $2, detail = $3, finished_at = now(), reserved_usd = 0 where id = $1`,
          [taskId, status, detail],
        );
        await c.query(
          "update fleet_batches set reserved_usd = greatest(0, reserved_usd - $2) where id = $1",
          [batch.id, t.rows[0].reserved_usd],
        );
      };
      if (batch.status === "cancelled") {
        await end("cancelled", "the batch was cancelled before this task started");
        return { kind: "ended", status: "cancelled" };
      }
      const running = await c.query(
        `select count(*)::int as n from fleet_tasks where batch_id = $1 and id <> $2 and status = 'running'
           and finished_at is null and heartbeat_at > now() - ($3::int * interval '1 millisecond')`,
        [batch.id, taskId, HEARTBEAT_FRESH_MS],
      );
      const othersRunning = Number(running.rows[0].n);
      if (batch.concurrency !== undefined && othersRunning >= batch.concurrency) return { kind: "busy" };
      const avg = await c.query(
        "select avg(cost_usd) as a from fleet_tasks where batch_id = $1 and status = 'completed'",
        [batch.id],
      );
      const decision: BudgetDecision = decideStart({
        budgetUsd: batch.budgetUsd,
        taskBudgetUsd: batch.taskBudgetUsd,
        spentUsd: batch.spentUsd,
        // This task's own earlier reservation is released first.
        reservedUsd: Math.max(0, batch.reservedUsd - Number(t.rows[0].reserved_usd)),
        averageTaskCostUsd: num(avg.rows[0].a),
        othersRunning,
      });
      if (!decision.start && decision.wait) return { kind: "busy" };
      if (!decision.start) {
        await end("skipped", decision.reason);
        return { kind: "ended", status: "skipped", detail: decision.reason };
      }
      const attempt = task.attempt + 1;
      await c.query(
        "update fleet_batches set reserved_usd = greatest(0, reserved_usd - $2) + $3 where id = $1",
        [batch.id, t.rows[0].reserved_usd, decision.estimateUsd],
      );
      await c.query(
        `update fleet_tasks set attempt = $2, status = 'running', worker = $3, heartbeat_at = now(),
           reserved_usd = $4, started_at = coalesce(started_at, now()) where id = $1`,
        [taskId, attempt, worker, decision.estimateUsd],
      );
      await c.query("insert into fleet_attempts (task_id, attempt, worker) values ($1, $2, $3)", [
        taskId,
        attempt,
        worker,
      ]);
      return {
        kind: "run",
        attempt,
        task: { ...task, attempt },
        batch,
        ...(decision.maxCostUsd !== undefined ? { maxCostUsd: decision.maxCostUsd } : {}),
      };
    });
  }

  /** Gives a claimed task back (a batch at its concurrency, a draining worker): it may start again. */
  async release(taskId: string, attempt: number, outcome: string): Promise<void> {
    await this.#tx(async (c) => {
      const t = await c.query("select * from fleet_tasks where id = $1 for update", [taskId]);
      const row = t.rows[0];
      if (!row || Number(row.attempt) !== attempt || row.finished_at) return;
      await c.query("update fleet_tasks set status = 'queued', heartbeat_at = null where id = $1", [taskId]);
      await c.query(
        "update fleet_attempts set ended_at = now(), outcome = $3 where task_id = $1 and attempt = $2",
        [taskId, attempt, outcome],
      );
    });
  }

  /**
   * A turn boundary: the session files and the checkout's changes replace the previous
   * upload, the task's spend so far is charged to the batch, the heartbeat renewed.
   * Returns what the worker must act on; `superseded` means another attempt owns the task.
   */
  async checkpoint(
    taskId: string,
    attempt: number,
    upload: {
      sessionId: string;
      files: ReadonlyArray<{ sessionId: string; isRoot: boolean; bytes: Buffer }>;
      turn: number;
      baseTree: string;
      workDiff: string;
      costUsd: number;
    },
  ): Promise<CheckpointVerdict> {
    return this.#tx(async (c) => {
      const t = await c.query("select * from fleet_tasks where id = $1 for update", [taskId]);
      const row = t.rows[0];
      if (!row || Number(row.attempt) !== attempt || row.finished_at) return { superseded: true };
      for (const f of upload.files) {
        await c.query(
          `insert into fleet_session_files (session_id, task_id, batch_id, is_root, attempt, turn, bytes)
           values ($1,$2,$3,$4,$5,$6,$7)
           on conflict (session_id) do update set attempt = excluded.attempt, turn = excluded.turn,
             bytes = excluded.bytes, uploaded_at = now()`,
          [f.sessionId, taskId, row.batch_id, f.isRoot, attempt, upload.turn, f.bytes],
        );
      }
      const delta = upload.costUsd - Number(row.cost_usd);
      await c.query(
        `update fleet_tasks set session_id = $2, base_tree = $3, work_diff = $4, cost_usd = $5,
           heartbeat_at = now() where id = $1`,
        [taskId, upload.sessionId, upload.baseTree, upload.workDiff, upload.costUsd],
      );
      const b = await c.query(
        "update fleet_batches set spent_usd = spent_usd + $2 where id = $1 returning *",
        [row.batch_id, delta],
      );
      return verdictOf(batchOf(b.rows[0]));
    });
  }

  /** Renews the heartbeat; says whether the task should stop (cancelled, over budget, superseded). */
  async heartbeat(taskId: string, attempt: number): Promise<CheckpointVerdict> {
    const r = await this.#pool.query(
      `with t as (
         update fleet_tasks set heartbeat_at = now() where id = $1 and attempt = $2 and finished_at is null
         returning batch_id)
       select b.* from fleet_batches b join t on b.id = t.batch_id`,
      [taskId, attempt],
    );
    if (!r.rows[0]) return { superseded: true };
    return verdictOf(batchOf(r.rows[0]));
  }

  /**
   * Records a task's result exactly once: only the attempt that owns the task, and only
   * while it is unfinished, gets `true`; a duplicate (a stalled worker coming back, a
   * redelivered job) gets `false` and changes nothing.
   */
  async complete(taskId: string, attempt: number, result: TaskResult): Promise<boolean> {
    return this.#tx(async (c) => {
      const t = await c.query("select * from fleet_tasks where id = $1 for update", [taskId]);
      const row = t.rows[0];
      if (!row || Number(row.attempt) !== attempt || row.finished_at) return false;
      await c.query(
        `update fleet_tasks set status = $2, exit_code = $3, session_status = $4, detail = $5,
           final_message = $6, cost_usd = $7, input_tokens = $8, output_tokens = $9, turns = $10,
           denials = $11, work_diff = coalesce($12, work_diff), session_id = coalesce($13, session_id),
           resumed_from = $14, overhead_ms = $15, reserved_usd = 0, finished_at = now(), heartbeat_at = null
         where id = $1`,
        [
          taskId,
          result.status,
          result.exitCode ?? null,
          result.sessionStatus ?? null,
          result.detail ?? null,
          result.finalMessage ?? null,
          result.costUsd,
          result.inputTokens,
          result.outputTokens,
          result.turns,
          result.denials,
          result.workDiff ?? null,
          result.sessionId ?? null,
          result.resumedFrom ?? null,
          result.overheadMs ?? null,
        ],
      );
      for (const f of result.files ?? []) {
        await c.query(
          `insert into fleet_session_files (session_id, task_id, batch_id, is_root, attempt, turn, bytes)
           values ($1,$2,$3,$4,$5,$6,$7)
           on conflict (session_id) do update set attempt = excluded.attempt, turn = excluded.turn,
             bytes = excluded.bytes, uploaded_at = now()`,
          [f.sessionId, taskId, row.batch_id, f.isRoot, attempt, result.turns, f.bytes],
        );
      }
      await c.query(
        `update fleet_batches set spent_usd = spent_usd + $2, reserved_usd = greatest(0, reserved_usd - $3)
         where id = $1`,
        [row.batch_id, result.costUsd - Number(row.cost_usd), Number(row.reserved_usd)],
      );
      await c.query(
        "update fleet_attempts set ended_at = now(), outcome = $3 where task_id = $1 and attempt = $2",
        [taskId, attempt, result.status],
      );
      return true;
    });
  }

  /**
   * Ends a task as failed whoever holds it (its attempts are spent, or the queue gave up on
   * it after repeated stalls). A no-op on a finished task.
   */
  async fail(taskId: string, reason: string): Promise<boolean> {
    return this.#tx(async (c) => {
      const t = await c.query("select * from fleet_tasks where id = $1 for update", [taskId]);
      const row = t.rows[0];
      if (!row || row.finished_at) return false;
      await c.query(
        `update fleet_tasks set status = 'failed', exit_code = 1, detail = $2, reserved_usd = 0,
           finished_at = now(), heartbeat_at = null where id = $1`,
        [taskId, reason],
      );
      await c.query("update fleet_batches set reserved_usd = greatest(0, reserved_usd - $2) where id = $1", [
        row.batch_id,
        Number(row.reserved_usd),
      ]);
      await c.query(
        "update fleet_attempts set ended_at = now(), outcome = coalesce(outcome, $3) where task_id = $1 and attempt = $2",
        [taskId, Number(row.attempt), `failed: ${reason}`],
      );
      return true;
    });
  }

  /** Records why one attempt failed (it may be retried). */
  async attemptFailed(taskId: string, attempt: number, reason: string): Promise<void> {
    await this.#pool.query(
      `update fleet_attempts set ended_at = now(), outcome = $3 where task_id = $1 and attempt = $2`,
      [taskId, attempt, `error: ${reason}`],
    );
    await this.#pool.query(
      "update fleet_tasks set detail = $3, status = 'queued', heartbeat_at = null where id = $1 and attempt = $2 and finished_at is null",
      [taskId, attempt, reason],
    );
  }

  /** Cancels a batch: no task starts any more; queued ones end now, running ones at their next check. */
  async cancel(batchId: string): Promise<{ queued: string[]; running: number }> {
    return this.#tx(async (c) => {
      await c.query("update fleet_batches set status = 'cancelled' where id = $1", [batchId]);
      const q = await c.query(
        `update fleet_tasks set status = 'cancelled', detail = 'the batch was cancelled', finished_at = now(),
           reserved_usd = 0 where batch_id = $1 and finished_at is null and status = 'queued' returning id`,
        [batchId],
      );
      const r = await c.query(
        "select count(*)::int as n from fleet_tasks where batch_id = $1 and finished_at is null",
        [batchId],
      );
      return { queued: q.rows.map((x: Row) => String(x["id"])), running: Number(r.rows[0].n) };
    });
  }

  /** Puts the batch's tasks in `statuses` back in the queue (fresh sessions); returns their ids. */
  async requeue(batchId: string, statuses: readonly TaskStatus[]): Promise<string[]> {
    return this.#tx(async (c) => {
      await c.query("update fleet_batches set status = 'running' where id = $1", [batchId]);
      const r = await c.query(
        `update fleet_tasks set status = 'queued', finished_at = null, session_id = null, base_tree = null,
           work_diff = null, exit_code = null, session_status = null, detail = null, final_message = null,
           resumed_from = null, cost_usd = 0, input_tokens = 0, output_tokens = 0, turns = 0, denials = 0
         where batch_id = $1 and status = any($2) and finished_at is not null returning id`,
        [batchId, statuses],
      );
      // What the earlier runs spent stays in the batch's spend (and their session files in
      // the catalog); the task's own cost starts again with its new session.
      return r.rows.map((x: Row) => String(x["id"]));
    });
  }

  async counts(batchId: string): Promise<BatchStatusCounts> {
    const r = await this.#pool.query(
      `select status, count(*)::int as n, min(started_at) as first_start,
         avg(extract(epoch from (finished_at - started_at)) * 1000) filter (where finished_at is not null) as avg_ms
       from fleet_tasks where batch_id = $1 group by status`,
      [batchId],
    );
    const byStatus: Partial<Record<TaskStatus, number>> = {};
    let firstStart: Date | undefined;
    for (const row of r.rows as Row[]) {
      byStatus[String(row["status"]) as TaskStatus] = Number(row["n"]);
      const fs = row["first_start"] ? new Date(row["first_start"] as string) : undefined;
      if (fs && (!firstStart || fs < firstStart)) firstStart = fs;
    }
    return { byStatus, ...(firstStart ? { firstStart } : {}) };
  }

  /** The batch's uploaded session files (roots and sub-agents). */
  sessionFiles(batchId: string): Promise<SessionFileRow[]> {
    return this.#sessionFilesWhere("batch_id", batchId);
  }

  /** One task's uploaded session files (what a resuming worker downloads). */
  taskSessionFiles(taskId: string): Promise<SessionFileRow[]> {
    return this.#sessionFilesWhere("task_id", taskId);
  }

  async #sessionFilesWhere(column: "batch_id" | "task_id", id: string): Promise<SessionFileRow[]> {
    const r = await this.#pool.query(
      `select session_id, task_id, is_root, attempt, turn, bytes from fleet_session_files where ${column} = $1`,
      [id],
    );
    return r.rows.map((x: Row) => ({
      sessionId: String(x["session_id"]),
      taskId: String(x["task_id"]),
      isRoot: Boolean(x["is_root"]),
      attempt: Number(x["attempt"]),
      turn: Number(x["turn"]),
      bytes: x["bytes"] as Buffer,
    }));
  }
}

export interface CheckpointVerdict {
  readonly superseded?: boolean;
  readonly cancelled?: boolean;
  /** The batch's spend reached its budget. */
  readonly overBudget?: boolean;
  readonly spentUsd?: number;
  readonly budgetUsd?: number;
}

function verdictOf(b: BatchRecord): CheckpointVerdict {
  return {
    cancelled: b.status === "cancelled",
    overBudget: b.budgetUsd !== undefined && b.spentUsd >= b.budgetUsd,
    spentUsd: b.spentUsd,
    ...(b.budgetUsd !== undefined ? { budgetUsd: b.budgetUsd } : {}),
  };
}
