// Gemini explicit caching: the kernel's cache breakpoints become one CachedContent
// resource holding the request's stable prefix (system instruction, tools, tool config
// and the leading contents up to the last breakpoint). The request then names the cache
// and carries only the rest. Caches are reused while they live, never created twice for
// the same prefix, and deleted when the provider is reconfigured or shut down. Creating
// a cache is an optimisation: when the vendor refuses (e.g. a prefix under its minimum
// size) the request goes out uncached, and implicit caching still applies.
import { createHash } from "node:crypto";
import type { JsonValue } from "@bufbuild/protobuf";
import { CancelledError, joinUrl, type Logger, sendVendorRequest } from "@pluggableharness/model-kit";
import type { StreamCompletionRequest } from "@pluggableharness/protocol/model";

type Json = Record<string, JsonValue>;

/** Keys a GenerateContent request must not repeat once it names a cache. */
const CACHED_FIELDS = ["systemInstruction", "tools", "toolConfig"] as const;
/** A cache this close to expiry is not reused. */
const REUSE_MARGIN_MS = 30_000;

/**
 * How many leading contents the breakpoints ask to cache; undefined when they ask for
 * nothing. `lastIndex[i]` is the highest request message index merged into contents[i].
 * The last content is never cached: a request needs at least one content of its own.
 */
export function cachedPrefix(
  req: StreamCompletionRequest,
  lastIndex: readonly number[],
  body: Json,
): number | undefined {
  let prefix: number | undefined;
  for (const b of req.cacheBreakpoints) {
    const p = b.position;
    if (p.case === "afterAssembledContext" || p.case === "afterTools") prefix = Math.max(prefix ?? 0, 0);
    else if (p.case === "afterMessageIndex") {
      let n = 0;
      while (n < lastIndex.length && lastIndex[n]! <= Number(p.value)) n++;
      prefix = Math.max(prefix ?? 0, n);
    }
  }
  if (prefix === undefined) return undefined;
  prefix = Math.min(prefix, lastIndex.length - 1);
  const hasShared = CACHED_FIELDS.some((k) => body[k] !== undefined);
  return prefix > 0 || hasShared ? prefix : undefined;
}

export interface CacheTarget {
  baseUrl: string;
  apiKey: string;
  model: string;
  signal: AbortSignal;
}

export class ExplicitCaches {
  private readonly ttlSeconds: number;
  private readonly log: Logger;
  private readonly live = new Map<
    string,
    { name: string; expiresAt: number; baseUrl: string; apiKey: string }
  >();
  private readonly refused = new Set<string>();

  constructor(ttlSeconds: number, log: Logger) {
    this.ttlSeconds = ttlSeconds;
    this.log = log;
  }

  /** The request body to send: using a cache for the first `prefix` contents when possible. */
  async apply(body: Json, prefix: number, t: CacheTarget): Promise<Json> {
    const contents = body["contents"] as Json[];
    const cache: Json = { model: `models/${t.model}` };
    for (const k of CACHED_FIELDS) if (body[k] !== undefined) cache[k] = body[k]!;
    if (prefix > 0) cache["contents"] = contents.slice(0, prefix);
    const key = createHash("sha256").update(JSON.stringify(cache)).digest("hex");
    if (this.refused.has(key)) return body;
    let entry = this.live.get(key);
    if (!entry || entry.expiresAt - Date.now() < REUSE_MARGIN_MS) {
      const name = await this.create(cache, key, t);
      if (!name) return body;
      entry = { name, expiresAt: Date.now() + this.ttlSeconds * 1000, baseUrl: t.baseUrl, apiKey: t.apiKey };
      this.live.set(key, entry);
    }
    const out: Json = { ...body, contents: contents.slice(prefix), cachedContent: entry.name };
    for (const k of CACHED_FIELDS) delete out[k];
    return out;
  }

  private async create(cache: Json, key: string, t: CacheTarget): Promise<string | undefined> {
    try {
      const res = await sendVendorRequest({
        url: joinUrl(t.baseUrl, "/v1beta/cachedContents"),
        headers: { "x-goog-api-key": t.apiKey },
        body: { ...cache, ttl: `${this.ttlSeconds}s` },
        signal: t.signal,
      });
      const text = await res.text();
      if (!res.ok) {
        // A refusal for this prefix (too small, unsupported) will not change; a 429 or 5xx may.
        if (res.status >= 400 && res.status < 500 && res.status !== 429) this.refused.add(key);
        this.log.debug("explicit cache not created", { status: res.status });
        return undefined;
      }
      const name = (JSON.parse(text) as { name?: unknown }).name;
      if (typeof name !== "string" || !name.startsWith("cachedContents/")) return undefined;
      this.log.debug("explicit cache created", { name, ttl_seconds: this.ttlSeconds });
      return name;
    } catch (err) {
      if (err instanceof CancelledError) throw err;
      this.log.debug("explicit cache not created", { error: (err as Error).name });
      return undefined;
    }
  }

  /** Deletes every cache still alive (storage is billed by the hour); best effort. */
  async dispose(): Promise<void> {
    const entries = [...this.live.values()].filter((e) => e.expiresAt > Date.now());
    this.live.clear();
    const signal = AbortSignal.timeout(2_000);
    await Promise.all(
      entries.map((e) =>
        sendVendorRequest({
          url: joinUrl(e.baseUrl, `/v1beta/${e.name}`),
          method: "DELETE",
          headers: { "x-goog-api-key": e.apiKey },
          signal,
        })
          .then((r) => r.text())
          .catch(() => undefined),
      ),
    );
  }
}
