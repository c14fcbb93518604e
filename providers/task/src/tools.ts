// task_create, task_update and task_list.
import type { JsonObject } from "@bufbuild/protobuf";
import {
  type RenderInput,
  type RenderNodeInit,
  r,
  s,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { listFor, MAX_TASKS, STATUSES, type Status, type Task } from "./store.ts";

const taskSchema = s.object(
  {
    id: s.string('Task id, e.g. "t3".'),
    title: s.string(),
    description: s.string(),
    status: s.string("Task status.", STATUSES),
  },
  ["id", "title", "description", "status"],
);

const listOutput = s.object(
  {
    tasks: s.array(taskSchema, "The session's whole task list, in creation order."),
    changed: s.array(s.string(), "Ids of the tasks this call created or changed."),
  },
  ["tasks", "changed"],
);

function snapshot(tasks: readonly Task[], changed: readonly string[]): JsonObject {
  return { tasks: tasks.map((t) => ({ ...t })), changed: [...changed] };
}

const MARK: Record<Status, string> = {
  pending: "[ ]",
  in_progress: "[~]",
  completed: "[x]",
  cancelled: "[-]",
};

function renderList(input: RenderInput): RenderNodeInit | undefined {
  if (input.kind !== "tool_result" || !input.payload) return undefined;
  const tasks = (input.payload["tasks"] ?? []) as unknown as Task[];
  if (tasks.length === 0) return r.text("No tasks.", "dim");
  const done = tasks.filter((t) => t.status === "completed").length;
  return r.collapsible(
    `Tasks: ${done}/${tasks.length} done`,
    [
      r.list(
        tasks.map((t) =>
          r.text(
            `${MARK[t.status]} ${t.title}`,
            t.status === "completed"
              ? "success"
              : t.status === "in_progress"
                ? "bold"
                : t.status === "cancelled"
                  ? "dim"
                  : "normal",
          ),
        ),
      ),
    ],
    false,
  );
}

export const taskCreateTool: ToolDefinition<{
  tasks: { title: string; description?: string; status?: Status }[];
}> = {
  name: "task_create",
  kind: "resource",
  risk: "low",
  description: "Add tasks to this session's task list. Returns the list.",
  input: s.object(
    {
      tasks: s.array(
        s.object(
          {
            title: s.string(),
            description: s.string(),
            status: s.string(undefined, STATUSES),
          },
          ["title"],
        ),
      ),
    },
    ["tasks"],
  ),
  output: listOutput,
  streaming: false,
  // Every call appends to the one task list: calls take turns (the seed's safe: false).
  concurrency: { safe: false },
  defaultTimeoutMs: 5_000,
  idempotent: false,
  async invoke(args, ctx) {
    if (args.tasks.length === 0) throw new ToolFailure("invalid_arguments", "tasks is empty");
    if (args.tasks.some((t) => t.title.trim() === ""))
      throw new ToolFailure("invalid_arguments", "a task has an empty title");
    const list = listFor(ctx.sessionId, true)!;
    if (list.tasks.length + args.tasks.length > MAX_TASKS) {
      throw new ToolFailure("invalid_arguments", `a session holds at most ${MAX_TASKS} tasks`);
    }
    const created = args.tasks.map((t) => ({
      id: `t${list.next++}`,
      title: t.title.trim(),
      description: t.description ?? "",
      status: t.status ?? "pending",
    }));
    list.tasks.push(...created);
    return snapshot(
      list.tasks,
      created.map((t) => t.id),
    );
  },
  render: renderList,
};

export const taskUpdateTool: ToolDefinition<{
  id: string;
  status?: Status;
  title?: string;
  description?: string;
}> = {
  name: "task_update",
  kind: "resource",
  risk: "low",
  description: "Change a task's status, title or description. Returns the list.",
  input: s.object(
    {
      id: s.string(),
      status: s.string(undefined, STATUSES),
      title: s.string(),
      description: s.string(),
    },
    ["id"],
  ),
  output: listOutput,
  streaming: false,
  concurrency: { safe: true, keyFields: ["id"] },
  defaultTimeoutMs: 5_000,
  idempotent: true,
  async invoke(args, ctx) {
    if (args.status === undefined && args.title === undefined && args.description === undefined) {
      throw new ToolFailure("invalid_arguments", "nothing to change: give status, title or description");
    }
    if (args.title !== undefined && args.title.trim() === "")
      throw new ToolFailure("invalid_arguments", "title is empty");
    const list = listFor(ctx.sessionId, false);
    const task = list?.tasks.find((t) => t.id === args.id);
    if (!list || !task)
      throw new ToolFailure("not_found", `this session has no task ${JSON.stringify(args.id)}`);
    if (args.status !== undefined) task.status = args.status;
    if (args.title !== undefined) task.title = args.title.trim();
    if (args.description !== undefined) task.description = args.description;
    return snapshot(list.tasks, [task.id]);
  },
  render: renderList,
};

export const taskListTool: ToolDefinition<{ status?: Status }> = {
  name: "task_list",
  kind: "data_source",
  risk: "read_only",
  description: "Show this session's task list.",
  input: s.object({ status: s.string(undefined, STATUSES) }),
  output: listOutput,
  streaming: false,
  concurrency: { safe: true },
  defaultTimeoutMs: 5_000,
  idempotent: true,
  async invoke(args, ctx) {
    const tasks = listFor(ctx.sessionId, false)?.tasks ?? [];
    return snapshot(args.status ? tasks.filter((t) => t.status === args.status) : tasks, []);
  },
  render: renderList,
};
