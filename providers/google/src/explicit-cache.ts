// Gemini explicit caching: the kernel's stable-prefix breakpoints (after the tools, after
// the assembled context) become one CachedContent resource holding the system instruction,
// tools and tool config. The request then names the cache and carries only the rest.
// Conversation breakpoints (after_message_index) are left to Gemini's implicit caching, which
// reuses every earlier prompt prefix at no storage cost: a CachedContent cannot grow, so
// following the conversation tail would create (and bill, at the input rate plus storage) a
// new cache every step, each read at most once.
// Caches are reused while they live, never created twice for the same prefix, and deleted
// when the provider is reconfigured or shut down. Creating a cache is an optimisation: when
// the vendor refuses (e.g. a prefix under its minimum size) the request goes out uncached.
// A creation is billed: its tokens once at the input rate, and their storage for the
// cache's lifetime; apply() returns both so the stream can report them to the ledger.
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
 * How many leading contents to cache explicitly: 0 (system instruction, tools and tool
 * config only) when a stable-prefix breakpoint asks for caching and the body has such a
 * prefix; undefined otherwise. Message breakpoints never grow an explicit cache (see above).
 */
export function cachedPrefix(req: StreamCompletionRequest, body: Json): number | undefined {
  const stable = req.cacheBreakpoints.some(
    (b) => b.position.case === "afterAssembledContext" || b.position.case === "afterTools",
  );
  return stable && CACHED_FIELDS.some((k) => body[k] !== undefined) ? 0 : undefined;
}

/** A cache this request created: billed once at the input rate, and stored for its lifetime. */
export interface CacheCreation {
  tokens: number;
  ttlSeconds: number;
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

  /** The request body to send, using a cache for the first `prefix` contents when possible. */
  async apply(body: Json, prefix: number, t: CacheTarget): Promise<{ body: Json; created?: CacheCreation }> {
    const contents = body["contents"] as Json[];
    const cache: Json = { model: `models/${t.model}` };
    for (const k of CACHED_FIELDS) if (body[k] !== undefined) cache[k] = body[k]!;
    if (prefix > 0) cache["contents"] = contents.slice(0, prefix);
    const key = createHash("sha256").update(JSON.stringify(cache)).digest("hex");
    if (this.refused.has(key)) return { body };
    let entry = this.live.get(key);
    let created: CacheCreation | undefined;
    if (!entry || entry.expiresAt - Date.now() < REUSE_MARGIN_MS) {
      const made = await this.create(cache, key, t);
      if (!made) return { body };
      entry = {
        name: made.name,
        expiresAt: Date.now() + this.ttlSeconds * 1000,
        baseUrl: t.baseUrl,
        apiKey: t.apiKey,
      };
      this.live.set(key, entry);
      created = { tokens: made.tokens, ttlSeconds: this.ttlSeconds };
    }
    const out: Json = { ...body, contents: contents.slice(prefix), cachedContent: entry.name };
    for (const k of CACHED_FIELDS) delete out[k];
    return created ? { body: out, created } : { body: out };
  }

  private async create(
    cache: Json,
    key: string,
    t: CacheTarget,
  ): Promise<{ name: string; tokens: number } | undefined> {
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
      const parsed = JSON.parse(text) as { name?: unknown; usageMetadata?: { totalTokenCount?: unknown } };
      const name = parsed.name;
      if (typeof name !== "string" || !name.startsWith("cachedContents/")) return undefined;
      const count = parsed.usageMetadata?.totalTokenCount;
      const tokens = typeof count === "number" && Number.isFinite(count) && count > 0 ? Math.trunc(count) : 0;
      this.log.debug("explicit cache created", { name, ttl_seconds: this.ttlSeconds, tokens });
      return { name, tokens };
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
