// Gemini generateContent: with `alt=sse`, `data: <GenerateContentResponse>\r\n\r\n` frames and no
// terminator; without it, one JSON array streamed element by element.
import type { NormalizedTurn, NUsage } from "../normalize.ts";
import type { ErrorLike, StreamPlan, WireRenderer } from "./common.ts";

type Json = Record<string, unknown>;

const STATUS: Record<number, [status: string, message: string]> = {
  400: ["INVALID_ARGUMENT", "Request contains an invalid argument."],
  401: ["UNAUTHENTICATED", "Request had invalid authentication credentials."],
  403: ["PERMISSION_DENIED", "The caller does not have permission"],
  404: ["NOT_FOUND", "Requested entity was not found."],
  429: ["RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan."],
  500: [
    "INTERNAL",
    "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
  ],
  503: ["UNAVAILABLE", "The model is overloaded. Please try again later."],
  504: ["DEADLINE_EXCEEDED", "Deadline expired before operation could complete."],
};

export function geminiStatus(code: number): string {
  return STATUS[code]?.[0] ?? (code >= 500 ? "INTERNAL" : "INVALID_ARGUMENT");
}

function finishReason(turn: NormalizedTurn): string {
  if (turn.vendorStopReason) return turn.vendorStopReason;
  switch (turn.stopReason) {
    case "max_tokens":
      return "MAX_TOKENS";
    case "refusal":
    case "content_filter":
      return "SAFETY";
    default:
      // Function calls still finish with STOP; clients infer tool use from functionCall parts.
      return "STOP";
  }
}

/** Cumulative usage; candidatesTokenCount grows over the chunks and excludes thoughts. */
function usageMetadata(u: NUsage, candidates: number): Json {
  const prompt = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.cacheWrite1hTokens;
  const out: Json = {
    promptTokenCount: prompt,
    candidatesTokenCount: candidates,
    totalTokenCount: prompt + candidates + u.reasoningTokens,
  };
  if (u.cacheReadTokens > 0) out.cachedContentTokenCount = u.cacheReadTokens;
  out.promptTokensDetails = [{ modality: "TEXT", tokenCount: prompt }];
  if (u.cacheReadTokens > 0) out.cacheTokensDetails = [{ modality: "TEXT", tokenCount: u.cacheReadTokens }];
  if (u.reasoningTokens > 0) out.thoughtsTokenCount = u.reasoningTokens;
  if (u.serviceTier) out.serviceTier = u.serviceTier;
  return out;
}

function argsObject(json: string): unknown {
  try {
    const v = JSON.parse(json);
    return typeof v === "object" && v !== null ? v : {};
  } catch {
    return {};
  }
}

/** A functionCall part's value; the id only when the script gives one (Gemini 3 sends ids). */
function callOf(block: { name: string; argsJson: string; id: string | undefined }): Json {
  return {
    ...(block.id !== undefined ? { id: block.id } : {}),
    name: block.name,
    args: argsObject(block.argsJson),
  };
}

/** The parts of each streamed chunk, signatures placed as Gemini places them. */
function chunkParts(turn: NormalizedTurn): Json[][] {
  const chunks: Json[][] = [];
  let pending: string | undefined;
  let callGroup: Json[] | undefined;
  for (const block of turn.blocks) {
    if (block.type !== "tool_call") callGroup = undefined;
    switch (block.type) {
      case "thinking":
        for (const text of block.deltas) chunks.push([{ text, thought: true }]);
        if (block.signature !== undefined) pending = block.signature;
        break;
      case "redacted_thinking":
        // No Gemini equivalent: its opaque data travels as a thought signature.
        pending = block.data;
        break;
      case "text":
        for (const text of block.deltas) chunks.push([{ text }]);
        break;
      case "tool_call": {
        const part: Json = { functionCall: callOf(block) };
        const signature = block.signature ?? pending;
        if (signature !== undefined) part.thoughtSignature = signature;
        pending = undefined;
        // Parallel calls travel together in one chunk.
        if (callGroup) callGroup.push(part);
        else {
          callGroup = [part];
          chunks.push(callGroup);
        }
        break;
      }
    }
  }
  const last: Json = { text: "" };
  if (pending !== undefined) last.thoughtSignature = pending;
  chunks.push([last]);
  return chunks;
}

export const gemini: WireRenderer = {
  requestIdHeader: undefined,
  defaultModel: "gemini-2.5-flash",
  newRequestId: (ctx) => ctx.rng.base62(23),
  isStream: (ctx) => ctx.request.path.endsWith(":streamGenerateContent"),
  rateLimitHeaders: () => ({}),
  vendorHeaders: () => ({}),

  stream(turn, ctx): StreamPlan {
    const sse = ctx.request.query.alt === "sse";
    const eol = ctx.quirks.geminiLineEnding === "lf" ? "\n\n" : "\r\n\r\n";
    const responseId = turn.id ?? ctx.rng.base62(23);
    const chunks = chunkParts(turn);
    const finish = finishReason(turn);
    let first = true;
    const wrap = (json: string): string => {
      if (sse) return `data: ${json}${eol}`;
      const out = first ? `[${json}` : `,\r\n${json}`;
      first = false;
      return out;
    };

    // candidatesTokenCount excludes thoughts, so it grows only over the visible chunks.
    const visibleTotal = chunks.filter((parts) => !parts.some((p) => p.thought === true)).length;
    let visibleSeen = 0;

    function* frames(): Generator<string> {
      for (const [i, parts] of chunks.entries()) {
        const isLast = i === chunks.length - 1;
        const candidate: Json = { content: { parts, role: "model" } };
        if (isLast) candidate.finishReason = finish;
        candidate.index = 0;
        if (!parts.some((p) => p.thought === true)) visibleSeen++;
        const candidates = Math.round((turn.usage.outputTokens * visibleSeen) / visibleTotal);
        yield wrap(
          JSON.stringify({
            candidates: [candidate],
            usageMetadata: usageMetadata(turn.usage, candidates),
            modelVersion: ctx.model,
            responseId,
          }),
        );
      }
      if (!sse) yield "]";
    }

    return {
      contentType: sse ? "text/event-stream; charset=utf-8" : "application/json; charset=UTF-8",
      frames: frames(),
      errorFrames: (error) => {
        const code = 500;
        const body = {
          error: {
            code,
            message: error.message ?? STATUS[500]![1],
            status: error.errorType ?? geminiStatus(code),
          },
        };
        const framed = wrap(JSON.stringify(body));
        return sse ? [framed] : [framed, "]"];
      },
      malformedFrame: () =>
        sse
          ? `data: {"candidates":[{"content":{"parts":[{"text":"unterminated${eol}`
          : ',\r\n{"candidates":[{',
    };
  },

  json(turn, ctx) {
    const parts: Json[] = [];
    let pending: string | undefined;
    for (const block of turn.blocks) {
      if (block.type === "thinking") {
        parts.push({ text: block.text, thought: true });
        if (block.signature !== undefined) pending = block.signature;
      } else if (block.type === "redacted_thinking") {
        pending = block.data;
      } else {
        const part: Json = block.type === "text" ? { text: block.text } : { functionCall: callOf(block) };
        const signature = block.type === "tool_call" ? (block.signature ?? pending) : pending;
        if (signature !== undefined) part.thoughtSignature = signature;
        pending = undefined;
        parts.push(part);
      }
    }
    if (pending !== undefined) parts.push({ text: "", thoughtSignature: pending });
    return {
      candidates: [{ content: { parts, role: "model" }, finishReason: finishReason(turn), index: 0 }],
      usageMetadata: usageMetadata(turn.usage, turn.usage.outputTokens),
      modelVersion: ctx.model,
      responseId: turn.id ?? ctx.rng.base62(23),
    };
  },

  errorBody(error: ErrorLike) {
    const [status, message] = STATUS[error.status] ?? [geminiStatus(error.status), "Error"];
    const body: Json = {
      code: error.status,
      message: error.message ?? message,
      status: error.errorType ?? status,
    };
    if (error.status === 429 && error.retryAfterSeconds !== undefined) {
      body.details = [
        {
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [{ quotaId: "GenerateRequestsPerMinutePerProjectPerModel-FreeTier" }],
        },
        { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${error.retryAfterSeconds}s` },
      ];
    }
    return { error: body };
  },

  countTokensBody: (tokens) => ({
    totalTokens: tokens,
    promptTokensDetails: [{ modality: "TEXT", tokenCount: tokens }],
  }),
};
