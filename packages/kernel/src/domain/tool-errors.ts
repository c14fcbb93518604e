// The ToolError taxonomy: category names, the kernel's reaction per category, the
// auto-retry gate (kind + idempotent) and the Invoke deadline resolution.
import { create, type JsonObject } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import {
  type ToolError,
  ToolErrorCategory,
  ToolErrorSchema,
  ToolKind,
  type ToolSchema,
} from "@pluggableharness/protocol/tool";
import { DomainError } from "./errors.ts";
import { durationToMillis } from "./time.ts";

export type ToolErrorCategoryName =
  | "invalid_arguments"
  | "not_found"
  | "permission_denied"
  | "execution_failed"
  | "timeout"
  | "concurrency_conflict"
  | "cancelled"
  | "process_crashed"
  | "unknown";

const NAMES: Record<number, ToolErrorCategoryName> = {
  [ToolErrorCategory.INVALID_ARGUMENTS]: "invalid_arguments",
  [ToolErrorCategory.NOT_FOUND]: "not_found",
  [ToolErrorCategory.PERMISSION_DENIED]: "permission_denied",
  [ToolErrorCategory.EXECUTION_FAILED]: "execution_failed",
  [ToolErrorCategory.TIMEOUT]: "timeout",
  [ToolErrorCategory.CONCURRENCY_CONFLICT]: "concurrency_conflict",
  [ToolErrorCategory.CANCELLED]: "cancelled",
  [ToolErrorCategory.PROCESS_CRASHED]: "process_crashed",
  [ToolErrorCategory.UNKNOWN]: "unknown",
};

/** The category's name; an unspecified or unrecognised value reads as "unknown". */
export function toolErrorCategoryName(category: ToolErrorCategory): ToolErrorCategoryName {
  return NAMES[category] ?? "unknown";
}

/** A classified tool failure as a thrown value; `toProto()` gives the wire ToolError. */
export class ClassifiedToolError extends DomainError {
  readonly category: ToolErrorCategoryName;
  readonly code: ToolErrorCategory;
  readonly retryable: boolean;
  readonly details: JsonObject | undefined;
  constructor(code: ToolErrorCategory, message: string, retryable: boolean, details?: JsonObject) {
    super(message);
    this.name = "ClassifiedToolError";
    this.code = code;
    this.category = toolErrorCategoryName(code);
    this.retryable = retryable;
    this.details = details;
  }
  static fromProto(e: ToolError): ClassifiedToolError {
    return new ClassifiedToolError(e.category, e.message, e.retryable, e.details);
  }
  toProto(): ToolError {
    return create(ToolErrorSchema, {
      category: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.details ? { details: this.details } : {}),
    });
  }
}

/**
 * How a tool error reaches the model:
 * - error_result: a tool_result with is_error set;
 * - ordinary_result: normal tool_result content (a failing test run is information, not a fault);
 * - not_a_failure: a tool_result saying the call was cancelled, without is_error.
 */
export type ToolErrorPresentation = "error_result" | "ordinary_result" | "not_a_failure";

/** Whether and how the kernel may re-run the call without asking the model. */
export type AutoRetry =
  | { readonly allowed: false; readonly reason: string }
  | { readonly allowed: true; readonly serialized: boolean; readonly reason: string };

export interface ToolErrorReaction {
  readonly category: ToolErrorCategoryName;
  readonly presentation: ToolErrorPresentation;
  readonly autoRetry: AutoRetry;
  /** The running Invoke must be cancelled (timeouts). */
  readonly cancelInvocation: boolean;
  /** Counts toward the circuit breaker that repeated denials also trip. */
  readonly tripsBreaker: boolean;
  /** `details` should be logged for debugging. */
  readonly logDetails: boolean;
  /** Retrying with escalated privilege is forbidden. */
  readonly neverEscalate: boolean;
}

export interface ToolErrorContext {
  /** The whole turn is being aborted (user interrupt, bound, shutdown). */
  readonly turnAborted: boolean;
}

type RetryClass = "never" | "if_retryable" | "serialized";

const TABLE: Record<ToolErrorCategoryName, { presentation: ToolErrorPresentation; retry: RetryClass }> = {
  invalid_arguments: { presentation: "error_result", retry: "never" },
  not_found: { presentation: "error_result", retry: "never" },
  permission_denied: { presentation: "error_result", retry: "never" },
  execution_failed: { presentation: "ordinary_result", retry: "if_retryable" },
  timeout: { presentation: "error_result", retry: "if_retryable" },
  concurrency_conflict: { presentation: "error_result", retry: "serialized" },
  cancelled: { presentation: "not_a_failure", retry: "never" },
  process_crashed: { presentation: "error_result", retry: "never" },
  unknown: { presentation: "error_result", retry: "if_retryable" },
};

/**
 * The auto-retry gate. Interactive calls are never re-run; concurrency conflicts are
 * re-run serialized whatever `idempotent` says; otherwise the error must be retryable,
 * its category must allow a retry, and the operation must be a data source or an
 * idempotent resource.
 */
export function autoRetryFor(error: ToolError, tool: ToolSchema): AutoRetry {
  const category = toolErrorCategoryName(error.category);
  if (tool.kind === ToolKind.INTERACTIVE) {
    return { allowed: false, reason: "interactive calls are never re-run without the model" };
  }
  const retry = TABLE[category].retry;
  if (retry === "serialized") {
    return {
      allowed: true,
      serialized: true,
      reason: "concurrency conflicts are retried serialized on the same key",
    };
  }
  if (retry === "never") return { allowed: false, reason: `${category} is never retried as-is` };
  if (!error.retryable) return { allowed: false, reason: "the provider marked the error non-retryable" };
  if (tool.kind === ToolKind.DATA_SOURCE) {
    return { allowed: true, serialized: false, reason: "data sources cannot mutate anything" };
  }
  if (tool.kind === ToolKind.RESOURCE && tool.idempotent) {
    return { allowed: true, serialized: false, reason: "the resource declares idempotent: true" };
  }
  return { allowed: false, reason: "a resource is only retried when it declares idempotent: true" };
}

/** The kernel's reaction to a terminal ToolError (tool/conformance.md#error-taxonomy). */
export function toolErrorReaction(
  error: ToolError,
  tool: ToolSchema,
  ctx: ToolErrorContext,
): ToolErrorReaction {
  const category = toolErrorCategoryName(error.category);
  let presentation = TABLE[category].presentation;
  if (category === "cancelled" && ctx.turnAborted) presentation = "error_result";
  return {
    category,
    presentation,
    autoRetry: ctx.turnAborted
      ? { allowed: false, reason: "the turn is being aborted" }
      : autoRetryFor(error, tool),
    cancelInvocation: category === "timeout",
    tripsBreaker: category === "process_crashed",
    logDetails: category === "unknown" || category === "process_crashed",
    neverEscalate: category === "permission_denied",
  };
}

export type TimeoutSource = "config" | "plugin" | "global";

/**
 * The Invoke deadline. An agent.hcl override wins over the operation's own
 * default_timeout, which wins over the kernel's global default.
 */
export function resolveToolTimeout(opts: {
  readonly pluginDefault?: Duration | undefined;
  readonly configOverrideMs?: number | undefined;
  readonly globalDefaultMs: number;
}): { readonly ms: number; readonly source: TimeoutSource } {
  if (opts.configOverrideMs !== undefined && opts.configOverrideMs > 0) {
    return { ms: opts.configOverrideMs, source: "config" };
  }
  if (opts.pluginDefault) {
    const ms = durationToMillis(opts.pluginDefault);
    if (ms > 0) return { ms, source: "plugin" };
  }
  return { ms: opts.globalDefaultMs, source: "global" };
}

/** The ToolError the kernel synthesises when a provider process dies mid-Invoke. */
export function processCrashedError(provider: string, cause: string): ToolError {
  return create(ToolErrorSchema, {
    category: ToolErrorCategory.PROCESS_CRASHED,
    message: `tool provider "${provider}" stopped while running the call: ${cause}`,
    retryable: false,
  });
}
