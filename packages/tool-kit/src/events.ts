// ToolEvent builders and the typed failure a tool throws to end its call with a
// classified ToolError.
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { OutputStream, ToolErrorCategory, type ToolEventSchema } from "@pluggableharness/protocol/tool";

export type ToolEventInit = MessageInitShape<typeof ToolEventSchema>;

/** Category names as the spec writes them. */
export type ErrorCategoryName =
  | "invalid_arguments"
  | "not_found"
  | "permission_denied"
  | "execution_failed"
  | "timeout"
  | "concurrency_conflict"
  | "cancelled"
  | "unknown";

export const CATEGORY_VALUES: Record<ErrorCategoryName, ToolErrorCategory> = {
  invalid_arguments: ToolErrorCategory.INVALID_ARGUMENTS,
  not_found: ToolErrorCategory.NOT_FOUND,
  permission_denied: ToolErrorCategory.PERMISSION_DENIED,
  execution_failed: ToolErrorCategory.EXECUTION_FAILED,
  timeout: ToolErrorCategory.TIMEOUT,
  concurrency_conflict: ToolErrorCategory.CONCURRENCY_CONFLICT,
  cancelled: ToolErrorCategory.CANCELLED,
  unknown: ToolErrorCategory.UNKNOWN,
};

/** Retryable unless said otherwise: timeouts and conflicts; everything else is not. */
const RETRYABLE_BY_DEFAULT = new Set<ErrorCategoryName>(["timeout", "concurrency_conflict"]);

/** Thrown by a tool implementation; the adapter turns it into the terminal error event. */
export class ToolFailure extends Error {
  readonly category: ErrorCategoryName;
  readonly retryable: boolean;
  readonly details: JsonObject | undefined;

  constructor(
    category: ErrorCategoryName,
    message: string,
    options: { retryable?: boolean; details?: JsonObject } = {},
  ) {
    super(message);
    this.name = "ToolFailure";
    this.category = category;
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(category);
    this.details = options.details;
  }
}

export function resultEvent(payload: JsonObject): ToolEventInit {
  return { event: { case: "result", value: { payload } } };
}

export function errorEvent(failure: ToolFailure): ToolEventInit {
  return {
    event: {
      case: "error",
      value: {
        category: CATEGORY_VALUES[failure.category],
        message: failure.message,
        retryable: failure.retryable,
        ...(failure.details ? { details: failure.details } : {}),
      },
    },
  };
}

export function outputChunk(stream: "stdout" | "stderr", data: Uint8Array | string): ToolEventInit {
  return {
    event: {
      case: "outputChunk",
      value: {
        stream: stream === "stdout" ? OutputStream.STDOUT : OutputStream.STDERR,
        data: typeof data === "string" ? new TextEncoder().encode(data) : data,
      },
    },
  };
}

export function progress(message: string, fraction?: number): ToolEventInit {
  return {
    event: {
      case: "progress",
      value: { message, ...(fraction === undefined ? {} : { fractionComplete: fraction }) },
    },
  };
}

export function partialResult(payload: JsonObject): ToolEventInit {
  return { event: { case: "partialResult", value: { payload } } };
}

export function exitStatus(exitCode: number, signal?: string): ToolEventInit {
  return { event: { case: "exitStatus", value: { exitCode, ...(signal ? { signal } : {}) } } };
}
