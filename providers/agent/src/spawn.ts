// spawn_subagent: delegate a task to a sub-agent, an ordinary tool whose Invoke calls the
// kernel's RunSession (architecture.md#sub-agent-support). The operator lists the agent
// profiles the model may delegate to (`profiles = { name = "what it is for" }`), which
// become the `profile` enum and the tool's description. The kernel does the rest: it
// rates each call's risk by the named profile (critical when that profile can write
// unattended), gives the child exactly its profile's tools, depth and bounds, runs
// parallel spawns up to max_concurrent_subagents, and cancels the child with the call.
import type { JsonObject } from "@bufbuild/protobuf";
import type { RunSessionResponse } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import {
  configError,
  type RenderNodeInit,
  r,
  s,
  type ToolDefinition,
  ToolFailure,
  type ToolProviderOptions,
} from "@pluggableharness/tool-kit";

interface SpawnArgs {
  profile: string;
  prompt: string;
  description?: string;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;

const STATUS_NAMES: Record<number, string> = {
  [SessionStatus.COMPLETED]: "completed",
  [SessionStatus.ERROR_MAX_TURNS]: "error_max_turns",
  [SessionStatus.ERROR_MAX_BUDGET_USD]: "error_max_budget_usd",
  [SessionStatus.ERROR_MAX_WALL_CLOCK]: "error_max_wall_clock",
  [SessionStatus.CANCELLED]: "cancelled",
  [SessionStatus.FAILED]: "failed",
};

/** The child's final message as text (its text blocks, in order). */
export function answerText(res: RunSessionResponse): string {
  const blocks = res.finalMessage?.content ?? [];
  return blocks
    .flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []))
    .join("\n")
    .trim();
}

/**
 * What the parent model gets back: the child's answer and how it ended. A child that
 * ended on a bound still answered (its final-answer turn), so that is a result saying so;
 * a failed or cancelled child is the call's error.
 */
export function outcomeOf(res: RunSessionResponse): JsonObject {
  const status = STATUS_NAMES[res.status] ?? "unknown";
  const denials = res.denials.map((d) => ({ tool: d.tool, reason: d.reason, session_id: d.sessionId }));
  if (res.status === SessionStatus.FAILED) {
    throw new ToolFailure("execution_failed", `the sub-agent failed: ${res.detail || "no detail"}`, {
      details: { session_id: res.sessionId, status, cost_usd: res.totalCostUsd, denials },
    });
  }
  if (res.status === SessionStatus.CANCELLED) {
    throw new ToolFailure("cancelled", "the sub-agent was cancelled", {
      details: { session_id: res.sessionId, status },
    });
  }
  const answer = answerText(res);
  const notes: string[] = [];
  if (status !== "completed") notes.push(`[the sub-agent stopped early: ${status}; ${res.detail}]`);
  for (const d of denials) notes.push(`[the sub-agent was refused ${d.tool}: ${d.reason}]`);
  return {
    session_id: res.sessionId,
    status,
    answer: [answer || "(the sub-agent gave no answer)", ...notes].join("\n\n"),
    cost_usd: res.totalCostUsd,
    input_tokens: Number(res.totalInputTokens),
    output_tokens: Number(res.totalOutputTokens),
    denials,
  };
}

/** The provider: its one operation and the configuration that shapes it. */
export function spawnProvider(): ToolProviderOptions {
  let profiles: Record<string, string> = {};

  const tool: ToolDefinition<SpawnArgs> = {
    name: "spawn_subagent",
    kind: "resource",
    // The mildest spawn (a child that cannot write unattended); the kernel raises a call
    // naming a profile with unattended write access to critical.
    risk: "moderate",
    get description() {
      const list = Object.entries(profiles)
        .map(([name, what]) => `- ${name}: ${what}`)
        .join("\n");
      return (
        "Delegate a task to a sub-agent, which returns only its final answer. It does not see this " +
        "conversation: the prompt must hold everything it needs. Calls in one turn run in parallel. Profiles:\n" +
        (list || "- (none configured)")
      );
    },
    get input() {
      const names = Object.keys(profiles);
      return s.object(
        {
          profile: s.string(undefined, names.length > 0 ? names : undefined),
          prompt: s.string("Goal, context and what to return."),
          description: s.string("A few words shown to the user."),
        },
        ["profile", "prompt"],
      );
    },
    output: s.object(
      {
        session_id: s.string("The sub-agent's session (replay it with `agent sessions replay`)."),
        status: s.string("How it ended: completed, or the bound that stopped it."),
        answer: s.string("Its final answer, with notes on anything it was refused."),
        cost_usd: s.number("What it spent, its own sub-agents included."),
        input_tokens: s.integer("Input tokens it used, sub-agents included."),
        output_tokens: s.integer("Output tokens it produced, sub-agents included."),
        denials: s.array(
          s.object(
            { tool: s.string("provider.tool"), reason: s.string("why"), session_id: s.string("where") },
            ["tool", "reason"],
          ),
          "Calls it (or its own sub-agents) were refused by policy or by the user.",
        ),
      },
      ["session_id", "status", "answer"],
    ),
    streaming: false,
    // Sub-agents run side by side; the kernel caps them per parent (max_concurrent_subagents).
    concurrency: { safe: true },
    idempotent: false,
    spawns: { profileField: "profile" },
    modelText: { field: "answer", omit: ["denials"] },
    // A sub-agent works for a while; its own bounds (max_wall_clock_s) are what limit it.
    defaultTimeoutMs: 3_600_000,

    async invoke(args, ctx): Promise<JsonObject> {
      if (!args.prompt.trim()) throw new ToolFailure("invalid_arguments", "prompt is empty");
      if (Object.keys(profiles).length > 0 && !(args.profile in profiles)) {
        throw new ToolFailure(
          "invalid_arguments",
          `profile "${args.profile}" is not one this provider offers (${Object.keys(profiles).join(", ")})`,
        );
      }
      let res: RunSessionResponse;
      try {
        res = await ctx.kernel.runSession(
          { profile: args.profile, prompt: args.prompt, toolCallId: ctx.callId },
          { signal: ctx.signal },
        );
      } catch (err) {
        if (ctx.signal.aborted) throw new ToolFailure("cancelled", "the call was cancelled");
        const code = (err as { code?: number }).code;
        throw new ToolFailure(
          code === 7
            ? "permission_denied"
            : code === 5 || code === 3
              ? "invalid_arguments"
              : "execution_failed",
          `the kernel refused the sub-agent: ${(err as Error).message}`,
        );
      }
      return outcomeOf(res);
    },

    preview(args): RenderNodeInit {
      return r.group([
        r.text(`Sub-agent "${args.profile}"${args.description ? `: ${args.description}` : ""}`, "bold"),
        r.code(args.prompt),
      ]);
    },

    render(input) {
      if (input.kind === "tool_call") {
        const p = input.arguments["profile"];
        const d = input.arguments["description"];
        return r.text(`Sub-agent ${String(p)}${typeof d === "string" && d ? `: ${d}` : ""}`, "bold");
      }
      if (!input.payload) {
        return input.denied
          ? r.text("The sub-agent was not started (denied).", "warning")
          : r.text(`The sub-agent failed: ${input.error?.message ?? "unknown error"}`, "error");
      }
      const p = input.payload;
      const cost = typeof p["cost_usd"] === "number" ? ` · $${p["cost_usd"].toFixed(4)}` : "";
      return r.group([
        r.subSession(String(p["session_id"] ?? ""), `${String(p["status"] ?? "")}${cost}`),
        r.collapsible("answer", [r.text(String(p["answer"] ?? ""))], false),
      ]);
    },
  };

  return {
    tools: [tool],
    operationsFromConfig: true,
    // Its one operation is described from the profiles it is given, and nothing else.
    operationsCacheable: true,
    config: [
      {
        name: "profiles",
        type: "map_string",
        description:
          "Agent profiles (agent_profile blocks) the model may delegate to, each with a line saying what it is for.",
        default: {},
      },
    ],
    configure(values) {
      const given = (values["profiles"] ?? {}) as Record<string, string>;
      const bad = Object.keys(given).filter((n) => !NAME.test(n));
      if (bad.length > 0) return [configError(["profiles"], "Invalid profile name", bad.join(", "))];
      profiles = { ...given };
      return [];
    },
  };
}
