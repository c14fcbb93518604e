// Messages API SSE -> StreamEvents, and Anthropic error bodies -> ModelFailure.

import {
  classifyHttpFailure,
  contextWindowStopFailure,
  ev,
  isContextWindowStop,
  ModelFailure,
  parseEventJson,
  type RateLimitHeaderFamily,
  rateLimitsFromHeaders,
  readSse,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
  type UsageInit,
} from "@pluggableharness/model-kit";
import { RateLimitKind, SafetyKind, StopReason } from "@pluggableharness/protocol/model";

type Json = Record<string, unknown>;

const family = (kind: RateLimitKind, name: string): RateLimitHeaderFamily => ({
  kind,
  limit: `anthropic-ratelimit-${name}-limit`,
  remaining: `anthropic-ratelimit-${name}-remaining`,
  reset: `anthropic-ratelimit-${name}-reset`,
  resetFormat: "rfc3339",
  limitName: name,
});

/**
 * Priority Tier capacity (`anthropic-priority-{input,output}-tokens-*`), sent only to an
 * organisation with a Priority Tier commitment, on requests eligible for it.
 */
const priority = (kind: RateLimitKind, name: string): RateLimitHeaderFamily => ({
  kind,
  limit: `anthropic-priority-${name}-limit`,
  remaining: `anthropic-priority-${name}-remaining`,
  reset: `anthropic-priority-${name}-reset`,
  resetFormat: "rfc3339",
  limitId: `priority-${name}`,
  limitName: `priority ${name}`,
});

/** Anthropic's rate-limit header families (requests, tokens, input and output tokens, Priority Tier). */
export const RATE_LIMIT_FAMILIES: RateLimitHeaderFamily[] = [
  family(RateLimitKind.REQUESTS, "requests"),
  family(RateLimitKind.TOKENS, "tokens"),
  family(RateLimitKind.INPUT_TOKENS, "input-tokens"),
  family(RateLimitKind.OUTPUT_TOKENS, "output-tokens"),
  priority(RateLimitKind.INPUT_TOKENS, "input-tokens"),
  priority(RateLimitKind.OUTPUT_TOKENS, "output-tokens"),
];

const CONTEXT_LENGTH =
  /prompt is too long|too many (input )?tokens|context (window|length)|exceeds? (the )?(maximum|context)/i;

/** An Anthropic error (HTTP body or in-band `error` event) as a classified failure. */
export function anthropicFailure(status: number, bodyText: string, headers?: Headers): ModelFailure {
  let type: string | undefined;
  let message: string | undefined;
  try {
    const body = JSON.parse(bodyText) as Json;
    const err = body["error"] as Json | undefined;
    if (err && typeof err === "object") {
      type = typeof err["type"] === "string" ? err["type"] : undefined;
      message = typeof err["message"] === "string" ? err["message"] : undefined;
    }
  } catch {
    // not JSON: classified by status alone
  }
  const effectiveStatus =
    status !== 200
      ? status
      : type === "overloaded_error"
        ? 529
        : type === "rate_limit_error"
          ? 429
          : type === "invalid_request_error"
            ? 400
            : type === "authentication_error"
              ? 401
              : 500;
  const failure = classifyHttpFailure({
    status: effectiveStatus,
    headers,
    body: bodyText,
    vendorCode: type,
    message,
    contextLength:
      type === "request_too_large" ||
      (type === "invalid_request_error" && message !== undefined && CONTEXT_LENGTH.test(message)),
    // An unknown or retired model id: 404 not_found_error "model: <id>".
    modelNotFound: status === 404 && type === "not_found_error" && /^model:/i.test(message ?? ""),
  });
  if (status !== 200) return failure;
  // In-band: the HTTP answer was a 200; the category comes from the error type.
  return new ModelFailure(failure.category, `the stream reported ${type ?? "an error"}: ${message ?? ""}`, {
    retryable: failure.retryable,
    vendorCode: type,
    vendorBody: bodyText,
    httpStatus: 200,
  });
}

const STOP: Record<string, StopReason> = {
  end_turn: StopReason.END_TURN,
  tool_use: StopReason.TOOL_USE,
  max_tokens: StopReason.MAX_TOKENS,
  stop_sequence: StopReason.STOP_SEQUENCE,
  refusal: StopReason.REFUSAL,
  // A server-tool loop paused; nothing this provider sends triggers it, it ends the turn.
  pause_turn: StopReason.END_TURN,
  // model_context_window_exceeded is no stop: it becomes a context_length_exceeded error.
};

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

interface UsageState {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  components: Map<string, number>;
}

function mergeUsage(state: UsageState, u: Json | undefined): void {
  if (!u) return;
  // Counts are cumulative: the latest value wins, nothing is summed.
  state.input = num(u["input_tokens"]) ?? state.input;
  state.output = num(u["output_tokens"]) ?? state.output;
  const read = num(u["cache_read_input_tokens"]);
  if (read !== undefined) state.cacheRead = read;
  const write = num(u["cache_creation_input_tokens"]);
  if (write !== undefined) state.cacheWrite = write;
  const creation = u["cache_creation"] as Json | undefined;
  if (creation && typeof creation === "object") {
    for (const [k, v] of Object.entries(creation))
      if (typeof v === "number") state.components.set(`cache_creation.${k}`, v);
  }
  const details = u["output_tokens_details"] as Json | undefined;
  const thinking = details && typeof details === "object" ? num(details["thinking_tokens"]) : undefined;
  // Thinking is inside output_tokens; it is reported as a component, never as reasoning_tokens.
  if (thinking !== undefined) state.components.set("output_tokens_details.thinking_tokens", thinking);
}

/** Translates one streaming response body into StreamEvents (stream_start is the caller's). */
export async function* translateStream(
  body: ReadableStream<Uint8Array> | null,
  headers: Headers,
  signal: AbortSignal,
  names: ToolNameMap,
): AsyncGenerator<StreamEventInit> {
  const rateLimits = rateLimitsFromHeaders(headers, RATE_LIMIT_FAMILIES);
  const usage: UsageState = { input: 0, output: 0, components: new Map() };
  const blocks = new Map<number, { type: string; id?: string; args: boolean }>();
  let stopReason: string | undefined;
  let stopSequence: string | undefined;
  let stopDetails: Json | undefined;
  let sawStart = false;

  for await (const sse of readSse(body, signal)) {
    const data = parseEventJson(sse);
    const type = data["type"];
    switch (type) {
      case "message_start": {
        sawStart = true;
        const message = (data["message"] ?? {}) as Json;
        const u = message["usage"] as Json | undefined;
        mergeUsage(usage, u);
        const tier = u && typeof u["service_tier"] === "string" ? u["service_tier"] : undefined;
        yield ev.metadata({
          ...(typeof message["model"] === "string" ? { actualModel: message["model"] } : {}),
          ...(tier ? { serviceTier: tier } : {}),
          rateLimits,
        });
        break;
      }
      case "content_block_start": {
        const index = Number(data["index"]);
        const block = (data["content_block"] ?? {}) as Json;
        const kind = String(block["type"]);
        if (kind === "tool_use") {
          const id = String(block["id"]);
          blocks.set(index, { type: kind, id, args: false });
          yield ev.toolStart(id, names.fromVendor(String(block["name"])));
        } else {
          blocks.set(index, { type: kind, args: false });
          if (kind === "redacted_thinking") yield ev.redacted(String(block["data"] ?? ""));
          else if (kind === "text" && typeof block["text"] === "string" && block["text"] !== "")
            yield ev.text(block["text"]);
        }
        break;
      }
      case "content_block_delta": {
        const index = Number(data["index"]);
        const delta = (data["delta"] ?? {}) as Json;
        switch (delta["type"]) {
          case "text_delta":
            if (delta["text"]) yield ev.text(String(delta["text"]));
            break;
          case "thinking_delta":
            if (delta["thinking"]) yield ev.thinking(String(delta["thinking"]));
            break;
          case "signature_delta":
            yield ev.signature(String(delta["signature"] ?? ""));
            break;
          case "input_json_delta": {
            const b = blocks.get(index);
            const fragment = String(delta["partial_json"] ?? "");
            if (b?.id && fragment !== "") {
              b.args = true;
              yield ev.toolDelta(b.id, fragment);
            }
            break;
          }
        }
        break;
      }
      case "content_block_stop": {
        const b = blocks.get(Number(data["index"]));
        if (b?.id) {
          // A tool without arguments streams only "" (meaning {}).
          if (!b.args) yield ev.toolDelta(b.id, "{}");
          yield ev.toolDone(b.id);
        }
        break;
      }
      case "message_delta": {
        const delta = (data["delta"] ?? {}) as Json;
        if (typeof delta["stop_reason"] === "string") stopReason = delta["stop_reason"];
        if (typeof delta["stop_sequence"] === "string") stopSequence = delta["stop_sequence"];
        if (delta["stop_details"] && typeof delta["stop_details"] === "object")
          stopDetails = delta["stop_details"] as Json;
        mergeUsage(usage, data["usage"] as Json | undefined);
        break;
      }
      case "message_stop": {
        yield ev.usage(usageInit(usage, rateLimits));
        if (isContextWindowStop(stopReason)) throw contextWindowStopFailure(stopReason!);
        if (stopReason === "refusal" && stopDetails) {
          const attrs: Record<string, string> = {};
          for (const k of ["type", "category", "explanation"])
            if (typeof stopDetails[k] === "string") attrs[k] = stopDetails[k] as string;
          yield ev.safety(SafetyKind.MODERATION, attrs["explanation"], attrs);
        }
        const reason = STOP[stopReason ?? "end_turn"] ?? StopReason.END_TURN;
        yield ev.stop(reason, reason === StopReason.STOP_SEQUENCE ? (stopSequence ?? "") : undefined);
        return;
      }
      case "error":
        throw anthropicFailure(200, sse.data);
      default:
        // ping and event types added later are ignored, as the vendor asks.
        break;
    }
  }
  throw transportFailure(
    sawStart ? "the stream ended before message_stop" : "the stream ended before message_start",
  );
}

function usageInit(u: UsageState, rateLimits: UsageInit["rateLimits"]): UsageInit {
  return {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    rateLimits: rateLimits ?? [],
    components: [...u.components.entries()].map(([name, value]) => ({ name, value })),
  };
}
