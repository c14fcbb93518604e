// Chat Completions: `data: <chunk>\n\n` frames ending in `data: [DONE]\n\n`, in several dialects.
import type { NormalizedTurn, NToolCall, NUsage } from "../normalize.ts";
import type { Prng } from "../prng.ts";
import { openaiRateLimitHeaders } from "../ratelimits.ts";
import type { VendorId } from "../types.ts";
import type { ErrorLike, RenderContext, StreamPlan, WireRenderer } from "./common.ts";
import { unixSeconds } from "./common.ts";
import { mistralErrorBody, ollamaErrorBody, openaiErrorBody, openaiMetaHeaders } from "./openai-headers.ts";

/** The observable differences between servers that all claim Chat Completions compatibility. */
export interface ChatDialect {
  chunkId(rng: Prng): string;
  toolCallId(rng: Prng): string;
  fingerprint: string | undefined;
  /** Where `system_fingerprint` sits in a chunk. */
  fingerprintAfterChoices: boolean;
  serviceTier: boolean;
  /** Non-final chunks carry an explicit `"finish_reason": null`. */
  nullFinishReason: boolean;
  logprobsNull: boolean;
  obfuscation: boolean;
  /** `separate`: a first chunk with only the role; `merged`: role on the first content delta; `every`: on every delta. */
  role: "separate" | "merged" | "every";
  /** How thinking text is streamed; undefined drops it (OpenAI's chat API does not stream reasoning). */
  reasoning: "reasoning_content" | "reasoning" | "mistral-content-array" | undefined;
  /** `fragments`: id+name first, then argument pieces per index; `whole`: complete calls in one chunk. */
  toolCalls: "fragments" | "whole" | "whole-no-index";
  /** `include_usage`: a `choices: []` chunk only when requested; `always`: always that chunk; `finish`: on the finish chunk. */
  usage: "include_usage" | "always" | "finish";
  usageShape: "openai" | "xai" | "basic" | "mistral";
  refusalField: boolean;
  errorBody(error: ErrorLike): unknown;
  requestIdHeader: string | undefined;
  requestId(rng: Prng): string;
  rateLimits: boolean;
  metaHeaders: boolean;
  defaultModel: string;
}

const openaiDialect: ChatDialect = {
  chunkId: (rng) => `chatcmpl-${rng.base62(29)}`,
  toolCallId: (rng) => `call_${rng.base62(24)}`,
  fingerprint: "fp_de604bd877",
  fingerprintAfterChoices: false,
  serviceTier: true,
  nullFinishReason: true,
  logprobsNull: true,
  obfuscation: true,
  role: "separate",
  reasoning: undefined,
  toolCalls: "fragments",
  usage: "include_usage",
  usageShape: "openai",
  refusalField: true,
  errorBody: openaiErrorBody,
  requestIdHeader: "x-request-id",
  requestId: (rng) => `req_${rng.hex(32)}`,
  rateLimits: true,
  metaHeaders: true,
  defaultModel: "gpt-4.1-nano-2025-04-14",
};

export const CHAT_DIALECTS: Record<string, ChatDialect> = {
  "openai-chat": openaiDialect,
  xai: {
    ...openaiDialect,
    chunkId: (rng) => rng.uuid(),
    toolCallId: (rng) => `call_${rng.int(10000000, 99999999)}`,
    fingerprint: "fp_2a885414fb",
    fingerprintAfterChoices: true,
    serviceTier: false,
    nullFinishReason: false,
    logprobsNull: false,
    obfuscation: false,
    role: "merged",
    reasoning: "reasoning_content",
    toolCalls: "whole",
    usage: "always",
    usageShape: "xai",
    refusalField: false,
    requestId: (rng) => rng.uuid(),
    metaHeaders: false,
    defaultModel: "grok-3-mini",
  },
  ollama: {
    ...openaiDialect,
    chunkId: (rng) => `chatcmpl-${rng.int(100, 999)}`,
    toolCallId: (rng) => `call_${rng.base62(8).toLowerCase()}`,
    fingerprint: "fp_ollama",
    serviceTier: false,
    logprobsNull: false,
    obfuscation: false,
    role: "every",
    reasoning: "reasoning",
    toolCalls: "whole",
    usageShape: "basic",
    refusalField: false,
    errorBody: ollamaErrorBody,
    requestIdHeader: undefined,
    rateLimits: false,
    metaHeaders: false,
    defaultModel: "llama3.2",
  },
  vllm: {
    ...openaiDialect,
    chunkId: (rng) => `chatcmpl-${rng.hex(32)}`,
    toolCallId: (rng) => `chatcmpl-tool-${rng.hex(32)}`,
    fingerprint: undefined,
    serviceTier: false,
    obfuscation: false,
    reasoning: "reasoning_content",
    usageShape: "basic",
    refusalField: false,
    requestIdHeader: undefined,
    rateLimits: false,
    metaHeaders: false,
    defaultModel: "Qwen/Qwen3-8B",
  },
  lmstudio: {
    ...openaiDialect,
    chunkId: (rng) => `chatcmpl-${rng.base62(20).toLowerCase()}`,
    toolCallId: (rng) => String(rng.int(100000000, 999999999)),
    fingerprint: "qwen3-8b",
    serviceTier: false,
    logprobsNull: true,
    obfuscation: false,
    reasoning: "reasoning_content",
    usageShape: "basic",
    refusalField: false,
    requestIdHeader: undefined,
    rateLimits: false,
    metaHeaders: false,
    defaultModel: "qwen3-8b",
  },
  mistral: {
    ...openaiDialect,
    chunkId: (rng) => rng.hex(32),
    toolCallId: (rng) => rng.base62(9),
    fingerprint: undefined,
    serviceTier: false,
    obfuscation: false,
    reasoning: "mistral-content-array",
    toolCalls: "whole-no-index",
    usage: "finish",
    usageShape: "mistral",
    refusalField: false,
    errorBody: mistralErrorBody,
    requestIdHeader: undefined,
    rateLimits: false,
    metaHeaders: false,
    defaultModel: "mistral-small-latest",
  },
  // DeepSeek: reasoning as reasoning_content (thinking on by default), OpenAI-style
  // fragments and errors, no rate-limit headers.
  deepseek: {
    ...openaiDialect,
    chunkId: (rng) => rng.uuid(),
    toolCallId: (rng) => `call_00_${rng.base62(24)}`,
    fingerprint: "fp_feb633d1f5_prod0820_fp8_kvcache",
    serviceTier: false,
    obfuscation: false,
    reasoning: "reasoning_content",
    usageShape: "basic",
    refusalField: false,
    requestIdHeader: "x-ds-trace-id",
    requestId: (rng) => rng.hex(32),
    rateLimits: false,
    metaHeaders: false,
    defaultModel: "deepseek-v4-flash",
  },
};

function finishReason(turn: NormalizedTurn, dialect: ChatDialect): string {
  if (turn.vendorStopReason) return turn.vendorStopReason;
  switch (turn.stopReason) {
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
      return "length";
    case "content_filter":
      return "content_filter";
    case "refusal":
      return dialect.refusalField ? "stop" : "content_filter";
    default:
      return "stop";
  }
}

function usageObject(u: NUsage, shape: ChatDialect["usageShape"]): Record<string, unknown> {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens;
  switch (shape) {
    case "openai": {
      const completion = u.outputTokens + u.reasoningTokens;
      return {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        prompt_tokens_details: {
          cached_tokens: u.cacheReadTokens,
          audio_tokens: 0,
          ...(u.cacheWriteTokens + u.cacheWrite1hTokens > 0
            ? { cache_write_tokens: u.cacheWriteTokens + u.cacheWrite1hTokens }
            : {}),
        },
        completion_tokens_details: {
          reasoning_tokens: u.reasoningTokens,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      };
    }
    case "xai":
      // xAI's completion_tokens leaves reasoning out; total_tokens adds it back.
      return {
        prompt_tokens: prompt,
        completion_tokens: u.outputTokens,
        total_tokens: prompt + u.outputTokens + u.reasoningTokens,
        prompt_tokens_details: {
          text_tokens: prompt,
          audio_tokens: 0,
          image_tokens: 0,
          cached_tokens: u.cacheReadTokens,
        },
        completion_tokens_details: {
          reasoning_tokens: u.reasoningTokens,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
        num_sources_used: 0,
        cost_in_usd_ticks: u.costInUsdTicks,
      };
    case "mistral": {
      const completion = u.outputTokens + u.reasoningTokens;
      const out: Record<string, unknown> = {
        prompt_tokens: prompt,
        total_tokens: prompt + completion,
        completion_tokens: completion,
      };
      if (u.cacheReadTokens > 0) out.prompt_tokens_details = { cached_tokens: u.cacheReadTokens };
      return out;
    }
    case "basic": {
      const completion = u.outputTokens + u.reasoningTokens;
      return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
    }
  }
}

function wantsUsage(ctx: RenderContext): boolean {
  const opts = ctx.body.stream_options;
  return (
    typeof opts === "object" && opts !== null && (opts as Record<string, unknown>).include_usage === true
  );
}

export function chatRenderer(vendor: VendorId): WireRenderer {
  const dialect = CHAT_DIALECTS[vendor] ?? openaiDialect;
  return {
    requestIdHeader: dialect.requestIdHeader,
    defaultModel: dialect.defaultModel,
    newRequestId: (ctx) => dialect.requestId(ctx.rng),
    isStream: (ctx) => ctx.body.stream === true,
    rateLimitHeaders: (spec) => (dialect.rateLimits ? openaiRateLimitHeaders(spec) : {}),
    vendorHeaders: (ctx) => (dialect.metaHeaders ? openaiMetaHeaders(ctx.rng.int(80, 400)) : {}),
    errorBody: (error) => dialect.errorBody(error),
    countTokensBody: (tokens) => ({ input_tokens: tokens }),

    stream(turn, ctx): StreamPlan {
      const id = turn.id ?? dialect.chunkId(ctx.rng);
      const created = unixSeconds(ctx.nowMs);
      const includeUsage =
        dialect.usage === "always" || (dialect.usage === "include_usage" && wantsUsage(ctx));
      const usageNull = dialect.usage === "include_usage" && includeUsage && dialect.usageShape === "openai";
      let roleSent = false;

      const chunk = (
        delta: Record<string, unknown> | null,
        finish: string | null,
        usage?: Record<string, unknown>,
      ): string => {
        const c: Record<string, unknown> = { id, object: "chat.completion.chunk", created, model: ctx.model };
        if (dialect.serviceTier) c.service_tier = "default";
        if (dialect.fingerprint && !dialect.fingerprintAfterChoices)
          c.system_fingerprint = dialect.fingerprint;
        if (delta === null) {
          c.choices = [];
        } else {
          let d = delta;
          if (dialect.role === "every" || (dialect.role === "merged" && !roleSent))
            d = { ...delta, role: "assistant" };
          roleSent = true;
          const choice: Record<string, unknown> = { index: 0, delta: d };
          if (dialect.logprobsNull) choice.logprobs = null;
          if (finish !== null || dialect.nullFinishReason) choice.finish_reason = finish;
          c.choices = [choice];
        }
        if (usage) c.usage = usage;
        else if (usageNull) c.usage = null;
        if (dialect.fingerprint && dialect.fingerprintAfterChoices)
          c.system_fingerprint = dialect.fingerprint;
        if (dialect.obfuscation && ctx.quirks.openaiObfuscation) c.obfuscation = ctx.rng.obfuscation();
        return `data: ${JSON.stringify(c)}\n\n`;
      };

      const finish = finishReason(turn, dialect);
      const usage = usageObject(turn.usage, dialect.usageShape);

      // When a turn opens with tool calls, OpenAI puts the role on the first tool-call chunk.
      const toolFirst =
        dialect.role === "separate" &&
        dialect.toolCalls === "fragments" &&
        turn.stopReason !== "refusal" &&
        turn.blocks.some((b) => b.type === "tool_call") &&
        turn.blocks.every(
          (b) =>
            b.type === "tool_call" ||
            b.type === "redacted_thinking" ||
            (b.type === "thinking" && !dialect.reasoning),
        );

      function* frames(): Generator<string> {
        if (dialect.role === "separate" && !toolFirst) {
          roleSent = true;
          yield chunk(
            dialect.refusalField
              ? { role: "assistant", content: "", refusal: null }
              : { role: "assistant", content: "" },
            null,
          );
        }
        const calls: NToolCall[] = [];
        for (const block of turn.blocks) {
          if (block.type === "text") {
            for (const content of block.deltas) yield chunk({ content }, null);
          } else if (block.type === "thinking") {
            if (!dialect.reasoning) continue;
            for (const piece of block.deltas) {
              if (dialect.reasoning === "mistral-content-array")
                yield chunk(
                  { content: [{ type: "thinking", thinking: [{ type: "text", text: piece }] }] },
                  null,
                );
              else yield chunk({ [dialect.reasoning]: piece }, null);
            }
          } else if (block.type === "tool_call") {
            calls.push(block);
          }
        }
        if (turn.stopReason === "refusal" && dialect.refusalField)
          yield chunk(
            { refusal: turn.refusal?.explanation ?? "I'm sorry, but I can't help with that." },
            null,
          );
        if (calls.length > 0) {
          if (dialect.toolCalls === "fragments") {
            for (const [index, call] of calls.entries()) {
              const opening: Record<string, unknown> =
                toolFirst && index === 0
                  ? { role: "assistant", content: null, ...(dialect.refusalField ? { refusal: null } : {}) }
                  : {};
              yield chunk(
                {
                  ...opening,
                  tool_calls: [
                    {
                      index,
                      id: call.id ?? dialect.toolCallId(ctx.rng),
                      type: "function",
                      function: { name: call.name, arguments: "" },
                    },
                  ],
                },
                null,
              );
              for (const args of call.fragments)
                if (args !== "")
                  yield chunk({ tool_calls: [{ index, function: { arguments: args } }] }, null);
            }
          } else if (dialect.toolCalls === "whole") {
            const whole = calls.map((call, index) => ({
              id: call.id ?? dialect.toolCallId(ctx.rng),
              function: { name: call.name, arguments: call.argsJson },
              index,
              type: "function",
            }));
            yield chunk({ tool_calls: whole }, null);
          } else {
            // Mistral's own models: whole calls without index/type, finishing in the same chunk.
            const whole = calls.map((call) => ({
              id: call.id ?? dialect.toolCallId(ctx.rng),
              function: { name: call.name, arguments: call.argsJson },
            }));
            yield chunk({ content: null, tool_calls: whole }, finish, usage);
            yield "data: [DONE]\n\n";
            return;
          }
        }
        if (dialect.usage === "finish") {
          yield chunk({ content: "" }, finish, usage);
        } else {
          yield chunk(dialect.role === "every" ? { content: "" } : {}, finish);
          if (includeUsage) yield chunk(null, null, usage);
        }
        yield "data: [DONE]\n\n";
      }

      return {
        contentType: "text/event-stream; charset=utf-8",
        frames: frames(),
        errorFrames: (error) => {
          const body = openaiErrorBody({
            status: 500,
            ...error,
            errorType: error.errorType ?? "server_error",
          });
          return [`data: ${JSON.stringify(body)}\n\n`, "data: [DONE]\n\n"];
        },
        malformedFrame: () =>
          `data: {"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"unterminated\n\n`,
      };
    },

    json(turn, ctx) {
      const text = turn.blocks.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
      const thinking = turn.blocks.flatMap((b) => (b.type === "thinking" ? [b.text] : [])).join("");
      const calls = turn.blocks.flatMap((b) => (b.type === "tool_call" ? [b] : []));
      const message: Record<string, unknown> = {
        role: "assistant",
        content: text === "" && calls.length > 0 ? null : text,
      };
      if (dialect.refusalField)
        message.refusal =
          turn.stopReason === "refusal"
            ? (turn.refusal?.explanation ?? "I'm sorry, but I can't help with that.")
            : null;
      if (thinking && dialect.reasoning && dialect.reasoning !== "mistral-content-array")
        message[dialect.reasoning] = thinking;
      if (calls.length > 0)
        message.tool_calls = calls.map((call) => ({
          id: call.id ?? dialect.toolCallId(ctx.rng),
          type: "function",
          function: { name: call.name, arguments: call.argsJson },
        }));
      const out: Record<string, unknown> = {
        id: turn.id ?? dialect.chunkId(ctx.rng),
        object: "chat.completion",
        created: unixSeconds(ctx.nowMs),
        model: ctx.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(turn, dialect) }],
        usage: usageObject(turn.usage, dialect.usageShape),
      };
      if (dialect.serviceTier) out.service_tier = "default";
      if (dialect.fingerprint) out.system_fingerprint = dialect.fingerprint;
      return out;
    },
  };
}
