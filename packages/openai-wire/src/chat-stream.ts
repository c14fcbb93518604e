// Chat Completions SSE (`data: <chunk>` … `data: [DONE]`) -> StreamEvents, for every dialect
// the OpenAI-compatible servers speak:
// - reasoning text in `delta.reasoning_content` (xAI, vLLM, LM Studio), `delta.reasoning`
//   (Ollama) or a Mistral content array (`[{type:"thinking",thinking:[{type:"text",…}]}]`);
// - tool calls as fragments keyed by `index` (OpenAI, vLLM), whole in one chunk (xAI,
//   Ollama), or whole without `index`/`type` (Mistral's own models);
// - usage in a final `choices: []` chunk or on the finish chunk, mapped by the provider
//   (the counting rules differ per vendor);
// - an in-band `{"error":…}` frame, classified like the vendor's error codes.
import {
  argumentsJson,
  contextWindowStopFailure,
  ev,
  isContextWindowStop,
  malformedFrame,
  readEvent,
  readSse,
  readValue,
  type StopSequenceMatcher,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
  type UsageInit,
  type WireNotices,
} from "@pluggableharness/model-kit";
import { type RateLimitSnapshot, SafetyKind, StopReason } from "@pluggableharness/protocol/model";
import { ChatChunk, ChatDelta, ContentPart, ErrorFrame, ToolCallFragment } from "./chat-wire-schema.ts";
import { classifyStreamError } from "./errors.ts";

type Json = Record<string, unknown>;

export interface ChatStreamOptions {
  names: ToolNameMap;
  stop: StopSequenceMatcher;
  /** Snapshots from this response's headers, repeated on the usage event. */
  rateLimits: RateLimitSnapshot[];
  /** Maps the vendor's usage object (and the raw frame, for exact numbers) to a usage event. */
  usage: (usage: Json, rawFrame: string) => UsageInit;
  /** Forward reasoning text as thinking deltas (only for models that declare thinking). */
  thinking: boolean;
  signal: AbortSignal;
  /** Where malformed chunks and unknown content parts are reported (once per type). */
  notices: WireNotices;
}

interface CallState {
  id: string;
  name: string;
  fragments: number;
}

const STOP: Record<string, StopReason> = {
  stop: StopReason.END_TURN,
  eos: StopReason.END_TURN,
  length: StopReason.MAX_TOKENS,
  model_length: StopReason.MAX_TOKENS,
  tool_calls: StopReason.TOOL_USE,
  function_call: StopReason.TOOL_USE,
  content_filter: StopReason.CONTENT_FILTERED,
};

function parseChunk(data: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw malformedFrame("a chunk is not valid JSON", data);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw malformedFrame("a chunk is not a JSON object", data);
  return value;
}

/** Text and thinking pieces of a Mistral-style content array. */
function contentArray(
  parts: unknown[],
  notices: WireNotices,
): Array<{ kind: "text" | "thinking"; text: string }> {
  const out: Array<{ kind: "text" | "thinking"; text: string }> = [];
  for (const p of parts) {
    const part = readEvent(ContentPart, p, notices);
    if (part?.type === "text") out.push({ kind: "text", text: part.text });
    else if (part?.type === "thinking")
      for (const t of part.thinking) if (t.text !== undefined) out.push({ kind: "thinking", text: t.text });
  }
  return out;
}

export async function* parseChatStream(
  body: ReadableStream<Uint8Array> | null,
  options: ChatStreamOptions,
): AsyncGenerator<StreamEventInit> {
  const { stop, names } = options;
  const calls = new Map<string, CallState>();
  const order: CallState[] = [];
  let anonymous = 0;
  let finish: string | undefined;
  let usage: UsageInit | undefined;
  let metadataSent = false;
  let refusal = false;
  let done = false;

  const flushText = function* (): Generator<StreamEventInit> {
    const held = stop.flush();
    if (held) yield ev.text(held);
  };

  for await (const frame of readSse(body, options.signal)) {
    const data = frame.data.trim();
    if (data === "") continue;
    if (data === "[DONE]") {
      done = true;
      break;
    }
    const raw = parseChunk(data);
    const rawError = (raw as { error?: unknown }).error;
    if (rawError !== undefined && rawError !== null) throw classifyStreamError(errorInfo(rawError), data);
    const chunk = readValue(ChatChunk, raw, "chat.completion.chunk", options.notices);
    if (!chunk) continue;

    if (!metadataSent && (typeof chunk.model === "string" || typeof chunk.system_fingerprint === "string")) {
      metadataSent = true;
      yield ev.metadata({
        ...(typeof chunk.model === "string" ? { actualModel: chunk.model } : {}),
        ...(typeof chunk.system_fingerprint === "string"
          ? { systemFingerprint: chunk.system_fingerprint }
          : {}),
        ...(typeof chunk.service_tier === "string" ? { serviceTier: chunk.service_tier } : {}),
      });
    }
    if (chunk.usage) usage = options.usage(chunk.usage, data);

    const choice = chunk.choices?.[0];
    if (!choice) continue;
    const rawDelta = choice.delta ?? choice.message ?? {};
    const delta = readValue(ChatDelta, rawDelta, "delta", options.notices) ?? {};
    const matchedBefore = stop.matched !== undefined;

    if (!matchedBefore) {
      const reasoning = delta.reasoning_content ?? delta.reasoning ?? undefined;
      if (reasoning && options.thinking) yield ev.thinking(reasoning);

      if (typeof delta.content === "string" && delta.content !== "") {
        const out = stop.push(delta.content);
        if (out) yield ev.text(out);
      } else if (Array.isArray(delta.content)) {
        for (const piece of contentArray(delta.content, options.notices)) {
          if (piece.kind === "thinking") {
            if (options.thinking && piece.text) yield ev.thinking(piece.text);
          } else if (piece.text) {
            const out = stop.push(piece.text);
            if (out) yield ev.text(out);
          }
        }
      }
      if (delta.refusal) {
        refusal = true;
        const out = stop.push(delta.refusal);
        if (out) yield ev.text(out);
      }

      if (delta.tool_calls && stop.matched === undefined) {
        yield* flushText();
        for (const item of delta.tool_calls) {
          const raw = readValue(ToolCallFragment, item, "tool_call", options.notices);
          if (!raw) continue;
          const fn = raw.function ?? {};
          const key = raw.index !== undefined ? `i${raw.index}` : `n${anonymous++}`;
          let state = calls.get(key);
          if (!state) {
            const id = raw.id ? raw.id : `call_${order.length + 1}`;
            const name = fn.name ?? "";
            state = { id, name, fragments: 0 };
            calls.set(key, state);
            order.push(state);
            yield ev.toolStart(id, names.fromVendor(name));
          }
          const args = fn.arguments;
          if (typeof args === "string" && args !== "") {
            state.fragments++;
            yield ev.toolDelta(state.id, args);
          } else if (args !== undefined && args !== null && typeof args === "object") {
            // Some servers send the arguments as an object rather than JSON text.
            state.fragments++;
            yield ev.toolDelta(state.id, argumentsJson(args));
          }
        }
      }
    }
    if (typeof choice.finish_reason === "string" && choice.finish_reason !== "")
      finish = choice.finish_reason;
  }

  if (!done && finish === undefined)
    throw transportFailure("the vendor's stream ended before its final chunk");
  yield* flushText();
  for (const call of order) {
    if (call.fragments === 0) yield ev.toolDelta(call.id, "{}");
    yield ev.toolDone(call.id);
  }
  if (usage) yield ev.usage({ ...usage, rateLimits: options.rateLimits });

  if (stop.matched !== undefined) {
    yield ev.stop(StopReason.STOP_SEQUENCE, stop.matched);
    return;
  }
  if (finish === "error")
    throw classifyStreamError({ message: "the server ended the completion with an error" });
  if (isContextWindowStop(finish)) throw contextWindowStopFailure(finish!);
  let reason = finish !== undefined ? (STOP[finish] ?? StopReason.END_TURN) : StopReason.END_TURN;
  if (order.length > 0 && reason === StopReason.END_TURN) reason = StopReason.TOOL_USE;
  if (order.length === 0 && reason === StopReason.TOOL_USE) reason = StopReason.END_TURN;
  if (refusal && reason === StopReason.END_TURN) reason = StopReason.REFUSAL;
  // The vendor's filter interposed: say so beside the stop reason.
  if (reason === StopReason.CONTENT_FILTERED)
    yield ev.safety(SafetyKind.MODERATION, "the server's content filter stopped the output", {
      finish_reason: finish ?? "",
    });
  yield ev.stop(reason);
}

function errorInfo(value: unknown) {
  const e = ErrorFrame.safeParse({ error: value }).data?.error;
  if (typeof e === "string") return { message: e };
  const s = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  return { code: s(e?.code), type: s(e?.type), message: s(e?.message) };
}
