// Steps 2-4 of a turn (model): the pre-model-call hook may transform the request, the model
// is called on the turn's route, and a request the model refused as too long is compacted
// and sent once more.
import { create } from "@bufbuild/protobuf";
import type { Message } from "@pluggableharness/protocol/content";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { requestPrefix, toolListFingerprint } from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import { CompactionReason, type CompactionStates, calibrate, compactors } from "./compaction.ts";
import { callModel, estimateInputTokens, type ModelCallResult } from "./model-call.ts";
import type { PreparedTurn } from "./prepare.ts";

export type ModelStepOutcome =
  | { readonly kind: "answered"; readonly result: ModelCallResult }
  | { readonly kind: "cancelled" }
  | { readonly kind: "failed"; readonly detail: string };

export async function modelStep(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  states: CompactionStates,
  prepared: PreparedTurn,
  trace: (step: string) => void,
): Promise<ModelStepOutcome> {
  const { turnId, signal, tools, candidates } = ctx;
  const { route, assembled, target } = prepared;
  const modelCalls = states.modelCalls;
  let overflowRetried = false;
  for (;;) {
    // ---- 2. pre-model-call ------------------------------------------------------------------
    trace("2");
    const preModel = await deps.hooks.dispatch(
      "pre-model-call",
      create(HookPayloadSchema, {
        point: {
          case: "preModelCall",
          value: {
            model: { provider: route.chosen.provider.name, id: route.chosen.spec.id },
            // The hook's payload is built from the conversation as it stands (no copy made here).
            messages: ports.conversation.messages as Message[],
            tools: [...tools],
            ...(route.chosen.params ? { params: route.chosen.params } : {}),
          },
        },
      }),
      ctx.hook,
    );
    if (signal.aborted) return { kind: "cancelled" };
    if (preModel.transformFailure) {
      return {
        kind: "failed",
        detail: `hook_error: transform subscriber "${preModel.transformFailure.subscriber?.name}" failed at pre-model-call (${preModel.transformFailure.message}); the turn cannot go on with an unintended request`,
      };
    }
    const messages =
      preModel.payload.point.case === "preModelCall"
        ? preModel.payload.point.value.messages
        : ports.conversation.messages;

    // ---- 3-4. model call and accumulation -----------------------------------------------------
    trace("3");
    const estimated = Number(estimateInputTokens(messages, assembled.sections, tools));
    states.compaction.contextUsage = {
      tokens: prepared.requestTokens(),
      ceiling: Number(target.contextWindow),
    };
    const result = await deps.telemetry.span("step 3-4 model-call", { "turn.step": "3-4" }, () =>
      callModel(deps, ctx, ports, modelCalls, {
        turnId,
        candidates,
        route,
        messages,
        tools,
        sections: assembled.sections,
        ...(modelCalls.previousToolsFingerprint !== undefined
          ? { previousToolsFingerprint: modelCalls.previousToolsFingerprint }
          : {}),
        ...(modelCalls.previousRequest ? { previousRequest: modelCalls.previousRequest } : {}),
        signal,
        ...(ctx.deadline !== undefined ? { deadline: ctx.deadline } : {}),
      }),
    );
    modelCalls.previousToolsFingerprint = toolListFingerprint(tools);
    modelCalls.previousRequest = requestPrefix(tools, assembled.sections, messages);
    if (result.kind === "ok") {
      const u = result.completion.usage.at(-1)?.usage;
      if (u)
        calibrate(
          states.compaction,
          estimated,
          Number(u.inputTokens + (u.cacheReadTokens ?? 0n) + (u.cacheWriteTokens ?? 0n)),
        );
    }
    // The model refused the request as too long: compact and send it once more.
    if (
      result.kind === "failed" &&
      result.category === "context_length_exceeded" &&
      !overflowRetried &&
      compactors(deps).length > 0
    ) {
      overflowRetried = true;
      deps.log.info(
        "the model refused the request as too long; compacting and retrying once",
        undefined,
        ctx.sessionId,
      );
      if (await prepared.compact(CompactionReason.OVERFLOW)) continue;
      if (signal.aborted) return { kind: "cancelled" };
      return {
        kind: "failed",
        detail: `model_error context_length_exceeded: ${result.message} (compaction could not shrink the conversation further)`,
      };
    }
    return { kind: "answered", result };
  }
}
