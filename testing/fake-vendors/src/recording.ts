// Request recording and secret masking.
import type { RecordedRequest } from "./types.ts";

/** Header names whose values are credentials; masked whenever a request is printed. */
export const SECRET_HEADERS = new Set([
  "x-api-key",
  "authorization",
  "x-goog-api-key",
  "api-key",
  "proxy-authorization",
]);

/** Replaces a secret with a marker that reveals only its length. */
export function maskSecret(value: string): string {
  const bearer = /^(Bearer|Basic)\s+/i.exec(value);
  const prefix = bearer ? bearer[0] : "";
  return `${prefix}[masked ${value.length - prefix.length} chars]`;
}

/** The request's headers with credential values masked, safe to print or log. */
export function maskedHeaders(
  request: Pick<RecordedRequest, "headers">,
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (SECRET_HEADERS.has(name) && value !== undefined)
      out[name] = Array.isArray(value) ? value.map(maskSecret) : maskSecret(value);
    else out[name] = value;
  }
  return out;
}

function maskedUrl(url: string): string {
  return url.replace(/([?&]key=)[^&]*/g, (_m, k: string) => `${k}[masked]`);
}

/** A printable summary of a recorded request: credentials masked, raw body left out. */
export function describeRequest(request: RecordedRequest): Record<string, unknown> {
  return {
    seq: request.seq,
    vendor: request.vendor,
    endpoint: request.endpoint,
    method: request.method,
    url: maskedUrl(request.url),
    headers: maskedHeaders(request),
    apiKey: request.apiKey === undefined ? undefined : maskSecret(request.apiKey),
    model: request.model,
    stream: request.stream,
    bodyBytes: request.rawBody.length,
    rejected: request.rejected,
    exhausted: request.exhausted,
  };
}

/** Extracts the credential the vendor's clients send. */
export function extractApiKey(
  headers: Record<string, string | string[] | undefined>,
  query: Record<string, string>,
): string | undefined {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const auth = one("authorization");
  const bearer = auth ? /^Bearer\s+(.+)$/i.exec(auth)?.[1] : undefined;
  return one("x-api-key") ?? one("x-goog-api-key") ?? one("api-key") ?? bearer ?? query.key;
}

/**
 * Attaches a masked toJSON/inspect view to a recorded request so that printing it or
 * JSON.stringify-ing it (e.g. in a failed assertion or a benchmark report) never leaks the key.
 * The raw fields stay readable for tests that assert the key was sent.
 */
export function protect(request: RecordedRequest): RecordedRequest {
  Object.defineProperty(request, "toJSON", { value: () => describeRequest(request), enumerable: false });
  Object.defineProperty(request, Symbol.for("nodejs.util.inspect.custom"), {
    value: () => describeRequest(request),
    enumerable: false,
  });
  return request;
}
