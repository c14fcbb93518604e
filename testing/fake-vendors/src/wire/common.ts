// What every wire renderer provides, plus small shared helpers.
import type { NormalizedTurn } from "../normalize.ts";
import type { Prng } from "../prng.ts";
import type { RateLimitSpec, RecordedRequest, VendorId } from "../types.ts";

/** Realism details that make parsers robust; all deterministic for a given seed. */
export interface Quirks {
  /** Anthropic: pad JSON objects with spaces before the closing brace, as recent recordings do. */
  anthropicPadding: boolean;
  /** OpenAI: add the random-length `obfuscation` field to delta events/chunks. */
  openaiObfuscation: boolean;
  /** Gemini SSE line ending: CRLF as seen on the wire, or LF. */
  geminiLineEnding: "crlf" | "lf";
}

export interface RenderContext {
  vendor: VendorId;
  request: RecordedRequest;
  /** The parsed request body, or {} when it was not a JSON object. */
  body: Record<string, unknown>;
  /** The model to report: the script's, else the requested one, else a vendor default. */
  model: string;
  rng: Prng;
  nowMs: number;
  quirks: Quirks;
}

/** Fields shared by HTTP error answers, validator rejections and in-band stream errors. */
export interface ErrorLike {
  status: number;
  errorType?: string;
  code?: string;
  message?: string;
  param?: string;
  retryAfterSeconds?: number;
}

export interface StreamPlan {
  contentType: string;
  /** The frames of a complete, successful stream, produced lazily. */
  frames: Iterable<string>;
  /** Frames that report an in-band error after `written` frames and end the stream. */
  errorFrames(error: Omit<ErrorLike, "status">, written: number): string[];
  /** A frame whose payload is not valid JSON. */
  malformedFrame(): string;
}

export interface WireRenderer {
  /** The header that carries the request id (undefined: the vendor sends none). */
  requestIdHeader: string | undefined;
  newRequestId(ctx: RenderContext): string;
  isStream(ctx: RenderContext): boolean;
  rateLimitHeaders(spec: RateLimitSpec, ctx: RenderContext): Record<string, string>;
  /** Extra fixed headers the vendor sends on every answer. */
  vendorHeaders(ctx: RenderContext): Record<string, string>;
  stream(turn: NormalizedTurn, ctx: RenderContext): StreamPlan;
  json(turn: NormalizedTurn, ctx: RenderContext): unknown;
  errorBody(error: ErrorLike, ctx: RenderContext, requestId: string | undefined): unknown;
  countTokensBody(tokens: number, ctx: RenderContext): unknown;
  defaultModel: string;
}

/** JSON with a space after every `:` and `,` outside strings, as some vendor frames are written. */
export function spacedJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(spacedJson).join(", ")}]`;
  const parts = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${JSON.stringify(k)}: ${spacedJson(v)}`);
  return `{${parts.join(", ")}}`;
}

export function stringField(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  return typeof v === "string" ? v : undefined;
}

export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
