// The widgets' RenderTrees: one status line for the input bar, and the task list for the
// sidebar (a terminal without one shows it above the input).
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type RenderTreeSchema, TextStyle } from "@pluggableharness/protocol/render";
import { headroom, type SessionView, type Task } from "./state.ts";

type Tree = MessageInitShape<typeof RenderTreeSchema>;

export function tokens(n: number): string {
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 1000) return `${(n / 1000).toFixed(n >= 10_000 ? 0 : 1)}k`;
  return String(n);
}

function usd(n: number): string {
  return n > 0 && n < 0.01 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;
}

export function statusText(v: SessionView): string {
  const parts = [v.model || "model pending"];
  if (v.contextWindow > 0) {
    const pct = Math.round((v.contextTokens / v.contextWindow) * 100);
    parts.push(`context ${tokens(v.contextTokens)}/${tokens(v.contextWindow)} (${pct}%)`);
  } else if (v.contextTokens > 0) parts.push(`context ${tokens(v.contextTokens)}`);
  parts.push(usd(v.costUsd));
  const room = headroom(v.rateLimits);
  if (room) parts.push(`rate limit: ${room}`);
  return parts.join(" · ");
}

export function statusTree(v: SessionView): Tree {
  return { root: { node: { case: "text", value: { content: statusText(v), style: TextStyle.DIM } } } };
}

const MARK: Record<string, string> = { pending: "☐", in_progress: "◐", completed: "☑", cancelled: "☒" };

type Node = NonNullable<Tree["root"]>;

/**
 * An open task's "done" button: an ActionNode the frontend turns into a click or a key,
 * and the kernel runs as the provider's task_update, through policy, like the operator's
 * own command. Without the provider's name (nothing seen yet) there is no button.
 */
function doneAction(t: Task, provider: string): Node | undefined {
  if (!provider || t.status === "completed" || t.status === "cancelled") return undefined;
  return {
    node: {
      case: "action",
      value: {
        id: `task-done:${t.id}`,
        label: "done",
        provider,
        toolName: "task_update",
        args: { id: t.id, status: "completed" },
      },
    },
  };
}

export function taskTree(tasks: readonly Task[], provider = ""): Tree {
  const done = tasks.filter((t) => t.status === "completed").length;
  return {
    root: {
      node: {
        case: "group",
        value: {
          children: [
            {
              node: {
                case: "text",
                value: { content: `Tasks ${done}/${tasks.length}`, style: TextStyle.BOLD },
              },
            },
            ...tasks.map((t): Node => {
              const line: Node = {
                node: {
                  case: "text" as const,
                  value: {
                    content: `${MARK[t.status] ?? "☐"} ${t.title}`,
                    style:
                      t.status === "completed"
                        ? TextStyle.SUCCESS
                        : t.status === "in_progress"
                          ? TextStyle.BOLD
                          : t.status === "cancelled"
                            ? TextStyle.DIM
                            : TextStyle.UNSPECIFIED,
                  },
                },
              };
              const done = doneAction(t, provider);
              return done ? { node: { case: "group", value: { children: [line, done] } } } : line;
            }),
          ],
        },
      },
    },
  };
}
