// Server-sent events from a response body, parsed by eventsource-parser (LF and CRLF
// framing, frames split anywhere across reads, multi-byte characters split across reads).
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { invalidResponse, isAbortError, malformedFrame, transportFailure } from "./errors.ts";
import { CancelledError } from "./http.ts";

/**
 * Longest stretch, in milliseconds, that parsing may keep the event loop. A body that
 * arrives faster than it is parsed is read chunk after chunk in microtasks, so without a
 * break nothing scheduled for the next macrotask (the port's batched messages, held
 * deltas, a cancel or ping from the kernel) runs until the whole answer has been parsed.
 */
export const PARSE_SLICE_MS = 4;

export interface SseEvent {
  /** The `event:` name, when the vendor sends one (Anthropic, OpenAI Responses). */
  event: string | undefined;
  data: string;
  id: string | undefined;
}

/**
 * Yields each event as soon as its frame is complete. A body that breaks off mid-stream
 * raises a retryable transport ModelFailure; an aborted signal raises CancelledError.
 * Reaching the end of the body simply ends the iteration: whether that end was expected
 * is the adapter's judgement (it knows its vendor's terminal event).
 */
export async function* readSse(
  body: ReadableStream<Uint8Array> | null,
  signal: AbortSignal,
  sliceMs = PARSE_SLICE_MS,
): AsyncGenerator<SseEvent> {
  if (!body) throw invalidResponse("the vendor answered 200 without a body");
  const queue: SseEvent[] = [];
  // The parser's message already has SseEvent's shape: queued as it is, not copied.
  const parser = createParser({ onEvent: (e: EventSourceMessage) => queue.push(e as SseEvent) });
  const decoder = new TextDecoder("utf-8");
  const reader = body.getReader();
  const onAbort = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", onAbort, { once: true });
  let finished = false;
  // What came before the first event, to tell an empty or non-SSE answer from a stream.
  let events = 0;
  let head = "";
  /** The last decoded text, to tell whether the body ended on a complete line. */
  let last = "";
  let sliceStart = performance.now();
  /** Lets the event loop turn (call once the current slice is used up). */
  const breathe = async (): Promise<void> => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    sliceStart = performance.now();
  };
  try {
    for (;;) {
      if (performance.now() - sliceStart >= sliceMs) await breathe();
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal.aborted || isAbortError(err, signal)) throw new CancelledError();
        throw transportFailure("the vendor's stream broke off", err);
      }
      if (signal.aborted) throw new CancelledError();
      if (chunk.done) {
        finished = true;
        const rest = decoder.decode();
        if (rest) last = rest;
        if (events === 0 && head.length < 512) head += rest;
        // A body whose last line is complete but lacks the closing blank line (as the vendor
        // SDKs' own fixtures end) still delivers that last event, as the SDKs do; a body cut
        // mid-line does not, so a torn frame is never parsed as a whole one.
        parser.feed(/[\r\n]$/.test(last) ? `${rest}\n` : rest);
        parser.reset({ consume: true });
        events += queue.length;
        if (events === 0) {
          throw invalidResponse(
            head.trim() === ""
              ? "the vendor answered 200 with an empty body"
              : "the vendor answered 200 with something that is not an event stream",
            head,
          );
        }
        yield* queue.splice(0);
        return;
      }
      const text = decoder.decode(chunk.value, { stream: true });
      if (events === 0 && head.length < 512) head += text.slice(0, 512 - head.length);
      if (text) last = text;
      parser.feed(text);
      while (queue.length > 0) {
        events++;
        yield queue.shift()!;
        if (signal.aborted) throw new CancelledError();
        if (queue.length > 0 && performance.now() - sliceStart >= sliceMs) await breathe();
      }
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
    // A consumer that stops early releases the connection instead of leaving it open.
    if (!finished) void reader.cancel().catch(() => {});
  }
}

/** Parses an event's JSON data, or fails with a classified malformed-frame error. */
export function parseEventJson(event: SseEvent): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(event.data);
  } catch {
    throw malformedFrame("an event's data is not valid JSON", event.data);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw malformedFrame("an event's data is not a JSON object", event.data);
  return value as Record<string, unknown>;
}
