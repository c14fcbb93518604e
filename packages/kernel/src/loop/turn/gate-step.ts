// Steps 5-14 of a turn (gate): the post-model-response hook, the done check, one call
// record per tool_use (a tool not offered this turn is answered not_found at once), then
// the plan/apply gate (gate/gate.ts), with the file checkpoint around resource calls.
import { create } from "@bufbuild/protobuf";
import type { ToolUseBlock } from "@pluggableharness/protocol/content";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import {
  type AccumulatedCompletion,
  checkDone,
  serializeAllFor,
  TurnDoneTracker,
} from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import type { CallRecord } from "../gate/call.ts";
import { CallGate } from "../gate/gate.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import type { TurnAnswer } from "./append.ts";
import type { StopReason } from "./bounds.ts";
import { toolError } from "./tool-exec.ts";
import { writtenPaths } from "./written-paths.ts";

export type GateStepOutcome =
  /** The model asked for no tool: the turn is done once its message is appended. */
  | { readonly kind: "no_calls" }
  | { readonly kind: "cancelled" }
  /** The calls ran (or were refused); `done` says whether a done tool ended the turn. */
  | { readonly kind: "ran"; readonly done: TurnDoneTracker; readonly breakerTripped: StopReason | undefined };

export async function gateStep(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  answer: TurnAnswer,
  completion: AccumulatedCompletion,
  turn: { readonly final?: StopReason; readonly runPrompt?: string; readonly trace: (step: string) => void },
): Promise<GateStepOutcome> {
  const { trace } = turn;
  const { message, candidate } = answer;
  // ---- 5. post-model-response --------------------------------------------------------------
  trace("5");
  const lastUsage = completion.usage.at(-1)?.usage;
  await deps.hooks.dispatch(
    "post-model-response",
    create(HookPayloadSchema, {
      point: {
        case: "postModelResponse",
        value: {
          message,
          model: { provider: candidate.provider.name, id: candidate.spec.id },
          ...(lastUsage ? { usage: lastUsage } : {}),
          costUsd: completion.costUsd,
          contextWindow: candidate.spec.contextWindow,
          runPrompt: turn.runPrompt ?? "",
        },
      },
    }),
    ctx.hook,
  );

  // ---- 6. done check --------------------------------------------------------------------------
  trace("6");
  const declared = new Set(ctx.tools.map((t) => t.name));
  const offered = (name: string) => (declared.has(name) ? ports.registry.get(name) : undefined);
  const check = checkDone(message, (name) => offered(name)?.tool.schema);
  if (check.kind === "done_no_tool_calls") return { kind: "no_calls" };
  const done = new TurnDoneTracker(check);
  const calls: CallRecord[] = check.toolUses.map((u, index) => {
    const block = message.content.find((b) => b.block.case === "toolUse" && b.block.value.id === u.id)!.block
      .value as ToolUseBlock;
    const tool = offered(u.name);
    const invalid = completion.invalidToolCalls.find((c) => c.id === u.id)?.error;
    return {
      index,
      block,
      ...(tool ? { tool } : {}),
      args: block.input ?? {},
      ...(invalid ? { invalid } : {}),
      resultPersisted: false,
      hookable: tool !== undefined,
    };
  });
  answer.calls = calls;
  const gate = new CallGate(deps, ctx, ports, {
    calls,
    serializeAll: serializeAllFor(candidate.spec),
    trace,
    onPostToolCall: (c) => done.postToolCallFired(c.block.id),
  });
  for (const c of calls) {
    if (c.tool) continue;
    gate.setResult(c, {
      status: "failed",
      denied: false,
      outcome: {
        kind: "error",
        error: toolError(
          ToolErrorCategory.NOT_FOUND,
          turn.final
            ? `no tools are available in this turn (${c.block.name} was not offered); answer with what you have`
            : `no tool named "${c.block.name}" is available in this turn`,
        ),
      },
    });
    // A call with malformed arguments is reported after pre-tool-call, so observers still see it.
  }
  answer.gate = gate;

  // ---- 7-14. the tool gate ---------------------------------------------------------------------
  // Resource calls may change files: the turn's checkpoint is what differs around them.
  // Calls that name the only files they change are checkpointed at those files alone.
  const changesFiles = calls.some((c) => c.tool?.tool.schema.kind === ToolKind.RESOURCE);
  if (changesFiles) ports.checkpoints.before(writtenPaths(calls, deps.hooks));
  let gated: Awaited<ReturnType<CallGate["run"]>>;
  try {
    gated = await gate.run();
  } finally {
    if (changesFiles) ports.checkpoints.after(ctx.turnId, writtenPaths(calls, deps.hooks, true));
  }
  if (gated === "cancelled") return { kind: "cancelled" };
  return { kind: "ran", done, breakerTripped: gate.breakerTripped };
}
