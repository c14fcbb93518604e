// One HTTP request to a vendor, on Node's built-in fetch (undici). There are no retries
// here or anywhere in the kit: the kernel owns retry and fallback, so every failure is
// classified and returned at once. Aborting the signal aborts the request and the body.
import {
  causeCode,
  invalidResponse,
  isAbortError,
  transportFailure,
  UNREACHABLE_CODES,
  unreachable,
} from "./errors.ts";

export interface VendorRequest {
  url: string;
  method?: "POST" | "GET" | "DELETE";
  headers: Record<string, string>;
  /** JSON-encoded when given. */
  body?: unknown;
  signal: AbortSignal;
}

export interface VendorResponse {
  readonly status: number;
  readonly ok: boolean;
  readonly headers: Headers;
  /** The response body as a byte stream (consume once). */
  readonly body: ReadableStream<Uint8Array> | null;
  text(): Promise<string>;
}

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** Thrown when the caller's signal aborted: normal control flow, never reported as an error. */
export class CancelledError extends Error {
  constructor() {
    super("the request was cancelled");
    this.name = "CancelledError";
  }
}

/**
 * Sends the request once. Resolves with any HTTP status (classification is the caller's);
 * rejects with CancelledError when aborted; with a non-retryable "cannot reach <origin>"
 * failure when there is no connection at all (refused, unknown host, no route), and with a
 * retryable transport failure when a connection broke before an answer (reset). Error texts carry the host, never the
 * headers, so credentials cannot leak through them.
 */
export async function sendVendorRequest(
  req: VendorRequest,
  fetchImpl: FetchLike = fetch,
): Promise<VendorResponse> {
  if (req.signal.aborted) throw new CancelledError();
  let res: Response;
  try {
    res = await fetchImpl(req.url, {
      method: req.method ?? "POST",
      headers: req.body === undefined ? req.headers : { "content-type": "application/json", ...req.headers },
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      signal: req.signal,
      redirect: "error",
    });
  } catch (err) {
    if (isAbortError(err, req.signal)) throw new CancelledError();
    const code = causeCode(err);
    if (code && UNREACHABLE_CODES.has(code)) throw unreachable(hostOf(req.url), code);
    throw transportFailure(`no answer from ${hostOf(req.url)}`, err);
  }
  return {
    status: res.status,
    ok: res.ok,
    headers: res.headers,
    body: res.body,
    text: async () => {
      try {
        return await res.text();
      } catch (err) {
        if (isAbortError(err, req.signal)) throw new CancelledError();
        throw transportFailure(`the answer from ${hostOf(req.url)} was cut off`, err);
      }
    },
  };
}

/**
 * Refuses a successful answer that is an HTML page (a proxy's or captive portal's page, a
 * wrong base_url): an invalid response, not a stream that broke off. Its first bytes are
 * kept as the error's vendor body.
 */
export async function refuseHtml(res: VendorResponse): Promise<void> {
  const type = res.headers.get("content-type") ?? "";
  if (!/\btext\/html\b/i.test(type)) return;
  let excerpt = "";
  if (res.body) {
    const reader = res.body.getReader();
    try {
      const { value } = await reader.read();
      if (value) excerpt = new TextDecoder().decode(value.subarray(0, 512));
    } catch {
      // the excerpt is a courtesy
    } finally {
      void reader.cancel().catch(() => {});
    }
  }
  throw invalidResponse(
    `HTTP ${res.status} with an HTML page (${type}) instead of the API's answer: check base_url, or a proxy in between`,
    excerpt,
  );
}

/** scheme://host[:port] of a URL, for messages (paths may carry keys, e.g. `?key=`). */
export function hostOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "the vendor";
  }
}

/** Joins a base URL and a path with exactly one slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/**
 * Sends a token-count request and reads the count from `field` of its JSON answer. An error
 * status is the vendor's failure as `failure` classifies it; an answer without a numeric
 * count is one too, as a 502 (the vendor answered, but not with a count).
 */
export async function requestTokenCount(
  req: VendorRequest,
  field: string,
  failure: (status: number, body: string, headers?: Headers) => Error,
): Promise<number> {
  const res = await sendVendorRequest(req);
  const text = await res.text();
  if (!res.ok) throw failure(res.status, text, res.headers);
  const parsed: unknown = JSON.parse(text);
  const count = typeof parsed === "object" && parsed !== null ? Reflect.get(parsed, field) : undefined;
  if (typeof count !== "number") throw failure(502, text);
  return count;
}
