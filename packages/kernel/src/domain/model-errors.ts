// The ModelError taxonomy: category names, the kernel's reaction per category and the
// mapping to and from gRPC status codes (model/conformance.md#error-taxonomy). The numeric
// status codes are gRPC's published constants (protocol/status-codes.ts, which loads no grpc-js).
import { create } from "@bufbuild/protobuf";
import { type ModelError, ModelErrorCategory, ModelErrorSchema } from "@pluggableharness/protocol/model";
import { StatusCode } from "@pluggableharness/protocol/status-codes";
import { DomainError } from "./errors.ts";

/** gRPC status codes (grpc/codes), as numbers: the contract's one table. */
export const GrpcCode = StatusCode;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

export type ModelErrorCategoryName =
  | "context_length_exceeded"
  | "rate_limited"
  | "overloaded"
  | "auth_error"
  | "invalid_request"
  | "content_filtered"
  | "unknown"
  | "process_crashed";

const NAMES: Record<number, ModelErrorCategoryName> = {
  [ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED]: "context_length_exceeded",
  [ModelErrorCategory.RATE_LIMITED]: "rate_limited",
  [ModelErrorCategory.OVERLOADED]: "overloaded",
  [ModelErrorCategory.AUTH_ERROR]: "auth_error",
  [ModelErrorCategory.INVALID_REQUEST]: "invalid_request",
  [ModelErrorCategory.CONTENT_FILTERED]: "content_filtered",
  [ModelErrorCategory.UNKNOWN]: "unknown",
  [ModelErrorCategory.PROCESS_CRASHED]: "process_crashed",
};
const CODES: Record<ModelErrorCategoryName, ModelErrorCategory> = {
  context_length_exceeded: ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
  rate_limited: ModelErrorCategory.RATE_LIMITED,
  overloaded: ModelErrorCategory.OVERLOADED,
  auth_error: ModelErrorCategory.AUTH_ERROR,
  invalid_request: ModelErrorCategory.INVALID_REQUEST,
  content_filtered: ModelErrorCategory.CONTENT_FILTERED,
  unknown: ModelErrorCategory.UNKNOWN,
  process_crashed: ModelErrorCategory.PROCESS_CRASHED,
};

export function modelErrorCategoryName(category: ModelErrorCategory): ModelErrorCategoryName {
  return NAMES[category] ?? "unknown";
}

/** Whether a category is worth retrying when the plugin did not say (kernel-built errors). */
const DEFAULT_RETRYABLE: Record<ModelErrorCategoryName, boolean> = {
  context_length_exceeded: false,
  rate_limited: true,
  overloaded: true,
  auth_error: false,
  invalid_request: false,
  content_filtered: false,
  unknown: false,
  process_crashed: true,
};

export interface ModelErrorInit {
  readonly retryable?: boolean;
  readonly retryAfterSeconds?: number;
  readonly vendorCode?: string;
  readonly vendorBody?: string;
  readonly httpStatus?: number;
  /** The vendor does not serve the requested model (ModelError.model_not_found). */
  readonly modelNotFound?: boolean;
}

/** A classified model failure as a thrown value; `toProto()` gives the wire ModelError. */
export class ClassifiedModelError extends DomainError {
  readonly category: ModelErrorCategoryName;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly vendorCode: string | undefined;
  readonly vendorBody: string | undefined;
  readonly httpStatus: number | undefined;
  readonly modelNotFound: boolean;
  constructor(category: ModelErrorCategoryName, message: string, init: ModelErrorInit = {}) {
    super(message);
    this.name = "ClassifiedModelError";
    this.category = category;
    this.retryable = init.retryable ?? DEFAULT_RETRYABLE[category];
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.vendorCode = init.vendorCode;
    this.vendorBody = init.vendorBody;
    this.httpStatus = init.httpStatus;
    // Only meaningful on invalid_request: the flag never turns another category into a fallback.
    this.modelNotFound = category === "invalid_request" && init.modelNotFound === true;
  }

  /**
   * Classifies an in-band or status-detail ModelError from a plugin. An unspecified
   * category becomes unknown; a plugin-emitted process_crashed (kernel-only) becomes
   * unknown with the breach named in the message.
   */
  static fromProto(e: ModelError): ClassifiedModelError {
    let category = modelErrorCategoryName(e.category);
    let message = e.message;
    if (e.category === ModelErrorCategory.UNSPECIFIED || !NAMES[e.category]) {
      message = `unclassified model error: ${message}`;
      category = "unknown";
    } else if (e.category === ModelErrorCategory.PROCESS_CRASHED) {
      message = `protocol violation: a plugin reported process_crashed about itself: ${message}`;
      category = "unknown";
    }
    return new ClassifiedModelError(category, message, {
      retryable: category === "unknown" ? false : e.retryable,
      ...(e.retryAfterSeconds !== undefined ? { retryAfterSeconds: e.retryAfterSeconds } : {}),
      ...(e.vendorCode !== undefined ? { vendorCode: e.vendorCode } : {}),
      ...(e.vendorBody !== undefined ? { vendorBody: e.vendorBody } : {}),
      ...(e.httpStatus !== undefined ? { httpStatus: e.httpStatus } : {}),
      ...(e.modelNotFound ? { modelNotFound: true } : {}),
    });
  }

  toProto(): ModelError {
    return create(ModelErrorSchema, {
      category: CODES[this.category],
      message: this.message,
      retryable: this.retryable,
      ...(this.retryAfterSeconds !== undefined ? { retryAfterSeconds: this.retryAfterSeconds } : {}),
      ...(this.vendorCode !== undefined ? { vendorCode: this.vendorCode } : {}),
      ...(this.vendorBody !== undefined ? { vendorBody: this.vendorBody } : {}),
      ...(this.httpStatus !== undefined ? { httpStatus: this.httpStatus } : {}),
      ...(this.modelNotFound ? { modelNotFound: true } : {}),
    });
  }
}

/** The gRPC status a plugin returns for a failure of this category. */
export function grpcCodeForModelError(category: ModelErrorCategoryName): GrpcCode {
  switch (category) {
    case "context_length_exceeded":
    case "rate_limited":
      return GrpcCode.RESOURCE_EXHAUSTED;
    case "overloaded":
    case "process_crashed":
      return GrpcCode.UNAVAILABLE;
    case "auth_error":
      return GrpcCode.UNAUTHENTICATED;
    case "invalid_request":
      return GrpcCode.INVALID_ARGUMENT;
    case "content_filtered":
      return GrpcCode.FAILED_PRECONDITION;
    case "unknown":
      return GrpcCode.INTERNAL;
  }
}

/** A status that is cancellation: normal control flow, not a failure. */
export interface Cancellation {
  readonly kind: "cancelled";
}

/**
 * Classifies a gRPC status a model call ended with. A ModelError carried in the status
 * details wins (rate_limited travels that way: RESOURCE_EXHAUSTED with the detail);
 * without one, RESOURCE_EXHAUSTED reads as context_length_exceeded. CANCELLED is not a
 * failure. DEADLINE_EXCEEDED reads as overloaded (the vendor did not answer in time).
 */
export function classifyGrpcStatus(status: {
  readonly code: number;
  readonly message: string;
  readonly detail?: ModelError | undefined;
}): ClassifiedModelError | Cancellation {
  if (status.code === GrpcCode.CANCELLED) return { kind: "cancelled" };
  if (status.detail) return ClassifiedModelError.fromProto(status.detail);
  const category: ModelErrorCategoryName = (() => {
    switch (status.code) {
      case GrpcCode.RESOURCE_EXHAUSTED:
        return "context_length_exceeded";
      case GrpcCode.UNAVAILABLE:
      case GrpcCode.DEADLINE_EXCEEDED:
        return "overloaded";
      case GrpcCode.UNAUTHENTICATED:
        return "auth_error";
      case GrpcCode.INVALID_ARGUMENT:
        return "invalid_request";
      case GrpcCode.FAILED_PRECONDITION:
        return "content_filtered";
      default:
        return "unknown";
    }
  })();
  return new ClassifiedModelError(category, status.message || `gRPC status ${status.code}`, {
    vendorCode: `grpc:${status.code}`,
  });
}

export interface ModelErrorReaction {
  readonly category: ModelErrorCategoryName;
  /** Retry the same request (with backoff, honouring retry_after_seconds). */
  readonly retrySameRequest: boolean;
  /** Eligible to move to the next candidate of the fallback chain. */
  readonly fallback: boolean;
  /** Shown to a human rather than handled automatically. */
  readonly surfaceToHuman: boolean;
  /** The context must shrink (or the turn fail clearly) before any retry. */
  readonly mustShrinkContext: boolean;
  /** Log the full request shape for debugging. */
  readonly logRequest: boolean;
  /** At most this many same-request retries, when bounded by the taxonomy itself. */
  readonly maxRetries?: number;
}

/** The kernel's reaction per category (model/conformance.md#error-taxonomy). */
export function modelErrorReaction(error: ClassifiedModelError): ModelErrorReaction {
  const base = {
    category: error.category,
    retrySameRequest: false,
    fallback: false,
    surfaceToHuman: false,
    mustShrinkContext: false,
    logRequest: false,
  };
  switch (error.category) {
    case "context_length_exceeded":
      return { ...base, mustShrinkContext: true };
    case "rate_limited":
      return { ...base, retrySameRequest: true, fallback: true };
    case "overloaded":
      return { ...base, retrySameRequest: true, fallback: true };
    case "auth_error":
      return { ...base, surfaceToHuman: true };
    case "invalid_request":
      // A model the vendor does not serve is not a malformed request: the chain moves on.
      return error.modelNotFound ? { ...base, fallback: true } : { ...base, logRequest: true };
    case "content_filtered":
      return { ...base, surfaceToHuman: true };
    case "process_crashed":
      return { ...base, retrySameRequest: true, fallback: true, maxRetries: 1 };
    case "unknown":
      return { ...base, logRequest: true };
  }
}
