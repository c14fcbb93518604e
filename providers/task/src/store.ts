// Task lists kept in this process, one per session (call_context.session_id). They are
// not written anywhere: every result carries the whole list, so the session log holds
// each state the frontend showed, and a relaunched plugin starts empty.
import { ToolFailure } from "@pluggableharness/tool-kit";

export const STATUSES = ["pending", "in_progress", "completed", "cancelled"] as const;
export type Status = (typeof STATUSES)[number];

export interface Task {
  id: string;
  title: string;
  description: string;
  status: Status;
}

/** Sessions kept at most; the least recently used list is dropped beyond it. */
const MAX_SESSIONS = 1000;
export const MAX_TASKS = 200;

const lists = new Map<string, { next: number; tasks: Task[] }>();

export function listFor(
  sessionId: string | undefined,
  create: boolean,
): { next: number; tasks: Task[] } | undefined {
  if (!sessionId) throw new ToolFailure("invalid_arguments", "the call carries no call_context.session_id");
  let list = lists.get(sessionId);
  if (list) {
    lists.delete(sessionId); // re-insert: Map order is the LRU order
    lists.set(sessionId, list);
    return list;
  }
  if (!create) return undefined;
  list = { next: 1, tasks: [] };
  lists.set(sessionId, list);
  if (lists.size > MAX_SESSIONS) lists.delete(lists.keys().next().value!);
  return list;
}
