// Public types of the fake vendors: vendors, scripts, delivery options and recorded requests.
//
// A script entry is vendor-neutral. The server that receives the request renders it into that
// vendor's exact frames, so one script can drive an Anthropic, OpenAI or Gemini client alike.

/** A vendor dialect the fake can speak. The chat-completions dialects differ in small, real ways. */
export type VendorId =
  | "anthropic" // POST /v1/messages (SSE or JSON), /v1/messages/count_tokens
  | "openai-responses" // POST /v1/responses (SSE or JSON), /v1/responses/input_tokens
  | "openai-chat" // POST /v1/chat/completions, OpenAI's own dialect
  | "gemini" // POST /v1beta/models/{model}:streamGenerateContent | :generateContent | :countTokens
  | "xai" // /v1/chat/completions and /v1/responses in xAI's dialect
  | "ollama" // Ollama's OpenAI-compatible /v1/chat/completions
  | "vllm"
  | "lmstudio"
  | "mistral"
  | "deepseek"; // DeepSeek's /chat/completions: reasoning_content, which tool loops must echo

/** The endpoint family a request was routed to. */
export type Endpoint = "messages" | "responses" | "chat" | "gemini" | "count_tokens" | "other";

/** Vendor-neutral stop reasons; each renderer maps them to the vendor's own value. */
export type StopReason =
  | "end_turn"
  | "tool_use"
  | "max_tokens"
  | "stop_sequence"
  | "refusal"
  | "pause_turn"
  | "content_filter";

/**
 * Token counts in one neutral convention; renderers convert to each vendor's accounting:
 * - `inputTokens` is input that was neither read from nor written to a cache;
 * - `outputTokens` is visible output, `reasoningTokens` the hidden/thinking part, counted apart.
 */
export interface UsageSpec {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  /** Cache writes with the default (5 minute) lifetime. */
  cacheWriteTokens?: number;
  /** Anthropic only: cache writes with the 1 hour lifetime. */
  cacheWrite1hTokens?: number;
  reasoningTokens?: number;
  /** xAI only: exact cost in ticks (1 USD = 10^10 ticks). Defaults to 0. */
  costInUsdTicks?: number;
  /** Anthropic `service_tier`, OpenAI `service_tier`, Gemini `serviceTier` where rendered. */
  serviceTier?: string;
}

export interface RateLimitWindow {
  limit: number;
  remaining: number;
  /** Seconds until the window resets (Anthropic renders an RFC 3339 instant, OpenAI a Go duration). */
  resetSeconds: number;
}

/** Rate-limit budgets rendered as headers in the vendor's own format (none for Gemini and most local servers). */
export interface RateLimitSpec {
  requests?: RateLimitWindow;
  tokens?: RateLimitWindow;
  /** Anthropic only. */
  inputTokens?: RateLimitWindow;
  /** Anthropic only. */
  outputTokens?: RateLimitWindow;
  /** Anthropic only: Priority Tier capacity (`anthropic-priority-input-tokens-*`). */
  priorityInputTokens?: RateLimitWindow;
  /** Anthropic only: Priority Tier capacity (`anthropic-priority-output-tokens-*`). */
  priorityOutputTokens?: RateLimitWindow;
}

/** Options that control how (not what) a response is delivered. */
export interface DeliveryOptions {
  /** Extra or overriding response headers (lower-case names). */
  headers?: Record<string, string>;
  /** Rate-limit headers for this response; `false` sends none. Defaults to the server's. */
  rateLimits?: RateLimitSpec | false;
  /** Delay between frames; 0 (default) writes frames in large batches. */
  chunkDelayMs?: number;
  /** Delay before the status line and headers are sent. */
  latencyMs?: number;
  /** Cut the byte stream into writes of this many bytes (may split UTF-8 sequences and frames). */
  splitBytes?: number;
  /** Something that goes wrong after some frames; see {@link Interrupt}. */
  interrupt?: Interrupt;
}

/** A fault injected into a 200 response after `afterFrames` complete frames were written. */
export type Interrupt =
  | {
      /** The vendor's in-band error (Anthropic `event: error`, Responses `error` + `response.failed`, ...), then the end. */
      type: "error";
      afterFrames: number;
      errorType?: string;
      code?: string;
      message?: string;
    }
  /** The socket is destroyed without finishing the chunked body. */
  | { type: "drop"; afterFrames: number }
  /**
   * Writing stops; the connection stays open until the client gives up, the test calls
   * `fake.releaseStalls()` (then `onRelease` decides: resume the stream, end it, or drop it), or close().
   */
  | { type: "stall"; afterFrames: number; onRelease?: "resume" | "end" | "drop" }
  /** A frame that is not valid JSON (or the given bytes); the stream continues unless `thenEnd`. */
  | { type: "malformed"; afterFrames: number; bytes?: string; thenEnd?: boolean };

/** How a tool call is produced. `args` objects are JSON-encoded; a string is used verbatim as the JSON text. */
export interface ToolCallSpec {
  name: string;
  args?: unknown;
  /** The call id; a vendor-shaped id is generated when absent. */
  id?: string;
  /** Split the argument JSON into this many fragments (vendors that stream arguments). Default 1. */
  fragments?: number;
  /** Exact argument fragments; overrides `fragments` and `args`. */
  argFragments?: string[];
  /** Gemini only: the `thoughtSignature` carried on this functionCall part. */
  signature?: string;
}

export type BlockSpec =
  | {
      type: "text";
      text: string;
      chunks?: number;
      deltas?: string[];
      /** OpenAI Responses only: the output message's `phase` (gpt-5.3-codex and later). */
      phase?: "commentary" | "final_answer";
    }
  | {
      /** Anthropic thinking block; OpenAI reasoning summary; Gemini thought part; chat `reasoning_content`. */
      type: "thinking";
      text: string;
      /** Anthropic `signature`; Responses `encrypted_content`; Gemini `thoughtSignature`. */
      signature?: string;
      chunks?: number;
      deltas?: string[];
    }
  | {
      /** Anthropic `redacted_thinking`; Responses reasoning item with only `encrypted_content`; Gemini a bare signature. */
      type: "redacted_thinking";
      data: string;
    }
  | ({ type: "tool_call" } & ToolCallSpec);

/** What a successful turn says and how it ends. */
export interface TurnOptions extends DeliveryOptions {
  /** Defaults to `tool_use` when the turn has a tool call, else `end_turn`. */
  stopReason?: StopReason;
  /** Written verbatim as the vendor's stop/finish value, bypassing the mapping. */
  vendorStopReason?: string;
  /** The matched stop sequence (Anthropic `stop_sequence`). */
  stopSequence?: string;
  /** Refusal details (Anthropic `stop_details`; OpenAI refusal text = `explanation`). */
  refusal?: { category?: string; explanation?: string };
  usage?: UsageSpec;
  /** The model the response claims; defaults to the requested model. */
  model?: string;
  /** The response/message id; a vendor-shaped id is generated when absent. */
  id?: string;
  /** Force streaming or not; defaults to what the request asked for. */
  stream?: boolean;
}

export interface TextResponse extends TurnOptions {
  kind: "text";
  text: string;
  /** Number of deltas the text is split into (default 1). */
  chunks?: number;
  /** Exact deltas; overrides `text`/`chunks`. */
  deltas?: string[];
}

export interface ToolCallsResponse extends TurnOptions {
  kind: "tool_calls";
  /** Optional text before the calls. */
  text?: string;
  calls: ToolCallSpec[];
}

export interface TurnResponse extends TurnOptions {
  kind: "turn";
  blocks: BlockSpec[];
}

/** A non-200 answer with the vendor's error body. */
export interface ErrorResponse {
  kind: "error";
  status: number;
  /** Vendor error type (Anthropic `error.type`, OpenAI `error.type`, Gemini `error.status`); defaults by status. */
  errorType?: string;
  /** OpenAI-style `error.code`. */
  code?: string;
  message?: string;
  /** Sent as `retry-after` (all but Gemini) and in the body where the vendor does (Gemini RetryInfo, OpenAI text). */
  retryAfterSeconds?: number;
  /** Sent as `retry-after-ms`. */
  retryAfterMs?: number;
  /** Sent as `x-should-retry: true|false`. */
  shouldRetry?: boolean;
  /** Replaces the generated body (objects are JSON-encoded). */
  body?: unknown;
  headers?: Record<string, string>;
  rateLimits?: RateLimitSpec | false;
  latencyMs?: number;
}

/** Exact bytes: nothing is added except what node:http itself adds (date, transfer-encoding). */
export interface RawResponse {
  kind: "raw";
  status?: number;
  headers?: Record<string, string>;
  /** A complete body. */
  body?: string | Uint8Array;
  /** Or frames written in order (subject to chunkDelayMs, splitBytes and drop/stall interrupts). */
  frames?: Array<string | Uint8Array>;
  chunkDelayMs?: number;
  latencyMs?: number;
  splitBytes?: number;
  interrupt?: Interrupt;
}

/** The socket is destroyed as soon as the request has been read: no status line at all. */
export interface HangupResponse {
  kind: "hangup";
}

/**
 * The request is read and then nothing at all is sent, not even a status line, until the
 * client gives up, `fake.releaseStalls()` is called (the socket is then destroyed), or close().
 */
export interface StallBeforeHeadersResponse {
  kind: "stall_before_headers";
}

export type ScriptedResponse =
  | TextResponse
  | ToolCallsResponse
  | TurnResponse
  | ErrorResponse
  | RawResponse
  | HangupResponse
  | StallBeforeHeadersResponse;

export type ScriptFn = (
  request: RecordedRequest,
  index: number,
) => ScriptedResponse | Promise<ScriptedResponse>;

/** One queue entry: a response, or a function that picks one from the recorded request. */
export type ScriptEntry =
  | ScriptedResponse
  | ((request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

/** A queue (each model request consumes the next entry) or one function answering every request. */
export type Script = ScriptEntry[] | ScriptFn;

/** Why a built-in or custom validator refused a request; rendered as the vendor's error body. */
export interface Rejection {
  status?: number;
  message: string;
  errorType?: string;
  code?: string;
  param?: string;
}

export type Validator = (request: RecordedRequest) => Rejection | undefined;

export interface RecordedRequest {
  /** Arrival order among all requests this server received (0-based). */
  seq: number;
  vendor: VendorId | undefined;
  endpoint: Endpoint;
  method: string;
  /** Path without the query string (and without a vendor prefix such as `/xai` on a combined server). */
  path: string;
  /** The raw request target as received. */
  url: string;
  query: Record<string, string>;
  /** Raw header values (the API key is in here unmasked; use maskedHeaders() to print). */
  headers: Record<string, string | string[] | undefined>;
  /** The API key the vendor's client sent (x-api-key, Bearer token, x-goog-api-key or ?key=). */
  apiKey: string | undefined;
  /** The body bytes as received (still compressed if the client sent content-encoding). */
  rawBody: Buffer;
  /** The body as text, decoded from gzip/deflate/br/zstd when needed. */
  bodyText: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  json: unknown;
  /** Whether the request asked for a stream. */
  stream: boolean;
  /** The requested model (body `model`, or the path for Gemini). */
  model: string | undefined;
  /** When the first byte of this request arrived. */
  receivedAt: { hrtime: bigint; wallMs: number };
  /** When the whole body had arrived. */
  bodyCompleteAt: { hrtime: bigint; wallMs: number };
  /** Set when a validator (or the API key check) refused the request. */
  rejected?: Rejection;
  /** Set when the request got the "script exhausted" error. */
  exhausted?: boolean;
  /** With `promptCache` on: what the vendor would bill this request, in the neutral convention. */
  billed?: BilledUsage;
}

/** A request's bill under prompt-cache billing (the counts the answer's usage reports). */
export interface BilledUsage {
  /** Input neither read from nor written to a cache. */
  inputTokens: number;
  cacheReadTokens: number;
  /** Writes with the default lifetime (Anthropic 5 minutes, OpenAI 30 minutes). */
  cacheWriteTokens: number;
  /** Writes with the long lifetime (Anthropic 1 hour, OpenAI 12 hours). */
  cacheWriteLongTokens: number;
  /** Every input token of the request. */
  totalTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}
