// One streaming call to an OpenAI-family endpoint: send once (no retries), announce the
// vendor request id and the rate-limit budgets from the response headers before anything
// else (so they are known even when the answer is an error), classify a failed status, and
// hand a 200 body to the wire's stream parser.
import {
  ev,
  type FetchLike,
  type Logger,
  refuseHtml,
  type StreamEventInit,
  sendVendorRequest,
  type VendorResponse,
} from "@pluggableharness/model-kit";
import type { RateLimitSnapshot } from "@pluggableharness/protocol/model";
import { classifyHttpError } from "./errors.ts";
import { openaiRateLimits } from "./ratelimits.ts";

export interface OpenAICall {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  log: Logger;
  /** Response header carrying the vendor's request id (default x-request-id). */
  requestIdHeader?: string;
  fetch?: FetchLike;
}

export interface OpenedStream {
  response: VendorResponse;
  /** Snapshots from the response headers (also repeated on the usage event). */
  rateLimits: RateLimitSnapshot[];
}

/**
 * Sends the request, yields stream_start and metadata(rate_limits) from the headers, then
 * either throws the classified failure of a non-2xx answer or yields what `parse` makes of
 * the 200 body.
 */
export async function* streamOpenAI(
  call: OpenAICall,
  parse: (opened: OpenedStream) => AsyncIterable<StreamEventInit>,
): AsyncGenerator<StreamEventInit> {
  const response = await sendVendorRequest(
    {
      url: call.url,
      headers: { accept: "text/event-stream", ...call.headers },
      body: call.body,
      signal: call.signal,
    },
    call.fetch,
  );
  const requestId = response.headers.get(call.requestIdHeader ?? "x-request-id");
  if (requestId) yield ev.start(requestId);
  const rateLimits = openaiRateLimits(response.headers);
  if (rateLimits.length > 0) yield ev.metadata({ rateLimits });
  if (!response.ok) {
    const text = await response.text();
    call.log.debug("vendor error answer", { status: response.status, request_id: requestId ?? undefined });
    throw classifyHttpError(response.status, response.headers, text);
  }
  await refuseHtml(response);
  yield* parse({ response, rateLimits });
}
