// The remote transports' fetch, with every response body read through the clipper as it
// streams (docs/security/mcp.md): a JSON body is one message (or a batch), an event
// stream carries one message per event. What reaches the SDK is bounded by the clip limits
// however large the server's answer, as the stdio transport's lines are.
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type ClipLimits, JsonClipper, parseClipped } from "./clip.ts";

/** Longest line of an event stream kept apart from `data:` (event names, ids, comments). */
const MAX_FIELD = 4096;
/** Non-JSON `data:` (the legacy SSE transport's endpoint event) is passed on up to this size. */
const MAX_RAW_DATA = 64 * 1024;

function mediaType(res: Response): string {
  return (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
}

function headersWithout(res: Response, ...names: string[]): Headers {
  const h = new Headers(res.headers);
  for (const n of names) h.delete(n);
  return h;
}

/** The clipped message as JSON text with the clip report added, or undefined when not JSON. */
function finish(clipper: JsonClipper): string | undefined {
  const json = clipper.end();
  if (json === undefined) return undefined;
  if (!clipper.clipped && !json.includes('"pluggableharness/clipped"')) return json;
  const value = parseClipped(json, clipper.report);
  return value === undefined ? undefined : JSON.stringify(value);
}

async function clipJsonBody(res: Response, limits: ClipLimits): Promise<Response> {
  const clipper = new JsonClipper(limits);
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    clipper.write(decoder.decode(chunk, { stream: true }));
    if (clipper.report.invalid) break;
  }
  clipper.write(decoder.decode());
  // Not JSON: an empty body the SDK reports as a parse failure, as it would the original.
  const body = finish(clipper) ?? "";
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: headersWithout(res, "content-length", "content-encoding"),
  });
}

/** An event stream with each event's data clipped; other fields pass, cut to MAX_FIELD. */
export function clipEventStream(res: Response, limits: ClipLimits): Response {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const out: string[] = [];
  // At the start of a line the first few characters decide whether it is a data line.
  let mode: "start" | "data" | "field" = "start";
  let line = "";
  // The current event's data: streamed into a clipper, with a raw copy while it is small
  // (a non-JSON value such as the legacy transport's endpoint is passed on as it was).
  let data: JsonClipper | undefined;
  let raw: string | undefined = "";
  let dataLines = 0;

  const appendData = (text: string) => {
    data ??= new JsonClipper(limits);
    data.write(text);
    if (raw !== undefined) raw = raw.length + text.length > MAX_RAW_DATA ? undefined : raw + text;
  };
  const beginData = (value: string) => {
    if (dataLines++ > 0) appendData("\n");
    appendData(value);
  };
  const endEvent = () => {
    if (data) {
      const json = finish(data);
      const text = json ?? raw?.replace(/\r$/, "");
      if (text !== undefined) out.push(`data: ${text.replace(/\r?\n/g, "\ndata: ")}\n`);
    }
    out.push("\n");
    data = undefined;
    raw = "";
    dataLines = 0;
  };
  /** What the start of a line says it is, once there is enough of it (or the line ended). */
  const decide = (ended: boolean) => {
    if (line.startsWith("data:")) {
      const value = line.slice(line.startsWith("data: ") ? 6 : 5);
      mode = "data";
      line = "";
      beginData(value);
    } else if (ended || line.length >= 6 || !"data:".startsWith(line)) mode = "field";
  };
  const endLine = () => {
    if (mode === "start") decide(true);
    if (mode === "field") {
      const l = line.replace(/\r$/, "");
      if (l === "") endEvent();
      else out.push(`${l}\n`);
    } else if (raw !== undefined) raw = raw.replace(/\r$/, "");
    mode = "start";
    line = "";
  };
  const feed = (text: string) => {
    let at = 0;
    while (at < text.length) {
      const nl = text.indexOf("\n", at);
      let piece = nl < 0 ? text.slice(at) : text.slice(at, nl);
      at = nl < 0 ? text.length : nl + 1;
      if (mode === "start") {
        const need = Math.min(piece.length, 6 - line.length);
        line += piece.slice(0, need);
        piece = piece.slice(need);
        if (line.length >= 6 || nl >= 0 || !"data:".startsWith(line)) decide(false);
      }
      if (mode === "data") appendData(piece);
      else if (mode === "field" && line.length < MAX_FIELD) line = (line + piece).slice(0, MAX_FIELD);
      else if (mode === "start") line += piece;
      if (nl >= 0) endLine();
    }
  };

  const body = res.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        feed(decoder.decode(chunk, { stream: true }));
        if (out.length > 0) controller.enqueue(encoder.encode(out.splice(0).join("")));
      },
      flush(controller) {
        feed(decoder.decode());
        // A stream that stops mid-event: the event ends with it.
        if (line !== "" || mode !== "start") endLine();
        if (data) endEvent();
        if (out.length > 0) controller.enqueue(encoder.encode(out.splice(0).join("")));
      },
    }),
  );
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: headersWithout(res, "content-length", "content-encoding"),
  });
}

/** A body cut after `max` bytes; the rest is not read. */
function capBody(res: Response, max: number): Response {
  let seen = 0;
  const body = res.body!.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        if (seen >= max) return;
        const part = chunk.subarray(0, max - seen);
        seen += part.length;
        controller.enqueue(part);
        if (seen >= max) controller.terminate();
      },
    }),
  );
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: headersWithout(res, "content-length", "content-encoding"),
  });
}

/** `base` with each response body clipped as it streams. */
export function clippingFetch(limits: ClipLimits, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const res = await base(url, init);
    if (!res.body) return res;
    const type = mediaType(res);
    if (type === "application/json") return clipJsonBody(res, limits);
    if (type === "text/event-stream") return clipEventStream(res, limits);
    // Anything else (an error page) is read only for an error message: its first bytes do.
    return capBody(res, limits.maxTotal);
  };
}
