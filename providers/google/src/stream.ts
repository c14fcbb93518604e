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
  type StopSequenceMatcher,
  type StreamEventInit,
  type ToolNameMap,
  transportFailure,
} from "@pluggableharness/model-kit";
import { SafetyKind, StopReason } from "@pluggableharness/protocol/model";

type Json = Record<string, unknown>;

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
    const err = (JSON.parse(bodyText) as Json)["error"] as Json | undefined;
    if (err && typeof err === "object") {
      code = typeof err["code"] === "number" ? err["code"] : undefined;
      status = typeof err["status"] === "string" ? err["status"] : undefined;
      message = typeof err["message"] === "string" ? err["message"] : undefined;
      for (const d of Array.isArray(err["details"]) ? (err["details"] as Json[]) : []) {
        if (String(d["@type"]).endsWith("google.rpc.RetryInfo") && typeof d["retryDelay"] === "string")
          retryDelay = parseDurationSeconds(d["retryDelay"]);
        if (typeof d["reason"] === "string") reasons += ` ${d["reason"]}`;
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

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);

interface State {
  usage: Json | undefined;
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
  let blocked: Json | undefined;
  // Text held back as a possible start of a stop sequence goes out before any other part, so
  // the event order follows the parts (a sequence cannot span a non-text part).
  const release = function* (): Generator<StreamEventInit> {
    const held = stop.flush();
    if (held) yield ev.text(held);
  };
  for await (const sse of readSse(body, signal)) {
    const chunk = parseEventJson(sse);
    if (chunk["error"]) throw geminiFailure(200, sse.data);
    if (s.responseId === undefined && typeof chunk["responseId"] === "string") {
      s.responseId = chunk["responseId"];
      yield ev.start(s.responseId);
    }
    const model = typeof chunk["modelVersion"] === "string" ? chunk["modelVersion"] : undefined;
    const usage = chunk["usageMetadata"] as Json | undefined;
    const tier = usage && typeof usage["serviceTier"] === "string" ? usage["serviceTier"] : undefined;
    if ((model && model !== s.model) || (tier && tier !== s.tier)) {
      s.model = model ?? s.model;
      s.tier = tier ?? s.tier;
      yield ev.metadata({ ...(model ? { actualModel: model } : {}), ...(tier ? { serviceTier: tier } : {}) });
    }
    // Usage is cumulative on every chunk: the latest wins.
    if (usage) s.usage = usage;
    const feedback = chunk["promptFeedback"] as Json | undefined;
    if (feedback && typeof feedback["blockReason"] === "string") blocked = feedback;
    const candidate = (Array.isArray(chunk["candidates"]) ? chunk["candidates"][0] : undefined) as
      | Json
      | undefined;
    if (!candidate) continue;
    const content = candidate["content"] as Json | undefined;
    for (const part of Array.isArray(content?.["parts"]) ? (content["parts"] as Json[]) : []) {
      if (stop.matched !== undefined) break;
      const signature = typeof part["thoughtSignature"] === "string" ? part["thoughtSignature"] : undefined;
      const call = part["functionCall"] as Json | undefined;
      if (part["thought"] === true || signature !== undefined || call) yield* release();
      if (part["thought"] === true) {
        if (typeof part["text"] === "string" && part["text"] !== "") yield ev.thinking(part["text"]);
        if (signature !== undefined) yield ev.signature(signature);
        continue;
      }
      // The signature belongs to the reasoning before this part: it comes first.
      if (signature !== undefined) yield ev.signature(signature);
      if (call) {
        const id =
          typeof call["id"] === "string" && call["id"] !== ""
            ? call["id"]
            : `${LOCAL_CALL_ID_PREFIX}${s.responseId ?? "call"}_${s.calls}`;
        s.calls++;
        s.sawCall = true;
        yield ev.toolStart(id, names.fromVendor(String(call["name"])));
        yield ev.toolDelta(id, argumentsJson(call["args"] ?? {}));
        yield ev.toolDone(id);
      } else if (typeof part["text"] === "string" && part["text"] !== "") {
        const out = stop.push(part["text"]);
        if (out) yield ev.text(out);
      }
    }
    if (typeof candidate["finishReason"] === "string") s.finish = candidate["finishReason"];
  }

  if (s.finish === undefined && !blocked) throw transportFailure("the stream ended without a finishReason");
  yield* release();
  yield ev.usage(usageOf(s.usage));
  // Whatever Gemini says about how it ended concerns output after the match, which was dropped.
  if (stop.matched !== undefined) {
    yield ev.stop(StopReason.STOP_SEQUENCE, stop.matched);
    return;
  }
  if (blocked) {
    const reason = String(blocked["blockReason"]);
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

function usageOf(u: Json | undefined) {
  const prompt = num(u?.["promptTokenCount"]) ?? 0;
  const cached = num(u?.["cachedContentTokenCount"]);
  const thoughts = num(u?.["thoughtsTokenCount"]);
  const components: Array<{ name: string; value: number }> = [];
  const toolPrompt = num(u?.["toolUsePromptTokenCount"]);
  if (toolPrompt !== undefined) components.push({ name: "toolUsePromptTokenCount", value: toolPrompt });
  for (const d of Array.isArray(u?.["promptTokensDetails"]) ? (u["promptTokensDetails"] as Json[]) : []) {
    if (typeof d["modality"] === "string" && typeof d["tokenCount"] === "number")
      components.push({ name: `promptTokensDetails.${d["modality"]}`, value: d["tokenCount"] });
  }
  return {
    // promptTokenCount includes the cached part; the kernel's counters do not overlap.
    input: prompt - (cached ?? 0),
    output: num(u?.["candidatesTokenCount"]) ?? 0,
    cacheRead: cached,
    // Thoughts are counted apart from candidates by the vendor.
    reasoning: thoughts,
    vendorTotal: num(u?.["totalTokenCount"]),
    components,
  };
}
