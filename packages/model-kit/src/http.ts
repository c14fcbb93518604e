// One HTTP request to a vendor, on Node's built-in fetch (undici). There are no retries
// here or anywhere in the kit: the kernel owns retry and fallback, so every failure is
// classified and returned at once. Aborting the signal aborts the request and the body.
import { isAbortError, transportFailure } from "./errors.ts";

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
 * rejects with CancelledError when aborted, and with a retryable ModelFailure when no
 * answer arrived at all (refused, reset, DNS). Error texts carry the host, never the
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
