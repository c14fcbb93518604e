// Response headers and error bodies shared by OpenAI's two APIs and the OpenAI-compatible dialects.
import type { ErrorLike } from "./common.ts";

export function openaiMetaHeaders(processingMs: number): Record<string, string> {
  return {
    "openai-organization": "fake-org",
    "openai-processing-ms": String(processingMs),
    "openai-version": "2020-10-01",
  };
}

const OPENAI_TYPES: Record<number, [type: string, code: string | null]> = {
  400: ["invalid_request_error", null],
  401: ["invalid_request_error", "invalid_api_key"],
  403: ["invalid_request_error", "unsupported_country_region_territory"],
  404: ["invalid_request_error", "model_not_found"],
  429: ["tokens", "rate_limit_exceeded"],
  500: ["server_error", null],
  503: ["server_error", null],
};

const OPENAI_MESSAGES: Record<number, string> = {
  400: "Invalid request.",
  401: "Incorrect API key provided.",
  403: "Country, region, or territory not supported",
  404: "The model does not exist or you do not have access to it.",
  500: "The server had an error while processing your request. Sorry about that!",
  503: "The engine is currently overloaded, please try again later.",
};

function rateLimitMessage(retryAfterSeconds: number | undefined): string {
  const wait = retryAfterSeconds === undefined ? "" : ` Please try again in ${retryAfterSeconds}s.`;
  return (
    "Rate limit reached for fake-model in organization org-fake on tokens per min (TPM): " +
    `Limit 30000, Used 29000, Requested 2000.${wait}`
  );
}

/** `{"error":{"message","type","param","code"}}` as OpenAI (and xAI's compatible API) answer. */
export function openaiErrorBody(error: ErrorLike): unknown {
  const [type, code] = OPENAI_TYPES[error.status] ?? [
    error.status >= 500 ? "server_error" : "invalid_request_error",
    null,
  ];
  const message =
    error.message ??
    (error.status === 429
      ? rateLimitMessage(error.retryAfterSeconds)
      : (OPENAI_MESSAGES[error.status] ?? "Error"));
  return {
    error: {
      message,
      type: error.errorType ?? type,
      param: error.param ?? null,
      code: error.code ?? code,
    },
  };
}

/** Ollama's OpenAI-compatible layer: the same shape with its own type names. */
export function ollamaErrorBody(error: ErrorLike): unknown {
  const type =
    error.errorType ??
    (error.status === 400 ? "invalid_request_error" : error.status === 404 ? "not_found_error" : "api_error");
  return {
    error: { message: error.message ?? "error", type, param: error.param ?? null, code: error.code ?? null },
  };
}

/** Mistral's flat error object. */
export function mistralErrorBody(error: ErrorLike): unknown {
  const type =
    error.errorType ??
    (error.status === 429
      ? "rate_limited"
      : error.status >= 500
        ? "internal_server_error"
        : "invalid_request_error");
  return {
    object: "error",
    message: error.message ?? (error.status === 429 ? "Requests rate limit exceeded" : "Error"),
    type,
    param: error.param ?? null,
    code: error.code ?? null,
  };
}
