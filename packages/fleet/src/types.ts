// The fleet's records, as the catalog stores them and the CLI prints them. This module has
// no imports, so the CLI can read it (`@pluggableharness/fleet/types`) without loading pg.

/** Where a task runs: a copy of a local directory, or a clone of a git repository at a ref. */
export interface Target {
  readonly kind: "path" | "git";
  /** An absolute path, or a git URL (a local repository path counts, with a ref). */
  readonly location: string;
  readonly ref?: string;
}

export type TaskStatus =
  | "queued"
  | "running"
  | "completed"
  | "failed"
  | "bound"
  | "cancelled"
  | "budget_exhausted"
  | "skipped";

/** Statuses a task ends in; it never leaves them except through `retry`. */
export const FINAL_STATUSES: readonly TaskStatus[] = [
  "completed",
  "failed",
  "bound",
  "cancelled",
  "budget_exhausted",
  "skipped",
];

export interface TaskSpec {
  readonly id: string;
  readonly idx: number;
  readonly target: Target;
  /** The prompt with the task's variables filled in. */
  readonly prompt: string;
}

export interface BatchSpec {
  readonly id: string;
  /** The prompt (template) as submitted. */
  readonly prompt: string;
  readonly profile: string;
  /** The agent.hcl every worker runs the batch with (env() references only, never values). */
  readonly configSource: string;
  readonly configName: string;
  readonly headlessAsk: "deny" | "allow";
  readonly taskBudgetUsd?: number;
  readonly budgetUsd?: number;
  readonly maxAttempts: number;
  readonly concurrency?: number;
  readonly labels?: Record<string, string>;
  readonly tasks: readonly TaskSpec[];
}

export interface BatchRecord {
  readonly id: string;
  readonly createdAt: Date;
  readonly prompt: string;
  readonly profile: string;
  readonly configSource: string;
  readonly configName: string;
  readonly headlessAsk: "deny" | "allow";
  readonly taskBudgetUsd: number | undefined;
  readonly budgetUsd: number | undefined;
  readonly maxAttempts: number;
  readonly concurrency: number | undefined;
  readonly taskCount: number;
  readonly status: "running" | "cancelled";
  readonly spentUsd: number;
  readonly reservedUsd: number;
  readonly labels: Record<string, string>;
}

export interface TaskRecord {
  readonly id: string;
  readonly batchId: string;
  readonly idx: number;
  readonly target: Target;
  readonly prompt: string;
  readonly status: TaskStatus;
  readonly attempt: number;
  readonly worker: string | undefined;
  readonly sessionId: string | undefined;
  readonly baseTree: string | undefined;
  readonly workDiff: string | undefined;
  readonly exitCode: number | undefined;
  readonly sessionStatus: string | undefined;
  readonly detail: string | undefined;
  readonly finalMessage: string | undefined;
  readonly costUsd: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly turns: number;
  readonly denials: number;
  /** The attempt whose uploaded session this one resumed, when it resumed one. */
  readonly resumedFrom: number | undefined;
  /** The fleet's own time for the attempt that finished it (claim, uploads, result), in ms. */
  readonly overheadMs: number | undefined;
  readonly startedAt: Date | undefined;
  readonly finishedAt: Date | undefined;
}

export type ClaimResult =
  | {
      readonly kind: "run";
      readonly attempt: number;
      readonly task: TaskRecord;
      readonly batch: BatchRecord;
      /** The session's own max_cost_usd: the task budget, or what the batch has left, whichever is less. */
      readonly maxCostUsd?: number;
    }
  | { readonly kind: "finished"; readonly task: TaskRecord }
  | { readonly kind: "ended"; readonly status: TaskStatus; readonly detail?: string }
  | { readonly kind: "busy" }
  | { readonly kind: "missing" };

export interface UploadedFile {
  readonly sessionId: string;
  readonly isRoot: boolean;
  readonly bytes: Buffer;
}

export interface TaskResult {
  readonly status: TaskStatus;
  readonly exitCode?: number;
  readonly sessionStatus?: string;
  readonly detail?: string;
  readonly finalMessage?: string;
  readonly costUsd: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly turns: number;
  readonly denials: number;
  readonly workDiff?: string;
  readonly sessionId?: string;
  readonly resumedFrom?: number;
  readonly files?: readonly UploadedFile[];
  /** Time the fleet itself took for this attempt: claiming, uploads and recording the result. */
  readonly overheadMs?: number;
}

export interface BatchStatusCounts {
  readonly byStatus: Partial<Record<TaskStatus, number>>;
  readonly firstStart?: Date;
}

export interface SessionFileRow {
  readonly sessionId: string;
  readonly taskId: string;
  readonly isRoot: boolean;
  readonly attempt: number;
  readonly turn: number;
  readonly bytes: Buffer;
}

/** Job data in the queue: which task (everything else is in the catalog). */
export interface JobData {
  readonly batchId: string;
  readonly taskId: string;
}
