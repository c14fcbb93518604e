// OpenAI Responses: `event: <type>\ndata: <json>\n\n` with an increasing sequence_number, ending
// after response.completed / response.incomplete / response.failed (no [DONE]).
import type { NormalizedTurn, NUsage } from "../normalize.ts";
import { openaiRateLimitHeaders } from "../ratelimits.ts";
import type { VendorId } from "../types.ts";
import type { RenderContext, StreamPlan, WireRenderer } from "./common.ts";
import { unixSeconds } from "./common.ts";
import { openaiErrorBody, openaiMetaHeaders } from "./openai-headers.ts";

type Json = Record<string, unknown>;

interface Ids {
  response(): string;
  message(): string;
  reasoning(): string;
  functionCall(): string;
  callId(): string;
}

function idsFor(vendor: VendorId, ctx: RenderContext): Ids {
  const r = ctx.rng;
  if (vendor === "xai")
    return {
      response: () => r.uuid(),
      message: () => `msg_${r.uuid()}`,
      reasoning: () => `rs_${r.uuid()}`,
      functionCall: () => `fc_${r.uuid()}`,
      callId: () => `call_${r.int(10000000, 99999999)}`,
    };
  return {
    response: () => `resp_${r.hex(50)}`,
    message: () => `msg_${r.hex(50)}`,
    reasoning: () => `rs_${r.hex(50)}`,
    functionCall: () => `fc_${r.hex(50)}`,
    callId: () => `call_${r.base62(24)}`,
  };
}

function usageObject(u: NUsage, vendor: VendorId): Json {
  const input = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens;
  const output = u.outputTokens + u.reasoningTokens;
  const out: Json = {
    input_tokens: input,
    input_tokens_details: {
      cache_write_tokens: u.cacheWriteTokens + u.cacheWrite1hTokens,
      cached_tokens: u.cacheReadTokens,
      // The default (30 minute) and long (12 hour) lifetimes, as GPT-5.6 reports writes.
      ...(u.cacheWriteTokens + u.cacheWrite1hTokens > 0 && vendor !== "xai"
        ? {
            cache_write_tokens_details: {
              ttl_30m_tokens: u.cacheWriteTokens,
              ttl_12h_tokens: u.cacheWrite1hTokens,
            },
          }
        : {}),
    },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: u.reasoningTokens },
    total_tokens: input + output,
  };
  if (vendor === "xai") {
    out.num_sources_used = 0;
    out.num_server_side_tools_used = 0;
    out.cost_in_usd_ticks = u.costInUsdTicks;
  }
  return out;
}

function wantsEncryptedReasoning(body: Json): boolean {
  return Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content");
}

/** The terminal status: `incomplete` for length and content-filter stops, else `completed`. */
function terminal(turn: NormalizedTurn): { status: "completed" | "incomplete"; reason?: string } {
  if (turn.vendorStopReason) return { status: "incomplete", reason: turn.vendorStopReason };
  if (turn.stopReason === "max_tokens") return { status: "incomplete", reason: "max_output_tokens" };
  if (turn.stopReason === "content_filter") return { status: "incomplete", reason: "content_filter" };
  return { status: "completed" };
}

function parsedTemperature(body: Json, key: string, fallback: number): unknown {
  return typeof body[key] === "number" ? body[key] : fallback;
}

export function responsesRenderer(vendor: VendorId): WireRenderer {
  const xai = vendor === "xai";

  function responseObject(ctx: RenderContext, id: string, createdAt: number, fields: Json): Json {
    const b = ctx.body;
    const reasoning = (typeof b.reasoning === "object" && b.reasoning) || {};
    return {
      id,
      object: "response",
      created_at: createdAt,
      status: "in_progress",
      background: false,
      error: null,
      incomplete_details: null,
      instructions: b.instructions ?? null,
      max_output_tokens: b.max_output_tokens ?? null,
      model: ctx.model,
      output: [],
      parallel_tool_calls: b.parallel_tool_calls ?? true,
      previous_response_id: b.previous_response_id ?? null,
      reasoning: { effort: (reasoning as Json).effort ?? null, summary: (reasoning as Json).summary ?? null },
      service_tier: "default",
      store: b.store ?? true,
      temperature: parsedTemperature(b, "temperature", 1.0),
      text: { format: { type: "text" } },
      tool_choice: b.tool_choice ?? "auto",
      tools: b.tools ?? [],
      top_p: parsedTemperature(b, "top_p", 1.0),
      truncation: "disabled",
      usage: null,
      user: null,
      metadata: b.metadata ?? {},
      ...fields,
    };
  }

  /** Builds every output item (and its event payloads) for a turn. */
  function plan(turn: NormalizedTurn, ctx: RenderContext) {
    const ids = idsFor(vendor, ctx);
    const encrypted = wantsEncryptedReasoning(ctx.body);
    const obfuscate = !xai && ctx.quirks.openaiObfuscation;
    const items: Array<{ done: Json; events: (outputIndex: number) => Json[] }> = [];

    for (const block of turn.blocks) {
      if (block.type === "text") {
        const id = ids.message();
        const part = (text: string) => ({ type: "output_text", annotations: [], logprobs: [], text });
        const phase = block.phase !== undefined ? { phase: block.phase } : {};
        items.push({
          done: {
            id,
            type: "message",
            status: "completed",
            content: [part(block.text)],
            role: "assistant",
            ...phase,
          },
          events: (output_index) => [
            {
              type: "response.output_item.added",
              item: { id, type: "message", status: "in_progress", content: [], role: "assistant", ...phase },
              output_index,
            },
            {
              type: "response.content_part.added",
              content_index: 0,
              item_id: id,
              output_index,
              part: part(""),
            },
            ...block.deltas.map((delta) => {
              const e: Json = {
                type: "response.output_text.delta",
                content_index: 0,
                delta,
                item_id: id,
                logprobs: [],
                output_index,
              };
              if (obfuscate) e.obfuscation = ctx.rng.obfuscation();
              return e;
            }),
            {
              type: "response.output_text.done",
              content_index: 0,
              item_id: id,
              logprobs: [],
              output_index,
              text: block.text,
            },
            {
              type: "response.content_part.done",
              content_index: 0,
              item_id: id,
              output_index,
              part: part(block.text),
            },
          ],
        });
      } else if (block.type === "thinking" || block.type === "redacted_thinking") {
        const id = ids.reasoning();
        const text = block.type === "thinking" ? block.text : "";
        const deltas = block.type === "thinking" ? block.deltas : [];
        const finalBlob =
          block.type === "thinking" ? (block.signature ?? `gAAAAAB${ctx.rng.base62(64)}`) : block.data;
        const summary = text === "" ? [] : [{ type: "summary_text", text }];
        const done: Json = { id, type: "reasoning", summary };
        if (encrypted) done.encrypted_content = finalBlob;
        items.push({
          done,
          events: (output_index) => {
            const added: Json = { id, type: "reasoning", summary: [] };
            // The recorded stream carries a different blob on `added` than on `done`; only `done` is the one to keep.
            if (encrypted) added.encrypted_content = `gAAAAAB${ctx.rng.base62(48)}`;
            const evs: Json[] = [{ type: "response.output_item.added", item: added, output_index }];
            if (text !== "") {
              const part = (t: string) => ({ type: "summary_text", text: t });
              evs.push({
                type: "response.reasoning_summary_part.added",
                item_id: id,
                output_index,
                part: part(""),
                summary_index: 0,
              });
              for (const delta of deltas) {
                const e: Json = {
                  type: "response.reasoning_summary_text.delta",
                  delta,
                  item_id: id,
                  output_index,
                  summary_index: 0,
                };
                if (obfuscate) e.obfuscation = ctx.rng.obfuscation();
                evs.push(e);
              }
              evs.push({
                type: "response.reasoning_summary_text.done",
                item_id: id,
                output_index,
                summary_index: 0,
                text,
              });
              evs.push({
                type: "response.reasoning_summary_part.done",
                item_id: id,
                output_index,
                part: part(text),
                summary_index: 0,
              });
            }
            return evs;
          },
        });
      } else {
        const id = ids.functionCall();
        const call_id = block.id ?? ids.callId();
        const item = (status: string, args: string) => ({
          id,
          type: "function_call",
          status,
          arguments: args,
          call_id,
          name: block.name,
        });
        items.push({
          done: item("completed", block.argsJson),
          events: (output_index) => [
            { type: "response.output_item.added", item: item("in_progress", ""), output_index },
            ...block.fragments.map((delta) => {
              const e: Json = {
                type: "response.function_call_arguments.delta",
                delta,
                item_id: id,
                output_index,
              };
              if (obfuscate) e.obfuscation = ctx.rng.obfuscation();
              return e;
            }),
            {
              type: "response.function_call_arguments.done",
              arguments: block.argsJson,
              item_id: id,
              output_index,
            },
          ],
        });
      }
    }

    if (turn.stopReason === "refusal") {
      const id = ids.message();
      const refusal = turn.refusal?.explanation ?? "I'm sorry, but I can't help with that.";
      const part = (r: string) => ({ type: "refusal", refusal: r });
      items.push({
        done: { id, type: "message", status: "completed", content: [part(refusal)], role: "assistant" },
        events: (output_index) => [
          {
            type: "response.output_item.added",
            item: { id, type: "message", status: "in_progress", content: [], role: "assistant" },
            output_index,
          },
          {
            type: "response.content_part.added",
            content_index: 0,
            item_id: id,
            output_index,
            part: part(""),
          },
          { type: "response.refusal.delta", content_index: 0, delta: refusal, item_id: id, output_index },
          { type: "response.refusal.done", content_index: 0, item_id: id, output_index, refusal },
          {
            type: "response.content_part.done",
            content_index: 0,
            item_id: id,
            output_index,
            part: part(refusal),
          },
        ],
      });
    }
    return { ids, items };
  }

  function finalFields(turn: NormalizedTurn, items: Json[]): Json {
    const t = terminal(turn);
    return {
      status: t.status,
      incomplete_details: t.reason ? { reason: t.reason } : null,
      output: items,
      usage: usageObject(turn.usage, vendor),
    };
  }

  return {
    requestIdHeader: "x-request-id",
    defaultModel: xai ? "grok-4" : "gpt-5-codex",
    newRequestId: (ctx) => (xai ? ctx.rng.uuid() : `req_${ctx.rng.hex(32)}`),
    isStream: (ctx) => ctx.body.stream === true,
    rateLimitHeaders: (spec) => openaiRateLimitHeaders(spec),
    vendorHeaders: (ctx) => (xai ? {} : openaiMetaHeaders(ctx.rng.int(80, 400))),
    errorBody: (error) => openaiErrorBody(error),
    countTokensBody: (tokens) => ({ object: "response.input_tokens", input_tokens: tokens }),

    stream(turn, ctx): StreamPlan {
      const { ids, items } = plan(turn, ctx);
      const id = turn.id ?? ids.response();
      const createdAt = unixSeconds(ctx.nowMs);
      let seq = 0;
      const frame = (payload: Json): string => {
        const ordered: Json = xai
          ? { sequence_number: seq, ...payload }
          : { ...payload, sequence_number: seq };
        seq++;
        return `event: ${payload.type}\ndata: ${JSON.stringify(ordered)}\n\n`;
      };

      function* frames(): Generator<string> {
        yield frame({ type: "response.created", response: responseObject(ctx, id, createdAt, {}) });
        yield frame({ type: "response.in_progress", response: responseObject(ctx, id, createdAt, {}) });
        for (const [outputIndex, item] of items.entries()) {
          for (const ev of item.events(outputIndex)) yield frame(ev);
          yield frame({ type: "response.output_item.done", item: item.done, output_index: outputIndex });
        }
        const fields = finalFields(
          turn,
          items.map((i) => i.done),
        );
        const type = fields.status === "completed" ? "response.completed" : "response.incomplete";
        yield frame({ type, response: responseObject(ctx, id, createdAt, fields) });
      }

      return {
        contentType: "text/event-stream; charset=utf-8",
        frames: frames(),
        errorFrames: (error, written) => {
          seq = written;
          const code = error.code ?? error.errorType ?? "server_error";
          const message =
            error.message ?? "The server had an error while processing your request. Sorry about that!";
          return [
            frame({
              type: "error",
              error: { type: error.errorType ?? "server_error", code, message, param: null },
            }),
            frame({
              type: "response.failed",
              response: responseObject(ctx, id, createdAt, { status: "failed", error: { code, message } }),
            }),
          ];
        },
        malformedFrame: () =>
          'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"unterminated\n\n',
      };
    },

    json(turn, ctx) {
      const { ids, items } = plan(turn, ctx);
      const fields = finalFields(
        turn,
        items.map((i) => i.done),
      );
      return responseObject(ctx, turn.id ?? ids.response(), unixSeconds(ctx.nowMs), fields);
    },
  };
}
