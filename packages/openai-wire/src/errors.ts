// Error bodies of the OpenAI family and their classification into the ModelError taxonomy.
// One parser reads every shape these servers send: OpenAI/xAI/vLLM/LM Studio/Ollama
// `{"error":{message,type,code,param}}`, Ollama's native `{"error":"text"}`, Mistral's flat
// `{"object":"error",message,type,code}` and FastAPI's `{"detail":...}`.
//
// Vendor codes refine the status rules of the kit (docs/decisions/vendors.md):
// - insufficient_quota (a 429 on OpenAI) is a billing problem a human must fix: auth_error,
//   never retried. A plain 429 stays rate_limited.
// - context_length_exceeded, or a message saying the prompt is too long for the context,
//   is context_length_exceeded whatever the status.
// - content_policy_violation / content_filter are content_filtered.
// - "Please try again in 2s" / "in 120ms" in a message is the body's retry hint; headers win.
// - A rejected key is auth_error whatever the status: xAI answers an incorrect key with a
//   400 (`{"code":"invalid-argument","error":"Incorrect API key provided. ..."}`).
// - A model the server does not serve (model_not_found, "model ... does not exist / not
//   found", Mistral's "Invalid model") is invalid_request flagged model_not_found, so the
//   kernel moves on to the next candidate.
import {
  classifyHttpFailure,
  exceedsRateLimit,
  ModelFailure,
  parseDurationSeconds,
  saysModelNotFound,
} from "@pluggableharness/model-kit";
import * as z from "zod/mini";

export interface OpenAIErrorInfo {
  code?: string | undefined;
  type?: string | undefined;
  message?: string | undefined;
  param?: string | undefined;
}

/** A code, type, message or param: text, or a number (a status code); anything else is absent. */
const Field = z.catch(z.optional(z.union([z.string(), z.number()])), undefined);

/** Every error object of the family (header comment); loose, so the rest of the body passes. */
const ErrorBody = z.looseObject({
  code: Field,
  type: Field,
  message: Field,
  param: Field,
  error: z.optional(z.unknown()),
  detail: z.optional(z.unknown()),
});

const text = (v: string | number | undefined): string | undefined =>
  v === undefined || v === "" ? undefined : String(v);

/** How much of a body of unknown shape is kept as the message. */
const UNKNOWN_SHAPE_CHARS = 500;

/**
 * The error fields of a parsed error object (or of an in-band `error` frame). Never throws;
 * a body of a shape none of the servers above sends keeps its JSON text as the message, so
 * what the vendor said reaches the operator.
 */
export function errorInfoOf(value: unknown): OpenAIErrorInfo {
  if (typeof value === "string") return { message: value };
  if (Array.isArray(value)) return value.length > 0 ? { message: jsonText(value) } : {};
  const parsed = ErrorBody.safeParse(value);
  if (!parsed.success) return {};
  const o = parsed.data;
  if (o.error !== undefined && o.error !== null) {
    const inner = errorInfoOf(o.error);
    // Some frames put code/message beside a nested error (Responses `error` events).
    return {
      code: inner.code ?? text(o.code),
      type: inner.type,
      message: inner.message ?? text(o.message),
      param: inner.param,
    };
  }
  if (typeof o.detail === "string") return { message: o.detail };
  // FastAPI's validation list, or a detail object.
  if (o.detail !== undefined && o.detail !== null) return { message: jsonText(o.detail) };
  const info = { code: text(o.code), type: text(o.type), message: text(o.message), param: text(o.param) };
  const known = Object.values(info).some((v) => v !== undefined);
  return known || Object.keys(o).length === 0 ? info : { message: jsonText(o) };
}

function jsonText(value: unknown): string {
  return JSON.stringify(value).slice(0, UNKNOWN_SHAPE_CHARS);
}

/** Parses an error body; text that is not JSON becomes the message. */
export function parseErrorBody(text: string): OpenAIErrorInfo {
  const trimmed = text.trim();
  if (trimmed === "") return {};
  try {
    return errorInfoOf(JSON.parse(trimmed));
  } catch {
    return { message: trimmed.slice(0, 500) };
  }
}

const CONTEXT_MESSAGE =
  /context length|context window|maximum prompt length|prompt is too long|too many tokens|exceeds the context|maximum context/i;
const BAD_KEY = /\b(incorrect|invalid) api key\b|api key not valid/i;
const QUOTA = new Set(["insufficient_quota", "billing_hard_limit_reached", "billing_not_active"]);
const FILTERED = new Set(["content_policy_violation", "content_filter"]);

/** The retry delay a message names ("Please try again in 2s", "in 1m30s", "in 120ms"). */
export function retryHintFromMessage(message: string | undefined): number | undefined {
  if (!message) return undefined;
  const m = /(?:try again|retry) (?:in|after) ((?:\d+(?:\.\d+)?(?:h|ms|m|s))+)/i.exec(message);
  return m ? parseDurationSeconds(m[1]!) : undefined;
}

function isContextLength(info: OpenAIErrorInfo): boolean {
  return info.code === "context_length_exceeded" || CONTEXT_MESSAGE.test(info.message ?? "");
}

/** Classifies a non-2xx answer from an OpenAI-family server. */
export function classifyHttpError(status: number, headers: Headers, body: string): ModelFailure {
  const info = parseErrorBody(body);
  const vendorCode = info.code ?? info.type;
  const badKey = status >= 400 && status < 500 && BAD_KEY.test(info.message ?? "");
  if (badKey || QUOTA.has(info.code ?? "") || QUOTA.has(info.type ?? "")) {
    return new ModelFailure(
      "auth_error",
      `vendor answered HTTP ${status}: ${info.message ?? (badKey ? "the API key was refused" : "quota exhausted")}`,
      {
        retryable: false,
        vendorCode,
        vendorBody: body,
        httpStatus: status,
      },
    );
  }
  return classifyHttpFailure({
    status,
    headers,
    body,
    vendorCode,
    message: info.message,
    bodyRetryAfterSeconds: retryHintFromMessage(info.message),
    contextLength: status >= 400 && status < 500 && status !== 429 && isContextLength(info),
    contentFiltered: FILTERED.has(info.code ?? "") || FILTERED.has(info.type ?? ""),
    // OpenAI, xAI, vLLM: 404 model_not_found; Ollama: 404 'model "x" not found'; Mistral: 400 "Invalid model".
    modelNotFound:
      status >= 400 && status < 500 && status !== 429 && saysModelNotFound(status, info.code, info.message),
  });
}

const RATE = new Set(["rate_limit_exceeded", "rate_limit_error", "rate_limited", "tokens", "requests"]);
const TRANSIENT = new Set([
  "server_error",
  "api_error",
  "internal_error",
  "internal_server_error",
  "overloaded",
  "overloaded_error",
  "server_is_overloaded",
  "slow_down",
  "service_unavailable",
  "timeout",
]);

/**
 * Classifies an error reported inside a 200 stream (Chat `data: {"error":…}`, Responses
 * `error` / `response.failed`, Ollama's error line). There is no status, so the vendor's
 * code decides; an unrecognised code is `unknown` and keeps the raw code and message.
 */
export function classifyStreamError(info: OpenAIErrorInfo, frame?: string): ModelFailure {
  const code = info.code ?? info.type;
  const what = `the vendor reported an error mid-stream${info.message ? `: ${info.message}` : ""}`;
  // In-band: the HTTP answer itself was a 200 (docs/decisions/vendors.md).
  const init = { vendorCode: code, vendorBody: frame, httpStatus: 200 };
  const key = (c: string | undefined) => c ?? "";
  if (QUOTA.has(key(info.code)) || QUOTA.has(key(info.type)))
    return new ModelFailure("auth_error", what, { ...init, retryable: false });
  if (isContextLength(info)) return new ModelFailure("context_length_exceeded", what, init);
  if (RATE.has(key(info.code)) || RATE.has(key(info.type)))
    return new ModelFailure("rate_limited", what, {
      ...init,
      retryAfterSeconds: retryHintFromMessage(info.message),
      // A request larger than the per-minute budget never fits, however long one waits.
      ...(exceedsRateLimit(info.message) ? { retryable: false } : {}),
    });
  if (TRANSIENT.has(key(info.code)) || TRANSIENT.has(key(info.type)))
    return new ModelFailure("overloaded", what, init);
  if (FILTERED.has(key(info.code)) || FILTERED.has(key(info.type)) || info.code === "invalid_prompt")
    return new ModelFailure("content_filtered", what, init);
  if (info.type === "invalid_request_error") return new ModelFailure("invalid_request", what, init);
  return new ModelFailure("unknown", what, { ...init, retryable: false });
}
