// Last checks on what the kernel itself is about to send: a ToolCall to Invoke and a
// StreamCompletionRequest. Argument problems are the model's to fix (invalid_arguments);
// anything else is a kernel bug and throws KernelContractError.
import { create } from "@bufbuild/protobuf";
import type { ModelSpec, StreamCompletionRequest } from "@pluggableharness/protocol/model";
import {
  type ToolCall,
  type ToolError,
  ToolErrorCategory,
  ToolErrorSchema,
} from "@pluggableharness/protocol/tool";
import { DomainError } from "./errors.ts";
import { checkArguments } from "./payload-validation.ts";
import type { ValidatedTool } from "./tool-schema.ts";

/** The kernel was about to send something the protocol forbids. */
export class KernelContractError extends DomainError {
  readonly category = "kernel_contract";
  constructor(message: string) {
    super(message);
    this.name = "KernelContractError";
  }
}

/**
 * Checks a ToolCall before Invoke. Returns an invalid_arguments ToolError (to hand back to
 * the model instead of running the call) when the arguments fail input_schema; throws
 * KernelContractError when the kernel left out a field it must set.
 */
export function checkToolCall(call: ToolCall, tool: ValidatedTool): ToolError | undefined {
  const where = `${tool.provider}.${tool.schema.name}`;
  if (!call.id) throw new KernelContractError(`ToolCall for ${where} has no kernel-assigned id`);
  if (call.toolName !== tool.schema.name) {
    throw new KernelContractError(`ToolCall names "${call.toolName}" but is routed to ${where}`);
  }
  const ctx = call.callContext;
  if (!ctx?.sessionId || !ctx.workingDirectory) {
    throw new KernelContractError(
      `ToolCall ${call.id} for ${where} lacks call_context (session_id and working_directory)`,
    );
  }
  const check = checkArguments(tool.inputJsonSchema, call.arguments ?? {});
  if (check.ok) return undefined;
  return create(ToolErrorSchema, {
    category: ToolErrorCategory.INVALID_ARGUMENTS,
    message: `arguments for ${tool.schema.name} do not match its input schema: ${check.errors.join("; ")}`,
    retryable: false,
  });
}

/** Throws KernelContractError when a StreamCompletionRequest breaks a kernel-side MUST. */
export function checkStreamCompletionRequest(req: StreamCompletionRequest, spec: ModelSpec): void {
  if (!req.modelId) throw new KernelContractError("StreamCompletionRequest has no model_id");
  if (req.modelId !== spec.id) {
    throw new KernelContractError(
      `StreamCompletionRequest names model "${req.modelId}" but was checked against "${spec.id}"`,
    );
  }
  if (!req.callContext?.sessionId)
    throw new KernelContractError("StreamCompletionRequest lacks call_context");
  if (req.cacheBreakpoints.length > 0 && !spec.caching?.explicitMarkers) {
    throw new KernelContractError(
      `cache breakpoints sent to ${spec.id}, which has no explicit cache markers`,
    );
  }
  for (const bp of req.cacheBreakpoints) {
    if (bp.position.case === undefined) throw new KernelContractError("a cache breakpoint has no position");
    if (
      bp.position.case === "afterMessageIndex" &&
      (bp.position.value < 0n || bp.position.value >= BigInt(req.messages.length))
    ) {
      throw new KernelContractError(
        `cache breakpoint after message ${bp.position.value} is outside the request's messages`,
      );
    }
  }
}
