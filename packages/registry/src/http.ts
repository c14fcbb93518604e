// HTTP for forge APIs, mirrors and downloads. Redirects are followed by hand so that a
// credential only ever reaches the origin it belongs to (a GitHub asset redirects to a
// storage host, which must not see GITHUB_TOKEN); bodies are size-limited; every failure
// is a RegistryError naming the URL (never a header).
import { RegistryError } from "./errors.ts";

/** The fetch the registry uses (tests and offline runs pass their own). */
export type Fetch = typeof fetch;

/** A credential and the one origin it may be sent to. */
export interface Credential {
  /** "https://api.github.com" */
  origin: string;
  /** Header name and value, e.g. ["Authorization", "Bearer …"]. */
  header: readonly [string, string];
  /** Where it came from, for error messages: "GITHUB_TOKEN". */
  from: string;
  /** The bare secret, kept out of every message. */
  secret: string;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  credential?: Credential;
  /** Byte limit of the body. */
  limit: number;
  timeoutMs?: number;
  fetch?: Fetch;
  /** For messages: what is being fetched ("the release list of github.com/a/b"). */
  what: string;
  /** The variable that would hold a credential for this origin, named when one is missing. */
  credentialHint?: string;
}

const MAX_REDIRECTS = 5;
const DEFAULT_TIMEOUT_MS = 60_000;

/** The URL without query or fragment: a signed storage URL's query is a credential too. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

export interface Response {
  url: string;
  status: number;
  headers: Headers;
  body: Uint8Array;
}

/** GET `url`; a non-2xx answer is a RegistryError classified by status. */
export async function get(url: string, options: RequestOptions): Promise<Response> {
  const doFetch = options.fetch ?? fetch;
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const headers: Record<string, string> = { ...options.headers };
    const cred = options.credential;
    if (cred && new URL(current).origin === cred.origin) headers[cred.header[0]] = cred.header[1];
    let res: globalThis.Response;
    try {
      res = await doFetch(current, {
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new RegistryError("network", `Cannot fetch ${options.what} from ${displayUrl(current)}: ${why}.`);
    }
    if (res.status >= 300 && res.status < 400 && res.headers.get("location")) {
      await res.body?.cancel().catch(() => {});
      current = new URL(res.headers.get("location")!, current).href;
      continue;
    }
    if (res.status < 200 || res.status >= 300) {
      const text = await readLimited(res, 4096, options.what, current).catch(() => new Uint8Array());
      throw statusError(res, current, options, new TextDecoder().decode(text));
    }
    const declared = Number(res.headers.get("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > options.limit) {
      await res.body?.cancel().catch(() => {});
      throw tooLarge(options, current);
    }
    return {
      url: current,
      status: res.status,
      headers: res.headers,
      body: await readLimited(res, options.limit, options.what, current),
    };
  }
  throw new RegistryError(
    "bad_response",
    `Too many redirects fetching ${options.what} (last: ${displayUrl(current)}).`,
  );
}

export async function getJson(
  url: string,
  options: RequestOptions,
): Promise<{ json: unknown; res: Response }> {
  const res = await get(url, { ...options, headers: { Accept: "application/json", ...options.headers } });
  try {
    return { json: JSON.parse(new TextDecoder().decode(res.body)), res };
  } catch {
    throw new RegistryError(
      "bad_response",
      `${displayUrl(res.url)} did not answer JSON for ${options.what}.`,
    );
  }
}

function tooLarge(options: RequestOptions, url: string): RegistryError {
  return new RegistryError(
    "too_large",
    `${options.what} at ${displayUrl(url)} is larger than ${Math.round(options.limit / 1048576)} MiB; refused.`,
  );
}

async function readLimited(
  res: globalThis.Response,
  limit: number,
  what: string,
  url: string,
): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > limit) {
        await res.body.cancel().catch(() => {});
        throw tooLarge({ limit, what } as RequestOptions, url);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof RegistryError) throw err;
    throw new RegistryError(
      "network",
      `Download of ${what} from ${displayUrl(url)} broke off: ${(err as Error).message}.`,
    );
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

function statusError(
  res: globalThis.Response,
  url: string,
  options: RequestOptions,
  body: string,
): RegistryError {
  const where = displayUrl(url);
  const sentCredential = options.credential && new URL(url).origin === options.credential.origin;
  const remaining = res.headers.get("x-ratelimit-remaining");
  if (res.status === 429 || (res.status === 403 && remaining === "0")) {
    const reset = Number(res.headers.get("x-ratelimit-reset") ?? "NaN");
    const when = Number.isFinite(reset) ? ` It resets at ${new Date(reset * 1000).toISOString()}.` : "";
    return new RegistryError(
      "rate_limited",
      `${where} refused ${options.what}: the API rate limit is spent.${when}${sentCredential ? "" : " A token raises the limit."}`,
    );
  }
  if (res.status === 401 || res.status === 403) {
    return new RegistryError(
      "unauthorized",
      `${where} refused ${options.what} (HTTP ${res.status}): ${
        sentCredential
          ? `the credential from ${options.credential!.from} was not accepted.`
          : `it needs a credential${options.credentialHint ? ` (set ${options.credentialHint})` : ""}.`
      }`,
    );
  }
  if (res.status === 404) {
    return new RegistryError(
      "not_found",
      `${where}: ${options.what} was not found (HTTP 404).${
        sentCredential || !options.credentialHint
          ? ""
          : ` If the repository is private, set ${options.credentialHint}.`
      }`,
    );
  }
  // A misbehaving server could echo the request; the credential never reaches a message.
  const secret = options.credential?.secret;
  const cleaned = secret ? body.split(secret).join("[redacted]") : body;
  const snippet = cleaned.replace(/\s+/g, " ").trim().slice(0, 200);
  return new RegistryError(
    "bad_response",
    `${where} answered HTTP ${res.status} for ${options.what}${snippet ? `: ${snippet}` : "."}`,
  );
}
