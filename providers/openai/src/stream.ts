// Responses API SSE (`event: <type>` + JSON data) -> StreamEvents.
//
// response.created          metadata: actual model, service tier
// output_text.delta         text_delta (through the stop-sequence matcher)
// refusal.delta             text_delta; the turn stops with `refusal`
// reasoning_summary_text / reasoning_text deltas   thinking_delta
// output_item.added (message)         a new text block, carrying the item's phase as its
//                           vendor state (commentary and final answer stay apart)
// output_item.added (function_call)   tool_call_start (call_id is the tool-use id); the
//                           internal batching wrapper (`multi_tool_use.parallel`, or plain
//                           `parallel` when no declared tool has that name) is held to its
//                           end and expanded into the declared calls it wraps
// function_call_arguments.delta       tool_call_delta
// output_item.done          tool_call_done; for reasoning: thinking_signature or
//                           redacted_thinking carrying the item JSON (reasoning.ts)
// response.completed / .incomplete    usage, then stop
// error / response.failed   a classified ModelFailure
// The stream must end with one of the three terminal events; anything else is a transport
// failure (retryable), and unknown event types are ignored as the API asks.
import {
  contextWindowStopFailure,
  ev,
  isContextWindowStop,
  parseEventJson,
  readEvent,
  readSse,
  type StopSequenceMatcher,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
  type UsageInit,
  type WireNotices,
} from "@pluggableharness/model-kit";
import { classifyStreamError, detailComponents, errorInfoOf, num } from "@pluggableharness/openai-wire";
import { type RateLimitSnapshot, SafetyKind, StopReason } from "@pluggableharness/protocol/model";
import { summaryText } from "./reasoning.ts";
import { OutputItem, StreamEvent, type Usage } from "./wire-schema.ts";

export interface ResponsesStreamOptions {
  names: ToolNameMap;
  /** The tool names the request declared, as sent to the vendor. */
  declared: ReadonlySet<string>;
  stop: StopSequenceMatcher;
  rateLimits: RateLimitSnapshot[];
  /** The vendor said explicitly (x-reasoning-included) that reasoning is inside output_tokens. */
  reasoningIncluded: boolean;
  signal: AbortSignal;
  /** Where unknown and malformed events are reported (once per type). */
  notices: WireNotices;
}

/**
 * Responses usage in canonical counters. input_tokens includes cached reads and cache
 * writes, so both are taken out; output_tokens includes reasoning, which is reported as
 * reasoning_tokens only with the vendor's explicit signal, else as a component.
 */
export function responsesUsage(u: Usage, reasoningIncluded: boolean): UsageInit {
  const inDetails = u.input_tokens_details ?? {};
  const outDetails = u.output_tokens_details ?? {};
  const cached = num(inDetails.cached_tokens) ?? 0;
  const written = num(inDetails.cache_write_tokens) ?? 0;
  const reasoning = num(outDetails.reasoning_tokens);
  const total = num(u.total_tokens);
  return {
    input: Math.max(0, (num(u.input_tokens) ?? 0) - cached - written),
    output: num(u.output_tokens) ?? 0,
    ...(inDetails.cached_tokens !== undefined ? { cacheRead: cached } : {}),
    ...(inDetails.cache_write_tokens !== undefined ? { cacheWrite: written } : {}),
    ...(reasoningIncluded && reasoning !== undefined ? { reasoning, reasoningAlreadyCounted: true } : {}),
    components: [
      ...detailComponents("input_tokens_details", inDetails, ["cached_tokens", "cache_write_tokens"]),
      ...detailComponents("output_tokens_details", outDetails, reasoningIncluded ? ["reasoning_tokens"] : []),
    ],
    ...(total !== undefined ? { vendorTotal: total } : {}),
  };
}

interface Call {
  callId: string;
  deltas: number;
  /** The name of a batching wrapper: its arguments are held, not streamed. */
  wrapper?: string;
  held?: string[];
}

/**
 * The names OpenAI models give a batch of calls instead of emitting them one by one: the
 * documented `multi_tool_use.parallel`, and plain `parallel`, which production streams of
 * gpt-5.x use. A dot can never be in a declared function name, so the first is always the
 * wrapper; the second only when the request declares no tool of that name.
 */
export const PARALLEL_WRAPPERS: readonly string[] = ["multi_tool_use.parallel", "parallel"];

export function isParallelWrapper(name: string, declared: ReadonlySet<string>): boolean {
  return PARALLEL_WRAPPERS.includes(name) && !declared.has(name);
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The calls a batching wrapper holds (`{"tool_uses": [{"recipient_name": "functions.<name>",
 * "parameters": {...}}]}`), or undefined unless every entry names a declared tool with an
 * object of parameters: a wrapper that is not that shape is passed on as the call it claims
 * to be, and the kernel answers it as an unknown tool, so nothing the request did not offer
 * is ever run under another name.
 */
export function expandParallel(
  argumentsJson: string,
  declared: ReadonlySet<string>,
): Array<{ name: string; args: string }> | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsJson);
  } catch {
    return undefined;
  }
  const uses = isObject(parsed) ? parsed.tool_uses : undefined;
  if (!Array.isArray(uses) || uses.length === 0) return undefined;
  const out: Array<{ name: string; args: string }> = [];
  for (const u of uses) {
    if (!isObject(u)) return undefined;
    const recipient = u.recipient_name;
    if (typeof recipient !== "string") return undefined;
    const name = recipient.startsWith("functions.") ? recipient.slice("functions.".length) : recipient;
    if (!declared.has(name)) return undefined;
    const params = u.parameters === undefined ? {} : u.parameters;
    if (!isObject(params)) return undefined;
    out.push({ name, args: JSON.stringify(params) });
  }
  return out;
}

/** A message item's phase as the text block's vendor state. */
export function phaseState(item: Record<string, unknown>): string | undefined {
  return typeof item.phase === "string" ? JSON.stringify({ phase: item.phase }) : undefined;
}

export async function* parseResponsesStream(
  body: ReadableStream<Uint8Array> | null,
  options: ResponsesStreamOptions,
): AsyncGenerator<StreamEventInit> {
  const { stop, names } = options;
  const calls = new Map<string, Call>(); // by item id
  const summaryIndex = new Map<string, number>(); // reasoning item id -> last summary index
  const thought = new Set<string>(); // reasoning items that streamed thinking text
  let model: string | undefined;
  let tier: string | undefined;
  let refusal = false;
  let toolCalls = 0;

  const flushText = function* (): Generator<StreamEventInit> {
    const held = stop.flush();
    if (held) yield ev.text(held);
  };
  const metadataFrom = function* (response: {
    model?: string;
    service_tier?: string | null;
  }): Generator<StreamEventInit> {
    const m = response.model;
    const t = response.service_tier ?? undefined;
    if ((m !== undefined && m !== model) || (t !== undefined && t !== tier)) {
      yield ev.metadata({
        ...(m !== undefined && m !== model ? { actualModel: m } : {}),
        ...(t !== undefined && t !== tier ? { serviceTier: t } : {}),
      });
      model = m ?? model;
      tier = t ?? tier;
    }
  };
  const thinkingDelta = function* (itemId: string, index: number, delta: string): Generator<StreamEventInit> {
    const last = summaryIndex.get(itemId);
    if (last !== undefined && index > last) yield ev.thinking("\n\n");
    summaryIndex.set(itemId, index);
    thought.add(itemId);
    if (delta) yield ev.thinking(delta);
  };

  for await (const frame of readSse(body, options.signal)) {
    if (frame.data.trim() === "[DONE]") break;
    const raw = parseEventJson(frame);
    // The type is in the data; the SSE event name stands in for a frame without one.
    const e = readEvent(
      StreamEvent,
      typeof raw.type === "string" || frame.event === undefined ? raw : { ...raw, type: frame.event },
      options.notices,
    );
    if (!e) continue;
    const matched = stop.matched !== undefined;
    switch (e.type) {
      case "response.created":
      case "response.in_progress":
        yield* metadataFrom(e.response);
        break;
      case "response.output_text.delta":
        if (!matched) {
          const out = stop.push(e.delta);
          if (out) yield ev.text(out);
        }
        break;
      case "response.refusal.delta":
        if (!matched) {
          refusal = true;
          const out = stop.push(e.delta);
          if (out) yield ev.text(out);
        }
        break;
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        if (!matched) yield* thinkingDelta(e.item_id ?? "", e.summary_index ?? e.content_index ?? 0, e.delta);
        break;
      case "response.output_item.added": {
        const item = readEvent(OutputItem, e.item, options.notices);
        if (item?.type === "message" && !matched) {
          // Each output message is its own text block (commentary apart from the answer).
          yield* flushText();
          yield ev.textBlock("", phaseState(item));
        } else if (item?.type === "function_call" && !matched) {
          yield* flushText();
          const callId = item.call_id ?? item.id ?? `call_${calls.size + 1}`;
          const name = item.name ?? "";
          const wrapper = isParallelWrapper(name, options.declared);
          calls.set(item.id ?? callId, {
            callId,
            deltas: 0,
            ...(wrapper ? { wrapper: name, held: [] } : {}),
          });
          if (!wrapper) {
            toolCalls++;
            yield ev.toolStart(callId, names.fromVendor(name));
          }
        } else if (item?.type === "reasoning") {
          yield* flushText();
        }
        break;
      }
      case "response.function_call_arguments.delta": {
        const call = calls.get(e.item_id ?? "");
        if (call && e.delta !== "") {
          call.deltas++;
          if (call.held) call.held.push(e.delta);
          else yield ev.toolDelta(call.callId, e.delta);
        }
        break;
      }
      case "response.output_item.done": {
        const item = readEvent(OutputItem, e.item, options.notices);
        if (item?.type === "function_call") {
          const call = calls.get(item.id ?? item.call_id ?? "");
          if (!call) break;
          if (call.wrapper !== undefined) {
            const args = item.arguments ? item.arguments : (call.held ?? []).join("") || "{}";
            const expanded = expandParallel(args, options.declared);
            const parts = expanded ?? [{ name: call.wrapper, args }];
            for (const [i, part] of parts.entries()) {
              // Each wrapped call gets its own id, derived from the wrapper's.
              const id = expanded ? `${call.callId}_${i + 1}` : call.callId;
              toolCalls++;
              yield ev.toolStart(id, names.fromVendor(part.name));
              yield ev.toolDelta(id, part.args);
              yield ev.toolDone(id);
            }
            break;
          }
          if (call.deltas === 0) yield ev.toolDelta(call.callId, item.arguments || "{}");
          yield ev.toolDone(call.callId);
        } else if (item?.type === "reasoning" && !matched) {
          const id = item.id ?? "";
          const text = summaryText(item);
          // The item goes back to the API verbatim: serialised from the frame as received.
          const json = JSON.stringify(raw.item);
          if (text !== "") {
            if (!thought.has(id)) yield ev.thinking(text);
            yield ev.signature(json);
          } else if (item.encrypted_content) {
            yield ev.redacted(json);
          }
        }
        break;
      }
      case "response.completed":
      case "response.incomplete": {
        const { response, type } = e;
        yield* flushText();
        yield* metadataFrom(response);
        if (response.usage)
          yield ev.usage({
            ...responsesUsage(response.usage, options.reasoningIncluded),
            rateLimits: options.rateLimits,
          });
        const incomplete = response.incomplete_details?.reason;
        if (
          type === "response.incomplete" &&
          typeof incomplete === "string" &&
          isContextWindowStop(incomplete)
        )
          throw contextWindowStopFailure(incomplete);
        const reason = stopReason(type, incomplete ?? undefined, stop.matched, refusal, toolCalls);
        // The vendor's filter interposed: say so beside the stop reason.
        if (reason === StopReason.CONTENT_FILTERED)
          yield ev.safety(SafetyKind.MODERATION, "OpenAI's content filter stopped the output", {
            incomplete_reason: "content_filter",
          });
        yield ev.stop(reason, stop.matched);
        return;
      }
      case "response.failed":
        throw classifyStreamError(
          errorInfoOf(e.response?.error ?? { message: "the response failed" }),
          frame.data,
        );
      case "error":
        throw classifyStreamError(errorInfoOf(e), frame.data);
      default:
        // Documented events the adapter has no use for.
        break;
    }
  }
  throw transportFailure("the vendor's stream ended before response.completed");
}

function stopReason(
  type: string,
  incompleteReason: string | undefined,
  matched: string | undefined,
  refusal: boolean,
  toolCalls: number,
): StopReason {
  if (matched !== undefined) return StopReason.STOP_SEQUENCE;
  if (type === "response.incomplete") {
    if (incompleteReason === "content_filter") return StopReason.CONTENT_FILTERED;
    return StopReason.MAX_TOKENS;
  }
  if (refusal) return StopReason.REFUSAL;
  return toolCalls > 0 ? StopReason.TOOL_USE : StopReason.END_TURN;
}
