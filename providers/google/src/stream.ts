// Gemini SSE (one GenerateContentResponse per event, no terminator) -> StreamEvents, and
// Google RPC error bodies -> ModelFailure. Stop sequences are matched here, not by Gemini.

import {
  argumentsJson,
  classifyHttpFailure,
  ev,
  ModelFailure,
  parseDurationSeconds,
  parseEventJson,
  readSse,
  readValue,
  type StopSequenceMatcher,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
  type WireNotices,
} from "@pluggableharness/model-kit";
import { SafetyKind, StopReason } from "@pluggableharness/protocol/model";
import { Chunk, ErrorBody, PART_FIELDS, Part, UsageMetadata } from "./wire-schema.ts";

const CONTEXT_LENGTH =
  /input token count|exceeds the maximum number of tokens|too many tokens|context (window|length)/i;
const BAD_KEY = /API key not valid|API_KEY_INVALID/i;

/** A Google RPC error ({"error": {code, message, status, details}}) as a classified failure. */
export function geminiFailure(httpStatus: number, bodyText: string, headers?: Headers): ModelFailure {
  let code: number | undefined;
  let status: string | undefined;
  let message: string | undefined;
  let retryDelay: number | undefined;
  let reasons = "";
  try {
    const err = ErrorBody.safeParse(JSON.parse(bodyText)).data?.error;
    if (err) {
      ({ code, status, message } = err);
      for (const d of err.details ?? []) {
        if (d["@type"]?.endsWith("google.rpc.RetryInfo") && d.retryDelay !== undefined)
          retryDelay = parseDurationSeconds(d.retryDelay);
        if (d.reason !== undefined) reasons += ` ${d.reason}`;
      }
    }
  } catch {
    // not JSON: classified by status alone
  }
  const inBand = httpStatus === 200;
  const status0 = inBand ? (code ?? 500) : httpStatus;
  const badKey = BAD_KEY.test(`${message ?? ""}${reasons}`);
  const failure = classifyHttpFailure({
    status: badKey ? 401 : status0,
    headers,
    body: bodyText,
    vendorCode: status,
    message,
    bodyRetryAfterSeconds: retryDelay,
    contextLength: status === "INVALID_ARGUMENT" && message !== undefined && CONTEXT_LENGTH.test(message),
    // "models/<id> is not found for API version v1beta, or is not supported for generateContent".
    modelNotFound: httpStatus === 404 && /\bmodels\/\S+ is not found\b/.test(message ?? ""),
  });
  if (!inBand && !badKey) return failure;
  return new ModelFailure(
    failure.category,
    inBand ? `the stream reported ${status ?? "an error"}: ${message ?? ""}` : failure.message,
    {
      retryable: failure.retryable,
      retryAfterSeconds: failure.retryAfterSeconds,
      vendorCode: status,
      vendorBody: bodyText,
      httpStatus,
    },
  );
}

/**
 * Gemini does not always give a function call an id; the adapter then makes one up, marked
 * with this prefix so it is never sent back as if Gemini had issued it.
 */
export const LOCAL_CALL_ID_PREFIX = "gemini_local_";

/** Whether a tool-use id came from Gemini (and so is echoed on the call and its response). */
export function isVendorCallId(id: string): boolean {
  return id !== "" && !id.startsWith(LOCAL_CALL_ID_PREFIX);
}

const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]);

interface State {
  usage: UsageMetadata | undefined;
  finish: string | undefined;
  sawCall: boolean;
  calls: number;
  responseId: string | undefined;
  model: string | undefined;
  tier: string | undefined;
}

/**
 * Translates the response body; stream_start carries the first chunk's responseId (Gemini
 * sends no request-id header). Once `stop` has matched, nothing the model produces afterwards
 * is forwarded (text, thoughts, signatures, function calls), but the body is still read to
 * its end for the final usage.
 */
export async function* translateStream(
  body: ReadableStream<Uint8Array> | null,
  signal: AbortSignal,
  names: ToolNameMap,
  stop: StopSequenceMatcher,
  notices: WireNotices,
): AsyncGenerator<StreamEventInit> {
  const s: State = {
    usage: undefined,
    finish: undefined,
    sawCall: false,
    calls: 0,
    responseId: undefined,
    model: undefined,
    tier: undefined,
  };
  let blocked: string | undefined;
  // Text held back as a possible start of a stop sequence goes out before any other part, so
  // the event order follows the parts (a sequence cannot span a non-text part).
  const release = function* (): Generator<StreamEventInit> {
    const held = stop.flush();
    if (held) yield ev.text(held);
  };
  for await (const sse of readSse(body, signal)) {
    const raw = parseEventJson(sse);
    if (raw["error"]) throw geminiFailure(200, sse.data);
    const chunk = readValue(Chunk, raw, "GenerateContentResponse", notices);
    if (!chunk) continue;
    if (s.responseId === undefined && chunk.responseId !== undefined) {
      s.responseId = chunk.responseId;
      yield ev.start(s.responseId);
    }
    const model = chunk.modelVersion;
    const usage =
      chunk.usageMetadata === undefined
        ? undefined
        : readValue(UsageMetadata, chunk.usageMetadata, "usageMetadata", notices);
    const tier = usage?.serviceTier;
    if ((model && model !== s.model) || (tier && tier !== s.tier)) {
      s.model = model ?? s.model;
      s.tier = tier ?? s.tier;
      yield ev.metadata({ ...(model ? { actualModel: model } : {}), ...(tier ? { serviceTier: tier } : {}) });
    }
    // Usage is cumulative on every chunk: the latest wins.
    if (usage) s.usage = usage;
    if (chunk.promptFeedback?.blockReason !== undefined) blocked = chunk.promptFeedback.blockReason;
    const candidate = chunk.candidates?.[0];
    if (!candidate) continue;
    for (const rawPart of candidate.content?.parts ?? []) {
      if (stop.matched !== undefined) break;
      const part = readPart(rawPart, notices);
      if (!part) continue;
      const signature = part.thoughtSignature;
      const call = part.functionCall;
      if (part.thought === true || signature !== undefined || call) yield* release();
      if (part.thought === true) {
        if (part.text) yield ev.thinking(part.text);
        if (signature !== undefined) yield ev.signature(signature);
        continue;
      }
      // The signature belongs to the reasoning before this part: it comes first.
      if (signature !== undefined) yield ev.signature(signature);
      if (call) {
        const id = call.id ? call.id : `${LOCAL_CALL_ID_PREFIX}${s.responseId ?? "call"}_${s.calls}`;
        s.calls++;
        s.sawCall = true;
        yield ev.toolStart(id, names.fromVendor(call.name));
        yield ev.toolDelta(id, argumentsJson(call.args ?? {}));
        yield ev.toolDone(id);
      } else if (part.text) {
        const out = stop.push(part.text);
        if (out) yield ev.text(out);
      }
    }
    if (candidate.finishReason !== undefined) s.finish = candidate.finishReason;
  }

  if (s.finish === undefined && !blocked) throw transportFailure("the stream ended without a finishReason");
  yield* release();
  yield ev.usage(usageOf(s.usage));
  // Whatever Gemini says about how it ended concerns output after the match, which was dropped.
  if (stop.matched !== undefined) {
    yield ev.stop(StopReason.STOP_SEQUENCE, stop.matched);
    return;
  }
  if (blocked !== undefined) {
    const reason = blocked;
    yield ev.safety(SafetyKind.MODERATION, `the prompt was blocked (${reason})`, { block_reason: reason });
    yield ev.stop(StopReason.CONTENT_FILTERED);
    return;
  }
  const finish = s.finish!;
  if (finish === "MALFORMED_FUNCTION_CALL")
    throw new ModelFailure("unknown", "the model produced a malformed function call", {
      retryable: true,
      vendorCode: finish,
    });
  if (FILTERED.has(finish)) {
    yield ev.safety(SafetyKind.MODERATION, `generation stopped by the vendor (${finish})`, {
      finish_reason: finish,
    });
    yield ev.stop(StopReason.CONTENT_FILTERED);
    return;
  }
  if (finish === "MAX_TOKENS") yield ev.stop(StopReason.MAX_TOKENS);
  // Function calls finish with STOP: tool use is read from the parts.
  else if (s.sawCall) yield ev.stop(StopReason.TOOL_USE);
  else yield ev.stop(StopReason.END_TURN, undefined, finish === "STOP");
}

/**
 * A part of a kind the adapter reads, typed; a part of another kind (code execution, inline
 * data, …) is reported by its field name, and a malformed one as malformed.
 */
function readPart(raw: unknown, notices: WireNotices): Part | undefined {
  const fields = typeof raw === "object" && raw !== null ? Object.keys(raw) : [];
  if (!fields.some((f) => PART_FIELDS.has(f))) {
    notices.unknown(`part.${fields[0] ?? "(empty)"}`);
    return undefined;
  }
  return readValue(Part, raw, "part", notices);
}

function usageOf(u: UsageMetadata | undefined) {
  const prompt = u?.promptTokenCount ?? 0;
  const cached = u?.cachedContentTokenCount;
  const thoughts = u?.thoughtsTokenCount;
  const components: Array<{ name: string; value: number }> = [];
  const toolPrompt = u?.toolUsePromptTokenCount;
  if (toolPrompt !== undefined) components.push({ name: "toolUsePromptTokenCount", value: toolPrompt });
  for (const d of u?.promptTokensDetails ?? []) {
    if (d.modality !== undefined && d.tokenCount !== undefined)
      components.push({ name: `promptTokensDetails.${d.modality}`, value: d.tokenCount });
  }
  return {
    // promptTokenCount includes the cached part; the kernel's counters do not overlap.
    input: prompt - (cached ?? 0),
    output: u?.candidatesTokenCount ?? 0,
    cacheRead: cached,
    // Thoughts are counted apart from candidates by the vendor.
    reasoning: thoughts,
    vendorTotal: u?.totalTokenCount,
    components,
  };
}
