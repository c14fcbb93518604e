// Anthropic Messages: `event: <type>\ndata: <json>\n\n` frames, no terminator after message_stop.
import type { NBlock, NormalizedTurn, NUsage } from "../normalize.ts";
import { anthropicRateLimitHeaders } from "../ratelimits.ts";
import type { ErrorLike, RenderContext, StreamPlan, WireRenderer } from "./common.ts";
import { spacedJson } from "./common.ts";

const ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

const ERROR_MESSAGES: Record<string, string> = {
  invalid_request_error: "Invalid request",
  authentication_error: "invalid x-api-key",
  billing_error: "Your credit balance is too low to access the Anthropic API.",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "Not found",
  request_too_large: "Request exceeds the maximum allowed number of bytes.",
  rate_limit_error:
    "This request would exceed the rate limit for your organization of 40,000 input tokens per minute.",
  api_error: "Internal server error",
  timeout_error: "Request timed out",
  overloaded_error: "Overloaded",
};

export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
}

function stopReason(turn: NormalizedTurn): string {
  if (turn.vendorStopReason) return turn.vendorStopReason;
  return turn.stopReason === "content_filter" ? "refusal" : turn.stopReason;
}

function stopDetails(turn: NormalizedTurn): unknown {
  if (turn.stopReason !== "refusal" && turn.stopReason !== "content_filter") return null;
  return {
    type: "refusal",
    category: turn.refusal?.category ?? null,
    explanation: turn.refusal?.explanation ?? null,
  };
}

function startUsage(u: NUsage) {
  return {
    input_tokens: u.inputTokens,
    cache_creation_input_tokens: u.cacheWriteTokens + u.cacheWrite1hTokens,
    cache_read_input_tokens: u.cacheReadTokens,
    cache_creation: {
      ephemeral_5m_input_tokens: u.cacheWriteTokens,
      ephemeral_1h_input_tokens: u.cacheWrite1hTokens,
    },
    output_tokens: 1,
    service_tier: u.serviceTier ?? "standard",
  };
}

/** Cumulative usage as the final message_delta carries it; thinking counts as output. */
function finalUsage(u: NUsage) {
  const out: Record<string, unknown> = {
    input_tokens: u.inputTokens,
    cache_creation_input_tokens: u.cacheWriteTokens + u.cacheWrite1hTokens,
    cache_read_input_tokens: u.cacheReadTokens,
    output_tokens: u.outputTokens + u.reasoningTokens,
  };
  if (u.reasoningTokens > 0) out.output_tokens_details = { thinking_tokens: u.reasoningTokens };
  return out;
}

function toolId(block: { id: string | undefined }, ctx: RenderContext): string {
  return block.id ?? `toolu_01${ctx.rng.base62(22)}`;
}

function parsedArgs(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return {};
  }
}

export const anthropic: WireRenderer = {
  requestIdHeader: "request-id",
  defaultModel: "claude-sonnet-4-5",
  newRequestId: (ctx) => `req_01${ctx.rng.base62(22)}`,
  isStream: (ctx) => ctx.body.stream === true,
  rateLimitHeaders: (spec, ctx) => anthropicRateLimitHeaders(spec, ctx.nowMs),
  vendorHeaders: () => ({}),

  stream(turn, ctx): StreamPlan {
    const pad = ctx.quirks.anthropicPadding;
    const frame = (data: { type: string } & Record<string, unknown>): string => {
      let json = JSON.stringify(data);
      if (pad) json = `${json.slice(0, -1)}${" ".repeat(ctx.rng.int(0, 12))}}`;
      return `event: ${data.type}\ndata: ${json}\n\n`;
    };
    const ping = `event: ping\ndata: ${spacedJson({ type: "ping" })}\n\n`;
    const id = turn.id ?? `msg_01${ctx.rng.base62(22)}`;

    function* frames(): Generator<string> {
      yield frame({
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model: ctx.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          usage: startUsage(turn.usage),
        },
      });
      // As in the vendor's documented streams: one ping right after the first block opens.
      for (const [index, block] of turn.blocks.entries()) yield* blockFrames(block, index, index === 0);
      if (turn.blocks.length === 0) yield ping;
      yield frame({
        type: "message_delta",
        delta: {
          stop_reason: stopReason(turn),
          stop_sequence: turn.stopSequence ?? null,
          stop_details: stopDetails(turn),
        },
        usage: finalUsage(turn.usage),
      });
      yield frame({ type: "message_stop" });
    }

    function* blockFrames(block: NBlock, index: number, withPing: boolean): Generator<string> {
      const delta = (d: Record<string, unknown>) => frame({ type: "content_block_delta", index, delta: d });
      yield frame({ type: "content_block_start", index, content_block: openingBlock(block) });
      if (withPing) yield ping;
      switch (block.type) {
        case "text":
          for (const text of block.deltas) if (text !== "") yield delta({ type: "text_delta", text });
          break;
        case "thinking":
          for (const thinking of block.deltas)
            if (thinking !== "") yield delta({ type: "thinking_delta", thinking });
          if (block.signature !== undefined)
            yield delta({ type: "signature_delta", signature: block.signature });
          break;
        case "redacted_thinking":
          // Arrives whole in content_block_start; no deltas.
          break;
        case "tool_call":
          // The first fragment is an empty string on the real wire.
          yield delta({ type: "input_json_delta", partial_json: "" });
          for (const partial_json of block.fragments)
            if (partial_json !== "") yield delta({ type: "input_json_delta", partial_json });
          break;
      }
      yield frame({ type: "content_block_stop", index });
    }

    function openingBlock(block: NBlock): Record<string, unknown> {
      switch (block.type) {
        case "text":
          return { type: "text", text: "" };
        case "thinking":
          return { type: "thinking", thinking: "", signature: "" };
        case "redacted_thinking":
          return { type: "redacted_thinking", data: block.data };
        case "tool_call":
          return { type: "tool_use", id: toolId(block, ctx), name: block.name, input: {} };
      }
    }

    return {
      contentType: "text/event-stream; charset=utf-8",
      frames: frames(),
      errorFrames: (error) => {
        const type = error.errorType ?? "overloaded_error";
        const data = {
          type: "error",
          error: { type, message: error.message ?? ERROR_MESSAGES[type] ?? "Error" },
        };
        return [`event: error\ndata: ${spacedJson(data)}\n\n`];
      },
      malformedFrame: () =>
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"unterminated\n\n',
    };
  },

  json(turn, ctx) {
    const content = turn.blocks.map((block): Record<string, unknown> => {
      switch (block.type) {
        case "text":
          return { type: "text", text: block.text };
        case "thinking":
          return { type: "thinking", thinking: block.text, signature: block.signature ?? "" };
        case "redacted_thinking":
          return { type: "redacted_thinking", data: block.data };
        default:
          return {
            type: "tool_use",
            id: toolId(block, ctx),
            name: block.name,
            input: parsedArgs(block.argsJson),
          };
      }
    });
    const u = turn.usage;
    return {
      model: ctx.model,
      id: turn.id ?? `msg_01${ctx.rng.base62(22)}`,
      type: "message",
      role: "assistant",
      content,
      stop_reason: stopReason(turn),
      stop_sequence: turn.stopSequence ?? null,
      stop_details: stopDetails(turn),
      usage: { ...startUsage(u), output_tokens: u.outputTokens + u.reasoningTokens },
    };
  },

  errorBody(error: ErrorLike, _ctx, requestId) {
    const type = error.errorType ?? anthropicErrorType(error.status);
    return {
      type: "error",
      error: { type, message: error.message ?? ERROR_MESSAGES[type] ?? "Error" },
      request_id: requestId ?? null,
    };
  },

  countTokensBody: (tokens) => ({ input_tokens: tokens }),
};
