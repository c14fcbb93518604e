// One task, run as a headless session by a kernel of its own, the way `agent run -p`
// runs one: the batch's agent.hcl, its profile, the same sandbox, policy and plan/apply
// gate, asks resolved by the batch's headless-ask rule. Around it, fleet mode adds:
// a fresh checkout; at every turn boundary (the kernel's turn.end trace event) a
// consistent copy of the session files and the checkout's changes go to the catalog,
// which charges the spend to the batch; a heartbeat that also watches for cancellation,
// the batch budget and a successor; and, for a task an earlier worker left unfinished,
// the last uploaded session resumed through the kernel's resume path (its dangling calls
// closed) on a checkout with that attempt's changes replayed.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type AgentConfig,
  builtinRootProfile,
  ConfigError,
  firstPartyName,
  loadConfigSource,
} from "@pluggableharness/config";
import {
  createKernel,
  type Kernel,
  type KernelLogRecord,
  type SessionHandle,
  type TraceEvent,
  type Tracer,
  type VendorThrottle,
} from "@pluggableharness/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { tidySessionFile } from "@pluggableharness/state";
import type { Catalog, CheckpointVerdict } from "./catalog.ts";
import { applyWorkDiff, checkoutDir, prepareCheckout, workDiff } from "./checkout.ts";
import { snapshotSessions } from "./snapshot.ts";
import { exitCodeOf, ledgerTotals, statusName, summarizeTask } from "./summary.ts";
import type { BatchRecord, TaskRecord, TaskResult, TaskStatus } from "./types.ts";

/** What the model is told when it continues a session another worker left. */
export const RESUME_PROMPT =
  "The worker running this task stopped before the task was finished, and another worker has resumed the session, with the working directory as it was at the last completed turn. Continue the task from where it was left; do not redo work that is already done.";

export interface TaskRunOptions {
  readonly catalog: Catalog;
  readonly batch: BatchRecord;
  readonly task: TaskRecord;
  readonly attempt: number;
  readonly maxCostUsd?: number;
  readonly workRoot: string;
  readonly installationRoot: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly throttle: VendorThrottle;
  readonly log: (line: string) => void;
  /** Aborted when the worker hands its tasks back (a second SIGTERM). */
  readonly handBack: AbortSignal;
  readonly heartbeatMs: number;
  /** Time already spent claiming the task (counted in the result's overhead). */
  readonly claimMs?: number;
  /**
   * The task's trace events go here with `fleet.batch_id` and `fleet.task_id` added to
   * their attributes: where an OpenTelemetry exporter picks the batch id up from.
   */
  readonly trace?: Tracer;
}

export type TaskRunOutcome =
  | { readonly kind: "done"; readonly recorded: boolean; readonly result: TaskResult }
  | { readonly kind: "handed_back" }
  | { readonly kind: "superseded" };

type StopReason = "cancelled" | "budget" | "superseded" | "handed_back";

/** The profile as the batch runs it, with the task's spending bound. */
function taskConfig(config: AgentConfig, profileName: string, maxCostUsd: number | undefined): AgentConfig {
  let profiles = [...config.profiles];
  let idx = profiles.findIndex((p) => p.name === profileName);
  if (idx < 0 && profileName === "default") {
    profiles = [...profiles, builtinRootProfile(config)];
    idx = profiles.length - 1;
  }
  if (idx < 0) {
    throw new Error(
      `no agent_profile "${profileName}" in the batch's agent.hcl (profiles: ${config.profiles.map((p) => p.name).join(", ") || "none"})`,
    );
  }
  if (maxCostUsd === undefined) return { ...config, profiles };
  const profile = structuredClone(profiles[idx]!) as unknown as Record<string, unknown>;
  const own = profile["max_cost_usd"] as number | undefined;
  profile["max_cost_usd"] = own === undefined ? maxCostUsd : Math.min(own, maxCostUsd);
  profiles[idx] = profile as unknown as AgentConfig["profiles"][number];
  return { ...config, profiles };
}

function loadBatchConfig(batch: BatchRecord, dir: string): AgentConfig {
  const loaded = loadConfigSource(Buffer.from(batch.configSource, "utf8"), join(dir, batch.configName), dir);
  if (!loaded.ok) throw new ConfigError(loaded.diagnostics, "the batch's agent.hcl");
  return loaded.config;
}

/** Retries `fn` for up to `totalMs` with a growing pause, then gives its last error. */
async function persistently<T>(
  fn: () => Promise<T>,
  onRetry: (err: Error) => void,
  totalMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + totalMs;
  for (let pause = 250; ; pause = Math.min(pause * 2, 4_000)) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() + pause > deadline) throw err;
      onRetry(err as Error);
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}

/** Whether the session's max_cost_usd was what the batch had left rather than the task's own budget. */
function boundByBatch(batch: BatchRecord, maxCostUsd: number | undefined): boolean {
  if (batch.budgetUsd === undefined || maxCostUsd === undefined) return false;
  return batch.taskBudgetUsd === undefined || maxCostUsd < batch.taskBudgetUsd;
}

export async function runTask(o: TaskRunOptions): Promise<TaskRunOutcome> {
  const { catalog, batch, task, attempt } = o;
  const dir = checkoutDir(o.workRoot, batch.id, task.id);
  const stateDir = join(o.workRoot, "state", task.id);
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });

  const baseTree = await prepareCheckout(dir, task.target);
  // An earlier attempt's last upload: resume it, on its changes, when the base is the same.
  let resumeId: string | undefined;
  let resumedFrom: number | undefined;
  if (task.sessionId) {
    const files = await catalog.taskSessionFiles(task.id);
    const root = files.find((f) => f.sessionId === task.sessionId);
    if (root && task.baseTree === baseTree) {
      for (const f of files) writeFileSync(join(stateDir, `${f.sessionId}.sqlite`), f.bytes, { mode: 0o600 });
      await applyWorkDiff(dir, task.workDiff ?? "");
      resumeId = root.sessionId;
      resumedFrom = root.attempt;
      o.log(
        `task ${task.id}: resuming session ${root.sessionId} from attempt ${root.attempt}, turn ${root.turn}`,
      );
    } else if (root) {
      o.log(`task ${task.id}: the target changed since attempt ${root.attempt}; starting over`);
    }
  }

  const config = taskConfig(loadBatchConfig(batch, dir), batch.profile, o.maxCostUsd);
  let handle: SessionHandle | undefined;
  let stop: StopReason | undefined;
  let turns = 0;
  // Checkpoints run one after another, off the kernel's call stack.
  let chain: Promise<void> = Promise.resolve();
  const halt = (why: StopReason) => {
    if (stop) return;
    stop = why;
    handle?.interrupt();
  };
  const act = (v: CheckpointVerdict) => {
    if (v.superseded) halt("superseded");
    else if (v.cancelled) halt("cancelled");
    else if (v.overBudget) halt("budget");
  };
  let overheadMs = o.claimMs ?? 0;
  const checkpoint = async () => {
    if (!handle || stop === "superseded") return;
    const began = performance.now();
    const files = snapshotSessions(stateDir, handle.id);
    const diff = await workDiff(dir, baseTree);
    act(
      await catalog.checkpoint(task.id, attempt, {
        sessionId: handle.id,
        files,
        turn: turns,
        baseTree,
        workDiff: diff,
        costUsd: ledgerTotals(stateDir).costUsd,
      }),
    );
    overheadMs += performance.now() - began;
  };
  const labels = { "fleet.batch_id": batch.id, "fleet.task_id": task.id, "fleet.attempt": attempt };
  const trace = (e: TraceEvent) => {
    o.trace?.({ ...e, attrs: { ...e.attrs, ...labels } });
    if (e.name !== "turn.end" || e.sessionId !== handle?.id) return;
    turns++;
    // The run's last turn: its result is recorded in a moment, with the same files.
    if (e.attrs?.["outcome"] === "done") return;
    chain = chain
      .then(checkpoint)
      .catch((err) => o.log(`task ${task.id}: upload failed: ${(err as Error).message}`));
  };
  const logSink = (r: KernelLogRecord) => {
    if (r.level === "warn" || r.level === "error") o.log(`task ${task.id}: ${r.level}: ${r.message}`);
  };

  let kernel: Kernel | undefined;
  const onHandBack = () => halt("handed_back");
  o.handBack.addEventListener("abort", onHandBack, { once: true });
  const beat = setInterval(() => {
    catalog
      .heartbeat(task.id, attempt)
      .then(act)
      .catch(() => {}); // the catalog unreachable for a moment: the next beat tries again
  }, o.heartbeatMs);
  let status: SessionStatus;
  try {
    kernel = await createKernel({
      projectDir: dir,
      installationRoot: o.installationRoot,
      env: o.env,
      config,
      stateDir,
      headlessAsk: batch.headlessAsk,
      // No terminal and nobody to serve: frontends stay unlaunched, as in `agent run -p`.
      exclude: config.requiredProviders
        .filter((r) => ["tui", "web-ui"].includes(firstPartyName(r.source) ?? ""))
        .map((r) => r.localName),
      logSink,
      logLevel: "warn",
      trace,
      vendorThrottle: o.throttle,
      // With observability{} on, every exported span, metric and log names its batch and task.
      telemetryResource: { ...labels, "fleet.attempt": String(attempt) },
      prelaunchPlan: false,
    });
    handle = resumeId
      ? await kernel.resumeSession(resumeId)
      : await kernel.startSession({ profile: batch.profile, workingDirectory: dir });
    if (o.handBack.aborted) halt("handed_back");
    if (!stop) handle.send(resumeId ? RESUME_PROMPT : task.prompt);
    status = stop ? SessionStatus.CANCELLED : await handle.idle();
    await chain;
  } finally {
    clearInterval(beat);
    o.handBack.removeEventListener("abort", onHandBack);
    await kernel?.shutdown().catch(() => {});
  }
  const rootId = handle!.id;
  tidySessionFile(rootId, { dir: stateDir, log: () => {} });

  if (stop === "superseded") {
    o.log(`task ${task.id}: another worker owns attempt ${attempt + 1}; leaving it`);
    return { kind: "superseded" };
  }
  if (stop === "handed_back") {
    await checkpoint().catch(() => {});
    await catalog.release(task.id, attempt, "handed back (worker stopping)");
    return { kind: "handed_back" };
  }

  const finalBegan = performance.now();
  const summary = summarizeTask(stateDir, rootId);
  let taskStatus: TaskStatus;
  let detail: string | undefined;
  if (stop === "cancelled") {
    taskStatus = "cancelled";
    detail = "the batch was cancelled while this task ran";
  } else if (
    stop === "budget" ||
    (status === SessionStatus.ERROR_MAX_BUDGET_USD && boundByBatch(batch, o.maxCostUsd))
  ) {
    taskStatus = "budget_exhausted";
    detail = "the batch budget was reached while this task ran";
  } else if (status === SessionStatus.COMPLETED) taskStatus = "completed";
  else if (status === SessionStatus.FAILED) taskStatus = "failed";
  else if (status === SessionStatus.CANCELLED) taskStatus = "cancelled";
  else taskStatus = "bound";
  const result: TaskResult = {
    status: taskStatus,
    exitCode: exitCodeOf(status, summary.denials),
    sessionStatus: statusName(status),
    ...(detail ? { detail } : {}),
    finalMessage: summary.finalMessage,
    costUsd: summary.costUsd,
    inputTokens: summary.inputTokens,
    outputTokens: summary.outputTokens,
    turns: summary.turns,
    denials: summary.denials,
    workDiff: await workDiff(dir, baseTree),
    sessionId: rootId,
    ...(resumedFrom !== undefined ? { resumedFrom } : {}),
    files: snapshotSessions(stateDir, rootId),
  };
  // The result is the one thing that must reach the catalog: a restarting PostgreSQL is
  // waited out rather than costing the task a redone turn.
  const recorded = await persistently(
    () =>
      catalog.complete(task.id, attempt, {
        ...result,
        overheadMs: overheadMs + (performance.now() - finalBegan),
      }),
    (err) => o.log(`task ${task.id}: recording the result failed (${err.message}); retrying`),
  );
  if (!recorded) o.log(`task ${task.id}: already finished by another attempt; this result is dropped`);
  rmSync(dir, { recursive: true, force: true });
  rmSync(stateDir, { recursive: true, force: true });
  return { kind: "done", recorded, result };
}
