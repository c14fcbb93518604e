// What the widgets show, per session, derived only from observed hooks: the last model
// response (model, usage, the model's context window, rate-limit snapshots from the
// vendor's response headers) with the cost summed, and the task list as the task tools'
// last result holds it. Each change wakes the session's Attach streams.
import type { JsonObject } from "@bufbuild/protobuf";
import { RateLimitKind, type RateLimitSnapshot } from "@pluggableharness/protocol/model";

export interface Task {
  readonly id: string;
  readonly title: string;
  readonly status: string;
}

export interface SessionView {
  model: string;
  contextTokens: number;
  contextWindow: number;
  costUsd: number;
  rateLimits: RateLimitSnapshot[];
  tasks: Task[] | undefined;
  /** Declared name of the provider whose task tools fed `tasks`: where its actions go. */
  taskProvider: string;
  /** Bumped on every change; Attach streams wait for it to move. */
  version: number;
  waiters: Array<() => void>;
}

const views = new Map<string, SessionView>();
/** Sessions kept at most (least recently touched dropped). */
const MAX_SESSIONS = 200;

export function viewOf(sessionId: string): SessionView {
  let v = views.get(sessionId);
  if (v) {
    views.delete(sessionId);
    views.set(sessionId, v);
    return v;
  }
  v = {
    model: "",
    contextTokens: 0,
    contextWindow: 0,
    costUsd: 0,
    rateLimits: [],
    tasks: undefined,
    taskProvider: "",
    version: 0,
    waiters: [],
  };
  views.set(sessionId, v);
  if (views.size > MAX_SESSIONS) views.delete(views.keys().next().value!);
  return v;
}

export function changed(v: SessionView): void {
  v.version++;
  const w = v.waiters.splice(0);
  for (const f of w) f();
}

/** Resolves at the next change, or when `signal` aborts. */
export function nextChange(v: SessionView, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    v.waiters.push(done);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The task tools whose results hold the list (also what the widget asks the kernel to send it). */
export const TASK_TOOL_NAMES = ["task_create", "task_update", "task_list"] as const;
const TASK_TOOLS = new Set<string>(TASK_TOOL_NAMES);

/** The task list a task tool's result holds, if this is one (task_list filtered by status is not the whole list). */
export function tasksFromResult(
  toolName: string,
  args: JsonObject | undefined,
  payload: JsonObject | undefined,
): Task[] | undefined {
  if (!TASK_TOOLS.has(toolName) || !payload) return undefined;
  if (toolName === "task_list" && args?.["status"] !== undefined) return undefined;
  const tasks = payload["tasks"];
  if (!Array.isArray(tasks)) return undefined;
  return tasks.flatMap((t) => {
    if (!t || typeof t !== "object" || Array.isArray(t)) return [];
    const o = t as JsonObject;
    return typeof o["id"] === "string" && typeof o["title"] === "string"
      ? [
          {
            id: o["id"],
            title: o["title"],
            status: typeof o["status"] === "string" ? o["status"] : "pending",
          },
        ]
      : [];
  });
}

/** The tightest rate-limit window as "tokens 42% left", or "" when the vendor sent none. */
export function headroom(limits: readonly RateLimitSnapshot[]): string {
  let best: { left: number; kind: string } | undefined;
  for (const l of limits) {
    let left: number | undefined;
    if (l.limit !== undefined && l.remaining !== undefined && l.limit > 0n) {
      left = Number(l.remaining) / Number(l.limit);
    } else if (l.usedPercent !== undefined) {
      left = 1 - l.usedPercent / 100;
    }
    if (left === undefined) continue;
    const kind =
      l.kind === RateLimitKind.REQUESTS
        ? "requests"
        : l.kind === RateLimitKind.INPUT_TOKENS
          ? "input tokens"
          : l.kind === RateLimitKind.OUTPUT_TOKENS
            ? "output tokens"
            : "tokens";
    if (!best || left < best.left) best = { left, kind };
  }
  return best ? `${best.kind} ${Math.max(0, Math.round(best.left * 100))}% left` : "";
}
