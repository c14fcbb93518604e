// `agent batch submit|status|results|cancel|retry`: thin adapters over packages/fleet.
// The fleet (BullMQ, pg) is imported only here and in `agent worker`, when one of these
// commands runs; an ordinary `agent run` never loads it.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { loadProjectConfig, resolveFleetUrls } from "@pluggableharness/config";
import { FINAL_STATUSES } from "@pluggableharness/fleet/types";
import { ulid } from "ulid";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";
import { configFailure } from "./kernel-start.ts";

type Fleet = typeof import("@pluggableharness/fleet");
type Catalog = import("@pluggableharness/fleet").Catalog;
type BatchRecord = import("@pluggableharness/fleet").BatchRecord;
type TaskRecord = import("@pluggableharness/fleet").TaskRecord;
type TaskStatus = import("@pluggableharness/fleet").TaskStatus;

export interface Engines {
  readonly redisUrl: string;
  readonly postgresUrl: string;
  /** The project's agent.hcl: its text and name. */
  readonly configFile: string | undefined;
}

/** The engines from the project's settings.fleet (file:line:col errors when not configured). */
export function fleetEngines(io: Io): Engines {
  const project = projectOf(io);
  const loaded = loadProjectConfig(project.dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const urls = resolveFleetUrls(loaded.config, io.env);
  if (!urls.ok) throw configFailure(urls.diagnostics);
  return { redisUrl: urls.redisUrl, postgresUrl: urls.postgresUrl, configFile: project.file };
}

/** Connection failures say which engine, never its URL (it may hold a password). */
async function connectCatalog(fleet: Fleet, e: Engines): Promise<Catalog> {
  try {
    return await fleet.Catalog.connect(e.postgresUrl, { max: 2 });
  } catch (err) {
    throw new CliError(
      `agent: cannot reach the fleet's PostgreSQL (settings.fleet.postgres_url): ${(err as Error).message}`,
      EXIT.ERROR,
    );
  }
}

async function withEngines<T>(
  io: Io,
  fn: (fleet: Fleet, catalog: Catalog, e: Engines) => Promise<T>,
): Promise<T> {
  const e = fleetEngines(io);
  const fleet = await import("@pluggableharness/fleet");
  const catalog = await connectCatalog(fleet, e);
  try {
    return await fn(fleet, catalog, e);
  } finally {
    await catalog.close().catch(() => {});
  }
}

async function withQueue<T>(
  fleet: Fleet,
  e: Engines,
  fn: (q: InstanceType<Fleet["FleetQueue"]>) => Promise<T>,
): Promise<T> {
  const connection = fleet.redisConnection(e.redisUrl);
  const q = new fleet.FleetQueue(connection);
  try {
    return await withTimeout(
      fn(q),
      15_000,
      "the fleet's Redis (settings.fleet.redis_url) did not answer within 15 s",
    );
  } finally {
    await q.close().catch(() => {});
    connection.disconnect();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_r, reject) => {
      timer = setTimeout(() => reject(new CliError(`agent: ${what}`, EXIT.ERROR)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A batch by id or unique prefix. */
async function findBatch(catalog: Catalog, typed: string): Promise<BatchRecord> {
  const found = await catalog.findBatches(typed.trim());
  const exact = found.find((b) => b.id === typed.trim());
  if (exact) return exact;
  if (found.length === 1) return found[0]!;
  if (found.length === 0) throw new CliError(`agent: no batch ${typed} in the fleet's catalog`, EXIT.ERROR);
  throw new CliError(
    `agent: ${typed} matches ${found.length} batches: ${found.map((b) => b.id).join(", ")}`,
    EXIT.USAGE,
  );
}

function positiveNumber(text: string | undefined, flag: string, integer = false): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new CliError(`${flag}: "${text}" is not a positive ${integer ? "integer" : "number"}`, EXIT.USAGE);
  }
  return n;
}

export interface SubmitOptions {
  prompt?: string;
  promptFile?: string;
  target?: string[];
  targets?: string;
  jsonl?: string;
  profile?: string;
  taskBudgetUsd?: string;
  budgetUsd?: string;
  headlessAsk?: "deny" | "allow";
  concurrency?: string;
  maxAttempts?: string;
  json?: boolean;
}

export async function runSubmit(io: Io, opts: SubmitOptions): Promise<number> {
  if ((opts.prompt === undefined) === (opts.promptFile === undefined)) {
    throw new CliError(
      'agent batch submit: give the prompt with -p "<prompt>" or --prompt-file <file> (one of them)',
      EXIT.USAGE,
    );
  }
  const template = opts.prompt ?? readFileSync(opts.promptFile!, "utf8");
  if (template.trim() === "") throw new CliError("agent batch submit: the prompt is empty", EXIT.USAGE);
  const sources = [opts.target?.length ? 1 : 0, opts.targets ? 1 : 0, opts.jsonl ? 1 : 0].reduce(
    (a, b) => a + b,
    0,
  );
  if (sources !== 1) {
    throw new CliError(
      "agent batch submit: say where the tasks run with --target <path|git-url[#ref]> (repeatable), --targets <file> (one per line) or --jsonl <file> (one task's variables per line) — one of them",
      EXIT.USAGE,
    );
  }
  const taskBudgetUsd = positiveNumber(opts.taskBudgetUsd, "--task-budget-usd");
  const budgetUsd = positiveNumber(opts.budgetUsd, "--budget-usd");
  const concurrency = positiveNumber(opts.concurrency, "--concurrency", true);
  const maxAttempts = positiveNumber(opts.maxAttempts, "--max-attempts", true) ?? 3;
  const e = fleetEngines(io);
  if (!e.configFile)
    throw new CliError("agent batch submit: needs the project's agent.hcl (with settings.fleet)", EXIT.ERROR);
  const configSource = readFileSync(e.configFile, "utf8");
  const project = projectOf(io);
  const loaded = loadProjectConfig(project.dir, { env: io.env });
  if (!loaded.ok) throw configFailure(loaded.diagnostics);
  const profile = opts.profile ?? "default";
  if (profile !== "default" && !loaded.config.profiles.some((p) => p.name === profile)) {
    throw new CliError(
      `agent: no agent_profile "${profile}" in ${e.configFile} (profiles: ${loaded.config.profiles.map((p) => p.name).join(", ") || "none"})`,
      EXIT.ERROR,
    );
  }
  const fleet = await import("@pluggableharness/fleet");
  let planned: ReturnType<Fleet["tasksFromTargets"]>;
  try {
    planned = opts.jsonl
      ? fleet.tasksFromJsonl(template, opts.jsonl, io.cwd)
      : fleet.tasksFromTargets(
          template,
          opts.target?.length ? opts.target : fleet.readTargetsFile(opts.targets!),
          io.cwd,
        );
  } catch (err) {
    throw new CliError(`agent batch submit: ${(err as Error).message}`, EXIT.USAGE);
  }
  if (planned.length === 0)
    throw new CliError("agent batch submit: no tasks (the list of targets is empty)", EXIT.USAGE);
  const id = ulid();
  const width = String(planned.length).length;
  const tasks = planned.map((t, i) => ({
    id: `${id}-${String(i + 1).padStart(width, "0")}`,
    idx: i + 1,
    ...t,
  }));
  const catalog = await connectCatalog(fleet, e);
  try {
    await catalog.createBatch({
      id,
      prompt: template,
      profile,
      configSource,
      configName: basename(e.configFile),
      headlessAsk: opts.headlessAsk ?? "deny",
      ...(taskBudgetUsd !== undefined ? { taskBudgetUsd } : {}),
      ...(budgetUsd !== undefined ? { budgetUsd } : {}),
      maxAttempts,
      ...(concurrency !== undefined ? { concurrency } : {}),
      tasks,
    });
  } finally {
    await catalog.close().catch(() => {});
  }
  await withQueue(fleet, e, (q) =>
    q.enqueue(
      id,
      tasks.map((t) => t.id),
      maxAttempts,
    ),
  );
  if (opts.json) line(io.out, JSON.stringify({ batch_id: id, tasks: tasks.length }));
  else {
    line(io.out, id);
    line(
      io.err,
      `Batch ${id}: ${tasks.length} task(s) queued. Follow it with: agent batch status ${id} --watch`,
    );
  }
  return EXIT.OK;
}

const usd = (n: number) => `$${n.toFixed(2)}`;

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

interface StatusView {
  batch_id: string;
  status: "running" | "cancelled" | "finished";
  tasks: number;
  counts: Partial<Record<TaskStatus, number>>;
  done: number;
  spent_usd: number;
  budget_usd: number | null;
  eta_seconds: number | null;
}

async function statusView(catalog: Catalog, batch: BatchRecord): Promise<StatusView> {
  const { byStatus, firstStart } = await catalog.counts(batch.id);
  const fresh = (await catalog.batch(batch.id)) ?? batch;
  const done = FINAL_STATUSES.reduce((a, s) => a + (byStatus[s] ?? 0), 0);
  const left = fresh.taskCount - done;
  let eta: number | null = null;
  if (firstStart && done > 0 && left > 0) {
    const elapsed = Date.now() - firstStart.getTime();
    eta = Math.round(((elapsed / done) * left) / 1000);
  }
  return {
    batch_id: fresh.id,
    status: left === 0 ? "finished" : fresh.status,
    tasks: fresh.taskCount,
    counts: byStatus,
    done,
    spent_usd: fresh.spentUsd,
    budget_usd: fresh.budgetUsd ?? null,
    eta_seconds: eta,
  };
}

function printStatus(io: Io, v: StatusView): void {
  const width = 30;
  const filled = v.tasks === 0 ? width : Math.round((v.done / v.tasks) * width);
  const parts = (["completed", "failed", "bound", "budget_exhausted", "skipped", "cancelled"] as const)
    .filter((s) => (v.counts[s] ?? 0) > 0)
    .map((s) => `${s.replace("_", " ")} ${v.counts[s]}`);
  line(io.out, `Batch ${v.batch_id} · ${v.status}`);
  line(
    io.out,
    `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${v.done}/${v.tasks} done${parts.length ? ` (${parts.join(", ")})` : ""} · running ${v.counts.running ?? 0} · queued ${v.counts.queued ?? 0}`,
  );
  const budget = v.budget_usd !== null ? ` of ${usd(v.budget_usd)} budget` : "";
  const eta =
    v.eta_seconds !== null && v.status === "running" ? ` · ETA ${duration(v.eta_seconds * 1000)}` : "";
  line(io.out, `Spent ${usd(v.spent_usd)}${budget}${eta}`);
}

export async function runStatus(
  io: Io,
  typed: string,
  opts: { json?: boolean; watch?: boolean },
): Promise<number> {
  return withEngines(io, async (_fleet, catalog) => {
    const batch = await findBatch(catalog, typed);
    for (;;) {
      const v = await statusView(catalog, batch);
      if (opts.json) line(io.out, JSON.stringify(v));
      else printStatus(io, v);
      if (!opts.watch || v.status !== "running") return EXIT.OK;
      await new Promise((r) => setTimeout(r, 2_000));
      if (!opts.json) line(io.out);
    }
  });
}

function resultRecord(t: TaskRecord, attempts: number) {
  return {
    task_id: t.id,
    index: t.idx,
    target: t.target.ref ? `${t.target.location}#${t.target.ref}` : t.target.location,
    status: t.status,
    exit_code: t.exitCode ?? null,
    session_id: t.sessionId ?? null,
    session_status: t.sessionStatus ?? null,
    final_message: t.finalMessage ?? null,
    cost_usd: t.costUsd,
    input_tokens: t.inputTokens,
    output_tokens: t.outputTokens,
    turns: t.turns,
    attempts,
    resumed_from_attempt: t.resumedFrom ?? null,
    detail: t.detail ?? null,
    diff: t.workDiff ?? "",
  };
}

export async function runResults(io: Io, typed: string, opts: { format?: "jsonl" | "md" }): Promise<number> {
  return withEngines(io, async (_fleet, catalog) => {
    const batch = await findBatch(catalog, typed);
    const tasks = await catalog.tasks(batch.id);
    const rows = tasks.map((t) => resultRecord(t, t.attempt));
    if ((opts.format ?? "jsonl") === "jsonl") {
      for (const r of rows) line(io.out, JSON.stringify(r));
      return EXIT.OK;
    }
    line(io.out, `# Batch ${batch.id}\n`);
    line(io.out, `Prompt: ${batch.prompt.split("\n")[0]}\n`);
    line(io.out, "| # | target | status | exit | cost | tokens in/out | attempts |");
    line(io.out, "|---|---|---|---|---|---|---|");
    for (const r of rows) {
      line(
        io.out,
        `| ${r.index} | ${r.target} | ${r.status} | ${r.exit_code ?? "-"} | ${usd(r.cost_usd)} | ${r.input_tokens}/${r.output_tokens} | ${r.attempts} |`,
      );
    }
    const total = rows.reduce((a, r) => a + r.cost_usd, 0);
    line(io.out, `\nTotal: ${usd(total)} over ${rows.length} task(s).`);
    for (const r of rows) {
      line(io.out, `\n## ${r.index}. ${r.target} — ${r.status}\n`);
      if (r.detail) line(io.out, `${r.detail}\n`);
      if (r.final_message) line(io.out, `${r.final_message}\n`);
      if (r.diff) line(io.out, `\`\`\`diff\n${r.diff.trimEnd()}\n\`\`\``);
    }
    return EXIT.OK;
  });
}

export async function runCancel(io: Io, typed: string): Promise<number> {
  return withEngines(io, async (fleet, catalog, e) => {
    const batch = await findBatch(catalog, typed);
    const { queued, running } = await catalog.cancel(batch.id);
    await withQueue(fleet, e, (q) => q.remove(queued));
    line(
      io.out,
      `Batch ${batch.id} cancelled: ${queued.length} queued task(s) will not run; ${running} running task(s) stop at their next check.`,
    );
    return EXIT.OK;
  });
}

export async function runRetry(
  io: Io,
  typed: string,
  opts: { failed?: boolean; status?: string[] },
): Promise<number> {
  const statuses = [...(opts.failed ? ["failed"] : []), ...(opts.status ?? [])];
  if (statuses.length === 0) {
    throw new CliError(
      "agent batch retry: say which tasks: --failed, or --status <status> (repeatable)",
      EXIT.USAGE,
    );
  }
  for (const s of statuses) {
    if (!FINAL_STATUSES.includes(s as TaskStatus)) {
      throw new CliError(
        `agent batch retry: --status ${s}: not a final task status (${FINAL_STATUSES.join(", ")})`,
        EXIT.USAGE,
      );
    }
  }
  return withEngines(io, async (fleet, catalog, e) => {
    const batch = await findBatch(catalog, typed);
    const ids = await catalog.requeue(batch.id, statuses as TaskStatus[]);
    if (ids.length > 0) await withQueue(fleet, e, (q) => q.enqueue(batch.id, ids, batch.maxAttempts));
    line(io.out, `Batch ${batch.id}: ${ids.length} task(s) queued again.`);
    return EXIT.OK;
  });
}

/**
 * `agent sessions … --batch <id>`: the batch's session files, downloaded from the catalog
 * into a cache directory that becomes this command's sessions directory, so a fleet task's
 * session is listed, shown and replayed exactly like a local one.
 */
export async function useBatchSessions(io: Io, typed: string): Promise<void> {
  const { mkdirSync, writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  await withEngines(io, async (_fleet, catalog) => {
    const batch = await findBatch(catalog, typed);
    const cacheHome = io.env["XDG_CACHE_HOME"]?.startsWith("/")
      ? io.env["XDG_CACHE_HOME"]
      : join(io.env["HOME"] ?? "/tmp", ".cache");
    const stateHome = join(cacheHome, "agent", "fleet", batch.id, "state");
    const dir = join(stateHome, "agent", "sessions");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const f of await catalog.sessionFiles(batch.id)) {
      writeFileSync(join(dir, `${f.sessionId}.sqlite`), f.bytes, { mode: 0o600 });
    }
    // The sessions commands read the sessions directory from the environment.
    process.env["XDG_STATE_HOME"] = stateHome;
    io.env["XDG_STATE_HOME"] = stateHome;
  });
}
