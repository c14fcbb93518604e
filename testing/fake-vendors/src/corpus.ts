// The recorded-response corpus (corpus/manifest.json): real vendor streams from public
// sources and the error bodies vendors document, each with its provenance and what an
// adapter must make of it. This module loads the manifest and turns an entry into the exact
// bytes the fake serves (a `raw` script entry).
import { readFileSync } from "node:fs";
import type { RawResponse, VendorId } from "./types.ts";

export type CorpusVendor = Extract<
  VendorId,
  "anthropic" | "openai-responses" | "openai-chat" | "xai" | "gemini"
>;

export interface CorpusSource {
  repository?: string;
  path?: string;
  commit?: string;
  license?: string;
  /** A vendor documentation page, for bodies taken from the vendor's own docs. */
  docs?: string;
}

export interface CorpusExpectation {
  text?: string;
  textStartsWith?: string;
  textEndsWith?: string;
  thinking?: string;
  /** The opaque thinking or thought signature, exactly. */
  signature?: string;
  /** The signature is the one in the stream file (too long to repeat here). */
  signatureFile?: boolean;
  refusalText?: string;
  stop?: "end_turn" | "tool_use" | "max_tokens" | "refusal" | "stop_sequence" | "content_filtered";
  toolCalls?: Array<{ id?: string; name: string; input: unknown }>;
  /** Calls whose arguments never became valid JSON (the kernel answers them, never runs them). */
  invalidToolCalls?: string[];
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; reasoning?: number };
  components?: Record<string, number>;
  vendorCost?: { amount: string; unit: string };
  safety?: { category?: string };
  /** Replay the accumulated message as history and check the opaque token goes back unchanged. */
  roundTrip?: "anthropic-thinking" | "gemini-signature";
  error?: { category: string; retryable: boolean; httpStatus?: number; retryAfterSeconds?: number };
}

export interface CorpusStream {
  id: string;
  vendor: CorpusVendor;
  file: string;
  format: "sse" | "chunks";
  source: CorpusSource;
  notes?: string;
  expect: CorpusExpectation;
}

export interface CorpusError {
  id: string;
  vendor: CorpusVendor;
  status: number;
  headers?: Record<string, string>;
  /** The body as JSON, or `bodyText` verbatim, or `stream`: an SSE body in a 200. */
  body?: unknown;
  bodyText?: string;
  stream?: string;
  source: CorpusSource;
  expect: { category: string; retryable: boolean; retryAfterSeconds?: number; httpStatus?: number };
}

export interface Corpus {
  streams: CorpusStream[];
  errors: CorpusError[];
}

const DIR = new URL("../corpus/", import.meta.url);

export function loadCorpus(): Corpus {
  const manifest = JSON.parse(readFileSync(new URL("manifest.json", DIR), "utf8")) as Corpus;
  return { streams: manifest.streams, errors: manifest.errors };
}

/** The stream file's text, exactly as stored. */
export function corpusText(entry: CorpusStream): string {
  return readFileSync(new URL(entry.file, DIR), "utf8");
}

const SSE = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

/** SSE framing for one recorded JSON payload, as the vendor frames it on the wire. */
function frame(vendor: CorpusVendor, payload: string): string {
  const type = (JSON.parse(payload) as { type?: unknown }).type;
  switch (vendor) {
    case "anthropic":
    case "openai-responses":
      return `event: ${String(type)}\ndata: ${payload}\n\n`;
    case "gemini":
      return `data: ${payload}\r\n\r\n`;
    default:
      return `data: ${payload}\n\n`;
  }
}

/** The exact frames the fake serves for a stream entry. */
export function corpusFrames(entry: CorpusStream): string[] {
  const text = corpusText(entry);
  if (entry.format === "sse") return [text];
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const frames = lines.map((l) => frame(entry.vendor, l));
  if (entry.vendor === "openai-chat" || entry.vendor === "xai") frames.push("data: [DONE]\n\n");
  return frames;
}

/** A stream entry as a raw script response. */
export function corpusResponse(entry: CorpusStream): RawResponse {
  return { kind: "raw", status: 200, headers: SSE, frames: corpusFrames(entry) };
}

/** An error entry as a raw script response. */
export function corpusErrorResponse(entry: CorpusError): RawResponse {
  if (entry.stream !== undefined)
    return { kind: "raw", status: entry.status, headers: SSE, frames: [entry.stream] };
  const charset = entry.vendor === "gemini" ? "; charset=UTF-8" : "";
  return {
    kind: "raw",
    status: entry.status,
    headers: { "content-type": `application/json${charset}`, ...entry.headers },
    body: entry.bodyText ?? JSON.stringify(entry.body),
  };
}
