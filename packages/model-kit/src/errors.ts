// The ModelError taxonomy as adapters use it: a throwable ModelFailure, classification of
// an HTTP failure (status + body + headers) into a category, retry hints taken only from
// what the vendor sent, and the category -> gRPC status mapping.
import { create } from "@bufbuild/protobuf";
import { type ModelError, ModelErrorCategory, ModelErrorSchema } from "@pluggableharness/protocol/model";

export type ErrorCategory =
  | "context_length_exceeded"
  | "rate_limited"
  | "overloaded"
  | "auth_error"
  | "invalid_request"
  | "content_filtered"
  | "unknown";

const PROTO_CATEGORY: Record<ErrorCategory, ModelErrorCategory> = {
  context_length_exceeded: ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
  rate_limited: ModelErrorCategory.RATE_LIMITED,
  overloaded: ModelErrorCategory.OVERLOADED,
  auth_error: ModelErrorCategory.AUTH_ERROR,
  invalid_request: ModelErrorCategory.INVALID_REQUEST,
  content_filtered: ModelErrorCategory.CONTENT_FILTERED,
  unknown: ModelErrorCategory.UNKNOWN,
};

/** Retryability when nothing more specific is known (model/conformance.md#error-taxonomy). */
export const DEFAULT_RETRYABLE: Readonly<Record<ErrorCategory, boolean>> = {
  context_length_exceeded: false,
  rate_limited: true,
  overloaded: true,
  auth_error: false,
  invalid_request: false,
  content_filtered: false,
  unknown: false,
};

/** gRPC status codes (grpc/codes) for each category; cancellation is CANCELLED (1). */
export const GRPC_CODE: Readonly<Record<ErrorCategory, number>> = {
  context_length_exceeded: 8, // RESOURCE_EXHAUSTED
  rate_limited: 8, // RESOURCE_EXHAUSTED, with the ModelError as detail
  overloaded: 14, // UNAVAILABLE
  auth_error: 16, // UNAUTHENTICATED
  invalid_request: 3, // INVALID_ARGUMENT
  content_filtered: 9, // FAILED_PRECONDITION
  unknown: 13, // INTERNAL, never UNKNOWN
};
export const GRPC_CANCELLED = 1;

export function grpcCodeFor(category: ErrorCategory): number {
  return GRPC_CODE[category];
}

export interface FailureInit {
  retryable?: boolean;
  retryAfterSeconds?: number | undefined;
  vendorCode?: string | undefined;
  vendorBody?: string | undefined;
  httpStatus?: number | undefined;
  /** The vendor does not serve the requested model id (ModelError.model_not_found). */
  modelNotFound?: boolean | undefined;
}

/** Largest vendor body kept on an error; enough to debug, small enough to log. */
export const MAX_VENDOR_BODY = 4096;

/** A classified model failure. Adapters throw it; the scaffold turns it into an `error` event. */
export class ModelFailure extends Error {
  readonly category: ErrorCategory;
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | undefined;
  readonly vendorCode: string | undefined;
  readonly vendorBody: string | undefined;
  readonly httpStatus: number | undefined;
  readonly modelNotFound: boolean;
  constructor(category: ErrorCategory, message: string, init: FailureInit = {}) {
    super(message);
    this.name = "ModelFailure";
    this.category = category;
    this.retryable = init.retryable ?? DEFAULT_RETRYABLE[category];
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.vendorCode = init.vendorCode;
    this.vendorBody =
      init.vendorBody !== undefined && init.vendorBody.length > MAX_VENDOR_BODY
        ? `${init.vendorBody.slice(0, MAX_VENDOR_BODY)}…`
        : init.vendorBody;
    this.httpStatus = init.httpStatus;
    this.modelNotFound = init.modelNotFound === true;
  }

  get grpcCode(): number {
    return GRPC_CODE[this.category];
  }

  /** The wire ModelError, with every text passed through `redact` (secrets never leave). */
  toProto(redact: (text: string) => string = (t) => t): ModelError {
    return create(ModelErrorSchema, {
      category: PROTO_CATEGORY[this.category],
      message: redact(this.message),
      retryable: this.retryable,
      ...(this.retryAfterSeconds !== undefined ? { retryAfterSeconds: this.retryAfterSeconds } : {}),
      ...(this.vendorCode !== undefined ? { vendorCode: redact(this.vendorCode) } : {}),
      ...(this.vendorBody !== undefined ? { vendorBody: redact(this.vendorBody) } : {}),
      ...(this.httpStatus !== undefined ? { httpStatus: this.httpStatus } : {}),
      ...(this.modelNotFound ? { modelNotFound: true } : {}),
    });
  }
}

/** What an adapter knows about a failed HTTP answer; only `status` is required. */
export interface HttpFailure {
  status: number;
  headers?: Headers | undefined;
  /** The raw response body. */
  body?: string | undefined;
  /** The vendor's own error type or code (e.g. "overloaded_error", "RESOURCE_EXHAUSTED"). */
  vendorCode?: string | undefined;
  /** The vendor's human-readable message. */
  message?: string | undefined;
  /** A retry delay the vendor put in its body; headers are read here as well. */
  bodyRetryAfterSeconds?: number | undefined;
  /** Vendor-specific verdicts that override the status-based category. */
  contextLength?: boolean;
  contentFiltered?: boolean;
  /**
   * The vendor says it does not serve the requested model: invalid_request, never retried,
   * flagged so the kernel moves on to the next candidate of the chain.
   */
  modelNotFound?: boolean;
}

/**
 * Status-based classification shared by every vendor. The rules (docs/decisions/vendors.md): 429 rate_limited; 408, 409, 5xx and 529 overloaded; 401, 402, 403
 * auth_error (a human must fix credentials or billing); 413 context_length_exceeded (the
 * request must shrink); any other 4xx invalid_request; anything else unknown. Vendor verdicts
 * (context length, content filter) win. `x-should-retry` is honoured as the vendor's explicit
 * word on retryability; retry-after comes from headers, else from the body.
 */
export function classifyHttpFailure(f: HttpFailure): ModelFailure {
  const category = ((): ErrorCategory => {
    if (f.contextLength) return "context_length_exceeded";
    if (f.contentFiltered) return "content_filtered";
    if (f.modelNotFound) return "invalid_request";
    const s = f.status;
    if (s === 429) return "rate_limited";
    if (s === 408 || s === 409 || s >= 500) return "overloaded";
    if (s === 401 || s === 402 || s === 403) return "auth_error";
    if (s === 413) return "context_length_exceeded";
    if (s >= 400 && s < 500) return "invalid_request";
    return "unknown";
  })();
  const shouldRetry = f.headers?.get("x-should-retry");
  // A request bigger than the per-minute budget itself never fits, however long one waits.
  const tooLarge = category === "rate_limited" && exceedsRateLimit(f.message);
  const retryable =
    f.modelNotFound || tooLarge
      ? false
      : shouldRetry === "true"
        ? true
        : shouldRetry === "false"
          ? false
          : DEFAULT_RETRYABLE[category];
  const retryAfterSeconds = retryAfterFromHeaders(f.headers) ?? f.bodyRetryAfterSeconds;
  const what = f.message ? `: ${f.message}` : "";
  const why = tooLarge
    ? " (the request alone is larger than the rate limit allows, so it is not retried)"
    : "";
  return new ModelFailure(category, `vendor answered HTTP ${f.status}${what}${why}`, {
    retryable,
    retryAfterSeconds,
    vendorCode: f.vendorCode,
    vendorBody: f.body,
    httpStatus: f.status,
    modelNotFound: f.modelNotFound,
  });
}

/**
 * Whether an error answer says the requested model does not exist (or is not available to
 * this key): a 404 that names the model, a `model_not_found` code, or the wordings the
 * compatible servers use. Vendors that answer something else entirely pass their own verdict.
 */
export function saysModelNotFound(
  status: number,
  code: string | undefined,
  message: string | undefined,
): boolean {
  if (code === "model_not_found") return true;
  const m = message ?? "";
  if (status === 404 && /\bmodel\b/i.test(m)) return true;
  return /\bmodel\b.*\b(does not exist|not found|is not found)\b|^invalid model\b/i.test(m);
}

/**
 * The vendor's retry hint from headers: `retry-after-ms` (milliseconds), else `retry-after`
 * (seconds or an HTTP date, relative to `now`). Undefined when absent or unreadable.
 */
export function retryAfterFromHeaders(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms) / 1000;
  const ra = headers.get("retry-after");
  if (ra === null) return undefined;
  const text = ra.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, (date - now) / 1000);
}

/**
 * Seconds in a duration string: protobuf JSON durations ("34.4s") and Go durations
 * ("1m30s", "120ms", "6m0s", "1h2m3.5s"). Undefined when the text is neither.
 */
export function parseDurationSeconds(text: string): number | undefined {
  const t = text.trim();
  if (t === "0") return 0;
  const re = /(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/y;
  let total = 0;
  let matched = false;
  re.lastIndex = 0;
  while (re.lastIndex < t.length) {
    const m = re.exec(t);
    if (!m) return undefined;
    matched = true;
    const n = Number(m[1]);
    const unit = m[2];
    total +=
      unit === "h"
        ? n * 3600
        : unit === "m"
          ? n * 60
          : unit === "s"
            ? n
            : unit === "ms"
              ? n / 1e3
              : unit === "ns"
                ? n / 1e9
                : n / 1e6;
  }
  return matched ? total : undefined;
}

/**
 * Whether a rate-limit message says the request by itself exceeds the budget (OpenAI's and
 * compatible servers' "Request too large for … on tokens per min (TPM): Limit 30000,
 * Requested 36055"), rather than that the budget is used up for now.
 */
export function exceedsRateLimit(message: string | undefined): boolean {
  if (!message) return false;
  if (/request too large/i.test(message)) return true;
  const m = /\blimit:?\s*([\d,]+)\s*,\s*requested:?\s*([\d,]+)/i.exec(message);
  if (!m) return false;
  const n = (t: string) => Number(t.replaceAll(",", ""));
  return n(m[2]!) > n(m[1]!);
}

/**
 * No connection at all: refused, no such host, no route. Waiting does not bring a server up,
 * so it is not retried (another candidate may still serve); the message says where.
 */
export function unreachable(origin: string, code: string): ModelFailure {
  const why: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    EAI_NONAME: "host not found",
    EHOSTUNREACH: "no route to host",
    ENETUNREACH: "network unreachable",
  };
  return new ModelFailure("overloaded", `cannot reach ${origin} (${why[code] ?? code})`, {
    retryable: false,
    vendorCode: "unreachable",
  });
}

/** The connection-level error codes that mean "nothing is listening there". */
export const UNREACHABLE_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);

/**
 * A 200 answer that is not what the API sends: an HTML page (a proxy, a captive portal, a
 * wrong base_url), an empty body, bytes that hold no event. Retrying gets the same answer,
 * so it is not retried; the first bytes are kept as the vendor body.
 */
export function invalidResponse(what: string, excerpt?: string): ModelFailure {
  return new ModelFailure("unknown", `invalid response: ${what}`, {
    retryable: false,
    vendorCode: "invalid_response",
    httpStatus: 200,
    ...(excerpt ? { vendorBody: excerpt.slice(0, 512) } : {}),
  });
}

/** The error code of a failed fetch (undici puts the socket's in `cause`). */
export function causeCode(err: unknown): string | undefined {
  let e: unknown = err;
  for (let i = 0; i < 4 && e && typeof e === "object"; i++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A dropped connection or unreadable stream: transient, worth retrying. */
export function transportFailure(what: string, cause?: unknown): ModelFailure {
  const detail = cause instanceof Error ? describeCause(cause) : cause === undefined ? "" : String(cause);
  return new ModelFailure("overloaded", `${what}${detail ? ` (${detail})` : ""}`, {
    retryable: true,
    vendorCode: "transport_error",
  });
}

/** A frame the adapter cannot parse: the vendor broke its own format. */
export function malformedFrame(what: string, frame: string): ModelFailure {
  return new ModelFailure("unknown", `malformed frame from the vendor: ${what}`, {
    retryable: false,
    vendorCode: "malformed_frame",
    vendorBody: frame,
  });
}

function describeCause(err: Error): string {
  const cause = (err as { cause?: unknown }).cause;
  const code = cause && typeof cause === "object" ? (cause as { code?: unknown }).code : undefined;
  const base = err.message || err.name;
  return typeof code === "string" ? `${base}: ${code}` : base;
}

/** True for the errors an aborted signal produces (fetch, body reads, our own checks). */
export function isAbortError(err: unknown, signal?: AbortSignal): boolean {
  if (signal?.aborted && (err === signal.reason || err instanceof DOMException)) return true;
  return err instanceof Error && (err.name === "AbortError" || err.name === "CancelledError");
}
