// Shared helpers for the fake-vendor tests.

import type { FakeVendor } from "../src/server.ts";
import { parseSse, type SseEvent } from "../src/sse-client.ts";

export const NO_QUIRKS = {
  anthropicPadding: false,
  openaiObfuscation: false,
  geminiLineEnding: "lf",
} as const;

export async function post(
  fake: FakeVendor,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<Response> {
  return fetch(fake.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

/** POSTs and parses the SSE answer. */
export async function postSse(
  fake: FakeVendor,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ res: Response; text: string; events: SseEvent[] }> {
  const res = await post(fake, path, body, headers);
  const text = await res.text();
  return { res, text, events: parseSse(text) };
}

export function jsonOf(events: SseEvent[]): Array<Record<string, unknown>> {
  return events.flatMap((e) => (e.json === undefined ? [] : [e.json as Record<string, unknown>]));
}

/** Reads a body to the end, returning what arrived and the error that ended it, if any. */
export async function readUntilError(res: Response): Promise<{ text: string; error: unknown }> {
  const decoder = new TextDecoder();
  let text = "";
  try {
    for await (const chunk of res.body!) text += decoder.decode(chunk, { stream: true });
    return { text, error: undefined };
  } catch (error) {
    return { text, error };
  }
}
