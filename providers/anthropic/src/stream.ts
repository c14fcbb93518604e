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
  readEvent,
  readSse,
  readValue,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
  type UsageInit,
  type WireNotices,
} from "@pluggableharness/model-kit";
import { RateLimitKind, SafetyKind, StopReason } from "@pluggableharness/protocol/model";
import { ContentBlock, Delta, ErrorBody, StreamEvent, Usage } from "./wire-schema.ts";

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
    const err = ErrorBody.safeParse(JSON.parse(bodyText)).data?.error;
    type = err?.type;
    message = err?.message;
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

interface UsageState {
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
  components: Map<string, number>;
}

/** Reads a usage object on its own, so a malformed count costs the usage, not the event. */
function readUsage(value: unknown, notices: WireNotices): Usage | undefined {
  return value === undefined || value === null ? undefined : readValue(Usage, value, "usage", notices);
}

function mergeUsage(state: UsageState, u: Usage | undefined): void {
  if (!u) return;
  // Counts are cumulative: the latest value wins, nothing is summed.
  state.input = u.input_tokens ?? state.input;
  state.output = u.output_tokens ?? state.output;
  if (typeof u.cache_read_input_tokens === "number") state.cacheRead = u.cache_read_input_tokens;
  if (typeof u.cache_creation_input_tokens === "number") state.cacheWrite = u.cache_creation_input_tokens;
  for (const [k, v] of Object.entries(u.cache_creation ?? {}))
    if (typeof v === "number") state.components.set(`cache_creation.${k}`, v);
  const thinking = u.output_tokens_details?.thinking_tokens;
  // Thinking is inside output_tokens; it is reported as a component, never as reasoning_tokens.
  if (typeof thinking === "number") state.components.set("output_tokens_details.thinking_tokens", thinking);
}

/**
 * Translates one streaming response body into StreamEvents (stream_start is the caller's).
 * Every event is read through the typed schemas in wire-schema.ts; an event, block or delta
 * of a type they do not list, or one that contradicts its schema, is skipped and reported
 * through `notices` (once per type), never ending the stream.
 */
export async function* translateStream(
  body: ReadableStream<Uint8Array> | null,
  headers: Headers,
  signal: AbortSignal,
  names: ToolNameMap,
  notices: WireNotices,
): AsyncGenerator<StreamEventInit> {
  const rateLimits = rateLimitsFromHeaders(headers, RATE_LIMIT_FAMILIES);
  const usage: UsageState = { input: 0, output: 0, components: new Map() };
  const blocks = new Map<number, { type: string; id?: string; args: boolean }>();
  let stopReason: string | undefined;
  let stopSequence: string | undefined;
  let stopDetails: Record<string, unknown> | undefined;
  let sawStart = false;

  for await (const sse of readSse(body, signal)) {
    const data = readEvent(StreamEvent, parseEventJson(sse), notices);
    if (!data) continue;
    switch (data.type) {
      case "message_start": {
        sawStart = true;
        const { model } = data.message;
        const u = readUsage(data.message.usage, notices);
        mergeUsage(usage, u);
        const tier = u?.service_tier ?? undefined;
        yield ev.metadata({
          ...(model !== undefined ? { actualModel: model } : {}),
          ...(tier ? { serviceTier: tier } : {}),
          rateLimits,
        });
        break;
      }
      case "content_block_start": {
        const index = data.index;
        const block = readEvent(ContentBlock, data.content_block, notices);
        // A block of a kind not read here is still tracked, so its deltas and stop are known.
        if (!block) blocks.set(index, { type: data.content_block.type, args: false });
        else if (block.type === "tool_use") {
          blocks.set(index, { type: block.type, id: block.id, args: false });
          yield ev.toolStart(block.id, names.fromVendor(block.name));
        } else {
          blocks.set(index, { type: block.type, args: false });
          if (block.type === "redacted_thinking") yield ev.redacted(block.data);
          else if (block.type === "text" && block.text) yield ev.text(block.text);
        }
        break;
      }
      case "content_block_delta": {
        const delta = readEvent(Delta, data.delta, notices);
        switch (delta?.type) {
          case "text_delta":
            if (delta.text) yield ev.text(delta.text);
            break;
          case "thinking_delta":
            if (delta.thinking) yield ev.thinking(delta.thinking);
            break;
          case "signature_delta":
            yield ev.signature(delta.signature);
            break;
          case "input_json_delta": {
            const b = blocks.get(data.index);
            if (b?.id && delta.partial_json !== "") {
              b.args = true;
              yield ev.toolDelta(b.id, delta.partial_json);
            }
            break;
          }
        }
        break;
      }
      case "content_block_stop": {
        const b = blocks.get(data.index);
        if (b?.id) {
          // A tool without arguments streams only "" (meaning {}).
          if (!b.args) yield ev.toolDelta(b.id, "{}");
          yield ev.toolDone(b.id);
        }
        break;
      }
      case "message_delta": {
        const { delta } = data;
        if (typeof delta.stop_reason === "string") stopReason = delta.stop_reason;
        if (typeof delta.stop_sequence === "string") stopSequence = delta.stop_sequence;
        if (delta.stop_details) stopDetails = delta.stop_details;
        mergeUsage(usage, readUsage(data.usage, notices));
        break;
      }
      case "message_stop": {
        yield ev.usage(usageInit(usage, rateLimits));
        if (isContextWindowStop(stopReason)) throw contextWindowStopFailure(stopReason!);
        if (stopReason === "refusal" && stopDetails) {
          const attrs: Record<string, string> = {};
          for (const k of ["type", "category", "explanation"]) {
            const v = stopDetails[k];
            if (typeof v === "string") attrs[k] = v;
          }
          yield ev.safety(SafetyKind.MODERATION, attrs["explanation"], attrs);
        }
        const reason = STOP[stopReason ?? "end_turn"] ?? StopReason.END_TURN;
        yield ev.stop(reason, reason === StopReason.STOP_SEQUENCE ? (stopSequence ?? "") : undefined);
        return;
      }
      case "error":
        throw anthropicFailure(200, sse.data);
      case "ping":
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
