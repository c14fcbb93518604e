// Ready-made script entries for the situations provider tests and benchmarks need. Each returns
// vendor-neutral entries; the server that receives the request renders them in its own format.
import type {
  ErrorResponse,
  RawResponse,
  ScriptEntry,
  TextResponse,
  ToolCallSpec,
  ToolCallsResponse,
  TurnOptions,
  TurnResponse,
} from "./types.ts";

/** Drops keys whose value is undefined so they cannot override a builder's defaults. */
function defined<T extends object>(opts: T): T {
  return Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) as T;
}

const SAMPLE_SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsFAKEsignature==";

/** A plain text answer split into `chunks` deltas. */
export function text(
  content = "Hello! How can I help?",
  opts: TurnOptions & { chunks?: number } = {},
): TextResponse {
  return { kind: "text", text: content, chunks: opts.chunks ?? 4, ...defined(opts) };
}

/** One tool call whose argument JSON arrives in many fragments (whole-call vendors send it at once). */
export function toolCallFragments(
  call: Partial<ToolCallSpec> = {},
  opts: TurnOptions & { text?: string } = {},
): ToolCallsResponse {
  return {
    kind: "tool_calls",
    calls: [
      {
        name: call.name ?? "get_weather",
        args: call.args ?? { location: "San Francisco, CA", unit: "fahrenheit" },
        fragments: call.fragments ?? 12,
        ...defined(call),
      },
    ],
    ...defined(opts),
  };
}

/** Several tool calls in one turn. */
export function parallelToolCalls(
  calls?: ToolCallSpec[],
  opts: TurnOptions & { text?: string } = {},
): ToolCallsResponse {
  return {
    kind: "tool_calls",
    calls: calls ?? [
      { name: "read_file", args: { path: "a.txt" }, fragments: 3 },
      { name: "read_file", args: { path: "b.txt" }, fragments: 3 },
      { name: "list_dir", args: { path: "." }, fragments: 2 },
    ],
    ...defined(opts),
  };
}

/** Thinking (with a signature) followed by text. */
export function thinking(
  opts: TurnOptions & { thinking?: string; signature?: string; text?: string; chunks?: number } = {},
): TurnResponse {
  const { thinking: thought, signature, text: answer, chunks, ...rest } = opts;
  return {
    kind: "turn",
    blocks: [
      {
        type: "thinking",
        text: thought ?? "Let me work through this step by step. 27 * 453 = 27 * 400 + 27 * 53.",
        signature: signature ?? SAMPLE_SIGNATURE,
        chunks: chunks ?? 3,
      },
      { type: "text", text: answer ?? "27 * 453 = 12,231", chunks: chunks ?? 3 },
    ],
    ...defined(rest),
  };
}

/** Redacted (encrypted) thinking followed by text. */
export function redactedThinking(opts: TurnOptions & { data?: string; text?: string } = {}): TurnResponse {
  const { data, text: answer, ...rest } = opts;
  return {
    kind: "turn",
    blocks: [
      {
        type: "redacted_thinking",
        data: data ?? "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPREDACTED",
      },
      { type: "text", text: answer ?? "Done.", chunks: 2 },
    ],
    ...defined(rest),
  };
}

/** Text whose usage shows a prompt-cache read and write. */
export function cacheHit(
  opts: TurnOptions & { cacheReadTokens?: number; cacheWriteTokens?: number; inputTokens?: number } = {},
): TextResponse {
  const { cacheReadTokens, cacheWriteTokens, inputTokens, ...rest } = opts;
  return {
    kind: "text",
    text: "Cached answer.",
    chunks: 2,
    usage: {
      inputTokens: inputTokens ?? 12,
      cacheReadTokens: cacheReadTokens ?? 2048,
      cacheWriteTokens: cacheWriteTokens ?? 512,
      outputTokens: 5,
    },
    ...defined(rest),
  };
}

/** A refusal: Anthropic `refusal` with stop_details, OpenAI refusal content, Gemini SAFETY. */
export function refusal(opts: TurnOptions & { explanation?: string; category?: string } = {}): TurnResponse {
  const { explanation, category, ...rest } = opts;
  return {
    kind: "turn",
    blocks: [],
    stopReason: "refusal",
    refusal: { category: category ?? "cyber", explanation: explanation ?? "I can't help with that request." },
    ...defined(rest),
  };
}

/** Text that stopped on a stop sequence. */
export function stopSequence(sequence = "###", opts: TurnOptions = {}): TextResponse {
  return {
    kind: "text",
    text: "Partial answer ",
    chunks: 2,
    stopReason: "stop_sequence",
    stopSequence: sequence,
    ...defined(opts),
  };
}

/** Text cut off by the output limit. */
export function maxTokens(opts: TurnOptions = {}): TextResponse {
  return { kind: "text", text: "This answer was cut", chunks: 3, stopReason: "max_tokens", ...defined(opts) };
}

/** 429 with `retry-after` (and RetryInfo in Gemini's body, "try again in Ns" in OpenAI's). */
export function rateLimited(retryAfterSeconds = 2, opts: Partial<ErrorResponse> = {}): ErrorResponse {
  return { kind: "error", status: 429, retryAfterSeconds, ...defined(opts) };
}

/** OpenAI's quota exhaustion: a 429 without retry-after that clients must not retry. */
export function insufficientQuota(opts: Partial<ErrorResponse> = {}): ErrorResponse {
  return {
    kind: "error",
    status: 429,
    errorType: "insufficient_quota",
    code: "insufficient_quota",
    message: "You exceeded your current quota, please check your plan and billing details.",
    ...defined(opts),
  };
}

/** Anthropic's 529 overloaded_error (other vendors render status 529 with their generic body). */
export function overloaded(opts: Partial<ErrorResponse> = {}): ErrorResponse {
  return {
    kind: "error",
    status: 529,
    errorType: "overloaded_error",
    message: "Overloaded",
    ...defined(opts),
  };
}

/** A 5xx answer with the vendor's server-error body. */
export function serverError(status = 500, opts: Partial<ErrorResponse> = {}): ErrorResponse {
  return { kind: "error", status, ...defined(opts) };
}

/** A 200 stream that reports an in-band error after `afterFrames` frames. */
export function midStreamError(
  opts: TurnOptions & { afterFrames?: number; errorType?: string; code?: string; message?: string } = {},
): TextResponse {
  const { afterFrames, errorType, code, message, ...rest } = opts;
  return {
    kind: "text",
    text: "This stream will fail partway through.",
    chunks: 6,
    interrupt: { type: "error", afterFrames: afterFrames ?? 4, errorType, code, message },
    ...defined(rest),
  };
}

/** The socket is destroyed after `afterFrames` frames of a 200 stream. */
export function droppedConnection(opts: TurnOptions & { afterFrames?: number } = {}): TextResponse {
  const { afterFrames, ...rest } = opts;
  return {
    kind: "text",
    text: "This stream will be cut off.",
    chunks: 6,
    interrupt: { type: "drop", afterFrames: afterFrames ?? 4 },
    ...defined(rest),
  };
}

/** A frame whose JSON is broken, inserted after `afterFrames` frames. */
export function malformedFrame(
  opts: TurnOptions & { afterFrames?: number; bytes?: string; thenEnd?: boolean } = {},
): TextResponse {
  const { afterFrames, bytes, thenEnd, ...rest } = opts;
  return {
    kind: "text",
    text: "Before and after a broken frame.",
    chunks: 4,
    interrupt: { type: "malformed", afterFrames: afterFrames ?? 3, bytes, thenEnd },
    ...defined(rest),
  };
}

/** Stops sending after `afterFrames` frames without closing, until released or the client gives up. */
export function stall(
  opts: TurnOptions & { afterFrames?: number; onRelease?: "resume" | "end" | "drop" } = {},
): TextResponse {
  const { afterFrames, onRelease, ...rest } = opts;
  return {
    kind: "text",
    text: "This stream goes quiet for a while.",
    chunks: 6,
    interrupt: { type: "stall", afterFrames: afterFrames ?? 3, onRelease },
    ...defined(rest),
  };
}

/** A long text stream of exactly `deltas` text deltas (benchmarks ask for 20,000+). */
export function longStream(deltas = 20_000, opts: TurnOptions = {}): TextResponse {
  const pieces = new Array<string>(deltas);
  for (let i = 0; i < deltas; i++) pieces[i] = `tok${i} `;
  return { kind: "text", text: "", deltas: pieces, usage: { outputTokens: deltas }, ...defined(opts) };
}

/** The connection is closed before any status line. */
export function hangup(): ScriptEntry {
  return { kind: "hangup" };
}

/** Nothing is sent at all, not even a status line, until released (then the socket closes) or the client gives up. */
export function stallBeforeHeaders(): ScriptEntry {
  return { kind: "stall_before_headers" };
}

/** The connection is reset partway through a 200 stream (an alias of droppedConnection). */
export function resetMidStream(opts: TurnOptions & { afterFrames?: number } = {}): TextResponse {
  return droppedConnection(opts);
}

/** A 200 answer that is an HTML page (a proxy's or captive portal's), not the API's answer. */
export function htmlOk(): RawResponse {
  return {
    kind: "raw",
    status: 200,
    headers: { "content-type": "text/html; charset=utf-8" },
    body: "<!DOCTYPE html><html><head><title>Sign in</title></head><body><h1>Please sign in to continue</h1></body></html>",
  };
}

/** A 200 answer with an event-stream content type and an empty body. */
export function emptyOk(): RawResponse {
  return { kind: "raw", status: 200, headers: { "content-type": "text/event-stream" }, body: "" };
}

/** A 200 answer with an event-stream content type whose bytes hold no event at all. */
export function garbageOk(bytes = "\u0000\u00ff garbage, not an event stream \u00e9\n\r\n"): RawResponse {
  return { kind: "raw", status: 200, headers: { "content-type": "text/event-stream" }, body: bytes };
}

/** Exact bytes, for anything the declarative forms cannot say. */
export function raw(spec: Omit<RawResponse, "kind">): RawResponse {
  return { kind: "raw", ...spec };
}

/** A two-step agent exchange: a tool call, then (after the tool result) a text answer. */
export function toolRoundTrip(
  call: Partial<ToolCallSpec> = {},
  answer = "The weather is sunny.",
): ScriptEntry[] {
  return [toolCallFragments(call), text(answer)];
}
