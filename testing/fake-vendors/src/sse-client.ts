// A small SSE reader for tests and benchmarks that talk to the fakes (or real vendors) directly.
import { createParser } from "eventsource-parser";

export interface SseEvent {
  /** The `event:` field, if any. */
  event: string | undefined;
  data: string;
  /** `data` parsed as JSON, or undefined when it is not JSON (e.g. `[DONE]`). */
  json: unknown;
}

function toEvent(event: string | undefined, data: string): SseEvent {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    json = undefined;
  }
  return { event, data, json };
}

/** Parses a complete SSE text (LF or CRLF framing). */
export function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  const parser = createParser({ onEvent: (e) => out.push(toEvent(e.event, e.data)) });
  parser.feed(text);
  parser.feed("\n\n");
  return out;
}

/** Yields events as they arrive on a fetch Response body. */
export async function* streamSse(response: Response): AsyncGenerator<SseEvent> {
  if (!response.body) return;
  const queue: SseEvent[] = [];
  const parser = createParser({ onEvent: (e) => queue.push(toEvent(e.event, e.data)) });
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift()!;
  }
  parser.feed(decoder.decode());
  while (queue.length > 0) yield queue.shift()!;
}

/** Reads a whole SSE response. */
export async function readSse(response: Response): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of streamSse(response)) out.push(e);
  return out;
}
