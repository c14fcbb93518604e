// One tool call as the gate carries it from its tool_use block to its one result: the
// record, the result shapes, and what the model and the session file are told of it.
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import type { ContentBlock, ToolUseBlock } from "@pluggableharness/protocol/content";
import { ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlanItem } from "@pluggableharness/protocol/plan";
import { type RiskClass, type ToolError, ToolErrorCategory } from "@pluggableharness/protocol/tool";
import {
  type CallOutcomeKind,
  fitResultText,
  imageFallbackText,
  modelTextOf,
  resultBudgetBytes,
  resultImages,
  toolErrorCategoryName,
  toolErrorReaction,
} from "../../domain/index.ts";
import type { LoopDeps } from "../deps.ts";
import type { EventSink } from "../ports.ts";
import type { SessionTool } from "../tool-registry.ts";
import { type ToolExecution, type ToolOutcome, toolError } from "../turn/tool-exec.ts";

export interface CallResult {
  readonly status: CallOutcomeKind;
  readonly outcome: ToolOutcome;
  readonly denied: boolean;
  readonly execution?: ToolExecution;
  /** The arguments the call ran with (a human's corrected input, when given). */
  readonly appliedArgs?: JsonObject;
}

export interface CallRecord {
  readonly index: number;
  /** The tool_use block (for an operator's call: one the kernel built, never put in history). */
  readonly block: ToolUseBlock;
  readonly tool?: SessionTool;
  args: JsonObject;
  /** The risk policy and the plan see: the declared one, raised for a writer spawn (subagents/risk.ts). */
  risk?: RiskClass;
  /** Why the arguments cannot run (the model's malformed JSON, or the input schema). */
  invalid?: ToolError;
  /**
   * The arguments were already checked against the input schema (an operator's call is
   * checked when it is made, so a typo is answered at once): the gate does not check again.
   */
  readonly argumentsChecked?: boolean;
  vetoed?: { readonly by: string; readonly reason: string };
  item?: PlanItem;
  /** A kernel-owned path the call would write (the kernel refuses it before policy). */
  protectedHit?: { readonly path: string; readonly loop?: true };
  result?: CallResult;
  resultPersisted: boolean;
  /** Whether post-tool-call may fire for it (it had a provider, kind and risk). */
  readonly hookable: boolean;
}

export function cancelledResult(): CallResult {
  return {
    status: "cancelled",
    denied: false,
    outcome: {
      kind: "error",
      error: toolError(ToolErrorCategory.CANCELLED, "the turn was interrupted before the call completed"),
    },
  };
}

/** A denial: PERMISSION_DENIED naming who decided. */
export function deniedResult(by: string, reason: string): CallResult {
  return {
    status: "denied",
    denied: true,
    outcome: {
      kind: "error",
      error: toolError(ToolErrorCategory.PERMISSION_DENIED, `${reason} (decided by ${by})`),
    },
  };
}

export function failedResult(error: ToolError): CallResult {
  return { status: "failed", denied: false, outcome: { kind: "error", error } };
}

/** What an execution came to. */
export function executedResult(exec: ToolExecution, args: JsonObject): CallResult {
  const status: CallOutcomeKind = exec.cancelled
    ? "cancelled"
    : exec.outcome.kind === "result"
      ? "succeeded"
      : "failed";
  return { status, denied: false, outcome: exec.outcome, execution: exec, appliedArgs: args };
}

export function toolProducer(deps: LoopDeps, tool: SessionTool) {
  return tool.provider.producers["tool"] ?? deps.kernelProducer;
}

/** The call's tool_result event, queued to share a transaction with its neighbours. */
export function persistToolResult(deps: LoopDeps, sink: EventSink, turnId: string, call: CallRecord): void {
  if (call.resultPersisted || !call.result) return;
  call.resultPersisted = true;
  const r = call.result;
  const exec = r.execution;
  // Results of parallel calls often arrive together: they share a transaction.
  sink.persistSoon(
    EventKind.TOOL_RESULT,
    call.tool ? toolProducer(deps, call.tool) : deps.kernelProducer,
    toBinary(
      ToolResultEventSchema,
      create(ToolResultEventSchema, {
        turnId,
        provider: call.tool?.provider.name ?? "",
        toolCallId: call.block.id,
        toolName: call.tool?.tool.schema.name ?? call.block.name,
        outcome:
          r.outcome.kind === "result"
            ? { case: "result", value: { payload: r.outcome.payload } }
            : { case: "error", value: r.outcome.error },
        output: exec?.output ?? [],
        ...(exec?.exitStatus ? { exitStatus: exec.exitStatus } : {}),
        partialResults: exec?.partials ?? [],
        duration: durationFromMs(exec?.durationMs ?? 0),
        denied: r.denied,
        attempts: Math.max(0, (exec?.attempts ?? 1) - 1),
      }),
    ),
  );
}

/** A text content block. */
export function textBlock(t: string): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: { case: "text", value: { $typeName: "pluggableharness.content.v1.TextBlock", text: t } },
  };
}

function outputText(exec: ToolExecution | undefined): string {
  if (!exec || exec.output.length === 0) return "";
  const decoder = new TextDecoder();
  return exec.output.map((c) => decoder.decode(c.data)).join("");
}

/**
 * What the model is told about a call's result, and whether it counts as an error. The
 * text is at most `budget` bytes (fitResultText): a result larger than that reaches the
 * model cut, with a note; its tool_result event keeps it whole.
 */
export function resultText(
  call: CallRecord,
  turnAborted: boolean,
  budget = resultBudgetBytes(undefined),
): { content: string; isError: boolean } {
  const { content, isError } = fullResultText(call, turnAborted);
  return { content: fitResultText(content, budget), isError };
}

function fullResultText(call: CallRecord, turnAborted: boolean): { content: string; isError: boolean } {
  const r = call.result!;
  if (r.outcome.kind === "result")
    return { content: modelTextOf(r.outcome.payload, call.tool?.tool.schema), isError: false };
  if (r.denied) return { content: `Denied: ${r.outcome.error.message}`, isError: true };
  const e = r.outcome.error;
  const category = toolErrorCategoryName(e.category);
  const presentation = call.tool
    ? toolErrorReaction(e, call.tool.tool.schema, { turnAborted }).presentation
    : "error_result";
  let content = presentation === "not_a_failure" ? `cancelled: ${e.message}` : `${category}: ${e.message}`;
  const already = outputText(r.execution);
  if (already && (r.status === "cancelled" || e.category === ToolErrorCategory.PROCESS_CRASHED)) {
    content += `\nOutput before the call stopped:\n${already}`;
  }
  return { content, isError: presentation === "error_result" };
}

/** An image content block carrying its bytes (a tool's result image, an attached file). */
export function imageBlock(mediaType: string, data: Uint8Array): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: {
      case: "image",
      value: {
        $typeName: "pluggableharness.content.v1.ImageBlock",
        mediaType,
        source: { case: "data", value: data },
      },
    },
  };
}

/** A tool_result block answering `toolUseId`. */
export function toolResultBlock(toolUseId: string, content: ContentBlock[], isError: boolean): ContentBlock {
  return {
    $typeName: "pluggableharness.content.v1.ContentBlock",
    block: {
      case: "toolResult",
      value: { $typeName: "pluggableharness.content.v1.ToolResultBlock", toolUseId, content, isError },
    },
  };
}

/**
 * The tool_result block the model sees for a call, one of `shares` results of its message
 * (they split the result budget). Images the result carries
 * (model_image_field) follow its text as image blocks when `model` takes images, and as
 * a one-line note otherwise (a model without vision must never be sent one).
 */
export function resultBlock(
  call: CallRecord,
  turnAborted: boolean,
  model?: { readonly id: string; readonly supportsVision: boolean; readonly contextWindow?: bigint },
  shares = 1,
): ContentBlock {
  const { content, isError } = resultText(call, turnAborted, resultBudgetBytes(model?.contextWindow, shares));
  const blocks: ContentBlock[] = [textBlock(content)];
  const r = call.result;
  if (r?.outcome.kind === "result") {
    const { images } = resultImages(r.outcome.payload, call.tool?.tool.schema);
    if (images.length > 0) {
      if (model?.supportsVision) blocks.push(...images.map((i) => imageBlock(i.mediaType, i.data)));
      else blocks.push(textBlock(imageFallbackText(images, model?.id ?? "")));
    }
  }
  return toolResultBlock(call.block.id, blocks, isError);
}
