// The session controls behind /model, /plan, /compact, /permissions, /cost and /sessions.
// Each is an operator-only tool (never declared to a model) that asks the kernel through
// KernelCallbackService.ControlSession, which answers only while this provider serves
// the operator's own slash command for that session. Results carry a `text` the model
// reads (the kernel tells it what the operator ran) and the structured fields a
// frontend renders.
import type { JsonObject } from "@bufbuild/protobuf";
import type {
  ControlSessionRequest,
  ControlSessionResponse,
  ModelChoice,
  PermissionRule,
} from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import {
  type RenderInput,
  type RenderNodeInit,
  r,
  s,
  type ToolContext,
  type ToolDefinition,
  ToolFailure,
} from "@pluggableharness/tool-kit";

type Operation = ControlSessionRequest["operation"];
type OperationInit = { [K in NonNullable<Operation["case"]>]: { case: K; value: object } }[NonNullable<
  Operation["case"]
>];

const PERMISSION_DENIED = 7;
const NOT_FOUND = 5;
const INVALID_ARGUMENT = 3;

/** One ControlSession call for the session being served; kernel refusals become tool failures. */
export async function control(
  ctx: ToolContext,
  operation: OperationInit,
): Promise<ControlSessionResponse["result"]> {
  if (!ctx.sessionId) throw new ToolFailure("invalid_arguments", "the call carries no session");
  const kernel = await ctx.kernel.service();
  try {
    const res = await kernel.controlSession(
      { sessionId: ctx.sessionId, operation: operation as never },
      { signal: ctx.signal },
    );
    return res.result;
  } catch (err) {
    const code = (err as { code?: number }).code;
    const message = (err as { details?: string }).details || (err as Error).message;
    if (code === PERMISSION_DENIED) throw new ToolFailure("permission_denied", message);
    if (code === NOT_FOUND) throw new ToolFailure("not_found", message);
    if (code === INVALID_ARGUMENT) throw new ToolFailure("invalid_arguments", message);
    throw new ToolFailure("execution_failed", message);
  }
}

const textOnly = s.object({ text: s.string("What the command did, as a sentence.") }, ["text"]);
export const common = {
  kind: "data_source" as const,
  risk: "read_only" as const,
  streaming: false,
  concurrency: { safe: false },
  defaultTimeoutMs: 10_000,
  operatorOnly: true,
  modelText: { field: "text" },
};

function modelName(m: ModelChoice | undefined): string {
  return m?.modelId ? `${m.provider}/${m.modelId}` : "(none)";
}

function renderText(input: RenderInput): RenderNodeInit | undefined {
  if (input.kind !== "tool_result" || !input.payload) return undefined;
  const text = String(input.payload["text"] ?? "");
  return r.text(text, "normal");
}

// ---- /model ----------------------------------------------------------------------------

function parseModel(arg: string, models: readonly ModelChoice[]): ModelChoice | string {
  const wanted = arg.trim();
  const slash = wanted.indexOf("/");
  const exact = models.filter((m) =>
    slash > 0 ? `${m.provider}/${m.modelId}` === wanted : m.modelId === wanted,
  );
  if (exact.length === 1) return exact[0]!;
  if (exact.length > 1)
    return `"${wanted}" is served by ${exact.map((m) => m.provider).join(" and ")}: write provider/model`;
  const near = models.filter((m) => `${m.provider}/${m.modelId}`.includes(wanted));
  if (near.length === 1) return near[0]!;
  return near.length > 1
    ? `"${wanted}" matches ${near.map(modelName).join(", ")}: be more specific`
    : `no loaded model is "${wanted}"; /model lists them`;
}

export const modelTool: ToolDefinition<{ model?: string }> = {
  ...common,
  name: "model",
  description:
    "Show the models the session can use, or switch the model of the next turn (provider/model, or a model id; 'default' goes back to the profile's).",
  input: s.object({ model: s.string("provider/model or a model id; 'default' for the profile's model.") }),
  output: s.object(
    {
      text: s.string(),
      current: s.string("provider/model the next turn uses."),
      models: s.array(s.string(), "Every model the loaded providers serve, provider/model."),
      changed: s.boolean("Whether this call switched the model."),
    },
    ["text", "current", "models", "changed"],
  ),
  idempotent: true,
  async invoke(args, ctx) {
    const listed = await control(ctx, { case: "listModels", value: {} });
    if (listed.case !== "models") throw new ToolFailure("execution_failed", "the kernel did not list models");
    const models = listed.value.models;
    const all = models.map(modelName);
    const arg = args.model?.trim() ?? "";
    if (arg === "") {
      const current = modelName(listed.value.current);
      return {
        text: `The next turn uses ${current}${listed.value.overridden ? " (chosen with /model)" : ""}. Available: ${all.join(", ")}.`,
        current,
        models: all,
        changed: false,
      };
    }
    let target: { provider: string; modelId: string };
    if (arg === "default") target = { provider: "", modelId: "" };
    else {
      const found = parseModel(arg, models);
      if (typeof found === "string")
        throw new ToolFailure("not_found", `${found}. Available: ${all.join(", ")}`);
      target = { provider: found.provider, modelId: found.modelId };
    }
    const set = await control(ctx, { case: "setModel", value: target });
    const current = set.case === "models" ? modelName(set.value.current) : "(unknown)";
    return {
      text:
        arg === "default"
          ? `Back to the profile's model: the next turn uses ${current}.`
          : `Switched: the next turn uses ${current}.`,
      current,
      models: all,
      changed: true,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload as { text: string; current: string; models: string[]; changed: boolean };
    if (p.changed) return r.text(p.text, "success");
    return r.group([
      r.text(`Model: ${p.current}`, "bold"),
      r.list(
        p.models.map((m) =>
          r.text(m === p.current ? `${m}  ← current` : m, m === p.current ? "bold" : "normal"),
        ),
      ),
      r.text("/model <provider/model> switches the next turn; /model default goes back.", "dim"),
    ]);
  },
};

// ---- /plan ----------------------------------------------------------------------------

export const planTool: ToolDefinition<{ mode?: string }> = {
  ...common,
  name: "plan",
  description:
    "Toggle plan mode (the model is offered no tool that changes anything), or set it with on/off.",
  input: s.object({ mode: s.string("on or off; without it the mode toggles.", ["on", "off"]) }),
  output: s.object({ text: s.string(), on: s.boolean("Whether plan mode is on now.") }, ["text", "on"]),
  idempotent: false,
  async invoke(args, ctx) {
    let on: boolean;
    if (args.mode === "on" || args.mode === "off") on = args.mode === "on";
    else {
      const now = await control(ctx, { case: "setPlanMode", value: {} });
      on = !(now.case === "planMode" && now.value.on);
    }
    const res = await control(ctx, { case: "setPlanMode", value: { on } });
    const state = res.case === "planMode" && res.value.on;
    return {
      text: state
        ? "Plan mode is on: from the next turn the model is offered only tools that change nothing."
        : "Plan mode is off: the model is offered every tool again.",
      on: state,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    return r.text(String(input.payload["text"]), input.payload["on"] ? "warning" : "success");
  },
};

// ---- /compact -------------------------------------------------------------------------

export const compactTool: ToolDefinition<{ instructions?: string }> = {
  ...common,
  name: "compact",
  description: "Compact the conversation now: earlier turns are replaced by a summary.",
  input: s.object({ instructions: s.string("What the summary must keep.") }),
  output: textOnly,
  idempotent: false,
  async invoke(args, ctx) {
    const res = await control(ctx, { case: "compact", value: { instructions: args.instructions ?? "" } });
    if (res.case !== "compacted") throw new ToolFailure("execution_failed", "the kernel did not compact");
    return {
      text: "Compaction queued: the conversation is summarised right after this command, before your next message.",
    };
  },
  render: renderText,
};

// ---- /permissions ---------------------------------------------------------------------

function ruleLine(rule: PermissionRule, i: number): string {
  const what = rule.command ? ` command ${rule.command}` : rule.path ? ` path ${rule.path}` : "";
  return `${i + 1}. ${rule.action} ${rule.provider}.${rule.toolName}${what} · ${rule.scope === "session" ? "this session" : "always"}`;
}

function rulesPayload(rules: readonly PermissionRule[]): JsonObject[] {
  return rules.map((x) => ({
    name: x.name,
    scope: x.scope,
    action: x.action,
    provider: x.provider,
    tool_name: x.toolName,
    ...(x.command !== undefined ? { command: x.command } : {}),
    ...(x.path !== undefined ? { path: x.path } : {}),
  }));
}

export const permissionsTool: ToolDefinition<{ revoke?: string }> = {
  ...common,
  name: "permissions",
  description:
    "List the approvals remembered for this session and the project's ALWAYS rules; 'revoke <n>' (or a rule name) drops one.",
  input: s.object({ revoke: s.string("The number /permissions shows, or the rule's name.") }),
  output: s.object(
    {
      text: s.string(),
      rules: s.array(
        s.object(
          {
            name: s.string(),
            scope: s.string("session or always."),
            action: s.string("allow or deny."),
            provider: s.string(),
            tool_name: s.string(),
            command: s.string(),
            path: s.string(),
          },
          ["name", "scope", "action", "provider", "tool_name"],
        ),
      ),
      revoked: s.string("The rule this call removed, if any."),
    },
    ["text", "rules"],
  ),
  idempotent: false,
  async invoke(args, ctx): Promise<JsonObject> {
    const listed = await control(ctx, { case: "listPermissionRules", value: {} });
    if (listed.case !== "permissionRules")
      throw new ToolFailure("execution_failed", "the kernel did not list rules");
    let rules = listed.value.rules;
    const revoke = (args.revoke ?? "").replace(/^revoke\s+/, "").trim();
    if (revoke === "") {
      return {
        text:
          rules.length === 0
            ? "No approvals are remembered: every ask-rule call will ask."
            : `Remembered approvals:\n${rules.map(ruleLine).join("\n")}`,
        rules: rulesPayload(rules),
      };
    }
    const byNumber = /^\d+$/.test(revoke) ? rules[Number(revoke) - 1] : undefined;
    const target = byNumber ?? rules.find((x) => x.name === revoke);
    if (!target) {
      throw new ToolFailure(
        "not_found",
        rules.length === 0
          ? "no approvals are remembered, so there is nothing to revoke"
          : `no rule ${JSON.stringify(revoke)}: give a number from 1 to ${rules.length} or a rule's name`,
      );
    }
    const res = await control(ctx, { case: "revokePermissionRule", value: { name: target.name } });
    if (res.case === "permissionRules") rules = res.value.rules;
    return {
      text: `Revoked: ${ruleLine(target, rules.length).replace(/^\d+\. /, "")}. The next such call asks again.`,
      rules: rulesPayload(rules),
      revoked: target.name,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const p = input.payload as {
      text: string;
      rules: {
        scope: string;
        action: string;
        provider: string;
        tool_name: string;
        command?: string;
        path?: string;
      }[];
      revoked?: string;
    };
    if (p.revoked) return r.text(p.text, "success");
    if (p.rules.length === 0) return r.text(p.text, "dim");
    return r.group([
      r.table(
        ["#", "answer", "tool", "narrowed to", "scope"],
        p.rules.map((x, i) => [
          String(i + 1),
          x.action,
          `${x.provider}.${x.tool_name}`,
          x.command ?? x.path ?? "every call",
          x.scope === "session" ? "this session" : "always",
        ]),
      ),
      r.text("/permissions revoke <#> drops one.", "dim"),
    ]);
  },
};

// ---- /cost ----------------------------------------------------------------------------

function usd(n: number): string {
  return n < 0.01 && n > 0 ? `$${n.toFixed(4)}` : `$${n.toFixed(2)}`;
}

export const costTool: ToolDefinition<Record<string, never>> = {
  ...common,
  name: "cost",
  description: "What the session has cost, per model, and how full the context is.",
  input: s.object({}),
  output: s.object(
    {
      text: s.string(),
      session_cost_usd: s.number(),
      context_tokens: s.number(),
      context_window: s.number(),
    },
    ["text", "session_cost_usd"],
  ),
  idempotent: true,
  async invoke(_args, ctx) {
    const res = await control(ctx, { case: "usage", value: {} });
    if (res.case !== "usage") throw new ToolFailure("execution_failed", "the kernel did not report usage");
    const u = res.value;
    const lines = [
      `Session cost ${usd(u.sessionCostUsd)}${u.remainingCostBudgetUsd !== undefined ? ` (${usd(u.remainingCostBudgetUsd)} of the budget left)` : ""}.`,
      ...u.models.map(
        (m) =>
          `${m.provider}/${m.modelId}: ${m.inputTokens} in (${m.cacheReadTokens} cached) · ${m.outputTokens} out · ${usd(m.costUsd)}`,
      ),
    ];
    if (u.contextWindow > 0n) {
      const pct = Math.round((Number(u.contextTokens) / Number(u.contextWindow)) * 100);
      lines.push(`Context: ${u.contextTokens} of ${u.contextWindow} tokens (${pct}%).`);
    }
    return {
      text: lines.join("\n"),
      session_cost_usd: u.sessionCostUsd,
      context_tokens: Number(u.contextTokens),
      context_window: Number(u.contextWindow),
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    return r.text(String(input.payload["text"]), "dim");
  },
};

// ---- /sessions ------------------------------------------------------------------------

export const sessionsTool: ToolDefinition<{ all?: boolean }> = {
  ...common,
  name: "sessions",
  description: "List the sessions started in this directory (all=true: every directory), newest first.",
  input: s.object({ all: s.boolean("Every directory, not only this one.") }),
  output: s.object(
    {
      text: s.string(),
      sessions: s.array(
        s.object(
          {
            id: s.string(),
            title: s.string(),
            status: s.string(),
            model: s.string(),
            cost_usd: s.number(),
            directory: s.string(),
          },
          ["id", "title", "status", "model", "cost_usd", "directory"],
        ),
      ),
    },
    ["text", "sessions"],
  ),
  idempotent: true,
  async invoke(args, ctx) {
    const res = await control(ctx, {
      case: "listSessions",
      value: { workingDirectory: args.all ? "" : (ctx.workingDirectory ?? "") },
    });
    if (res.case !== "sessions")
      throw new ToolFailure("execution_failed", "the kernel did not list sessions");
    const sessions = [...res.value.sessions]
      .sort((a, b) => Number((b.startedAt?.seconds ?? 0n) - (a.startedAt?.seconds ?? 0n)))
      .slice(0, 50)
      .map((x) => ({
        id: x.sessionId,
        title: x.title,
        status: (SessionStatus[x.status] ?? "unknown").toLowerCase(),
        model: x.model,
        cost_usd: x.costUsd,
        directory: x.workingDirectory,
      }));
    return {
      text:
        sessions.length === 0
          ? "No sessions yet."
          : sessions.map((x) => `${x.id.slice(0, 10)} ${x.status} ${x.title}`).join("\n"),
      sessions,
    };
  },
  render(input) {
    if (input.kind !== "tool_result" || !input.payload) return undefined;
    const list = (input.payload["sessions"] ?? []) as {
      id: string;
      title: string;
      status: string;
      model: string;
      cost_usd: number;
    }[];
    if (list.length === 0) return r.text("No sessions yet.", "dim");
    return r.group([
      r.table(
        ["id", "status", "model", "cost", "title"],
        list.map((x) => [x.id.slice(0, 10), x.status, x.model, usd(x.cost_usd), x.title.slice(0, 50)]),
      ),
      r.text("/resume <id> (or /resume for a picker) continues one.", "dim"),
    ]);
  },
};

export const TOOLS = [modelTool, planTool, compactTool, permissionsTool, costTool, sessionsTool];
