// Prompt-cache billing: the fake remembers the prompt prefixes it has seen and bills each
// request the way its vendor does (cache reads, cache writes, uncached input), by exact
// prefix match over the request's content blocks. The request side (which blocks a request
// has, where its breakpoints are) lives in prompt-segments.ts; this module only keeps the
// entries and applies each vendor's rules:
//
// - explicit breakpoints (Anthropic): only marked prefixes are written; a marker finds an
//   earlier entry at its own block or up to 20 blocks before it; prefixes under the model's
//   minimum are not cached; reads refresh the entry's lifetime;
// - automatic prefixes (OpenAI before GPT-5.6, xAI, Gemini implicit): every prefix is kept,
//   the longest live one is read (at least the minimum, optionally rounded down to blocks
//   past it), and writes are free and unreported;
// - implicit breakpoints (OpenAI GPT-5.6 and later): one managed breakpoint after the latest
//   user or tool input plus the explicit ones, the latest four written per request and billed
//   as cache writes; a read matches any earlier breakpoint, with no lookback limit.
//
// Tokens are estimated as UTF-8 bytes / 4 of each block's canonical text, one rule for every
// vendor, so that figures are comparable across harnesses.
import { createHash } from "node:crypto";

export interface CacheSegment {
  /** Canonical text of the block (cache markers removed): equal text, equal prefix. */
  text: string;
  tokens: number;
  /** An explicit breakpoint on this block, with its lifetime. */
  mark?: { ttl: "5m" | "1h" | "30m" | "12h" };
  /** What kind of input the block belongs to (the OpenAI implicit breakpoint needs it). */
  role?: "tool-definition" | "system" | "user" | "assistant" | "tool-result" | "other";
}

export interface CacheBill {
  /** Input neither read from nor written to a cache. */
  inputTokens: number;
  cacheReadTokens: number;
  /** Writes with the short (default) lifetime. */
  cacheWriteTokens: number;
  /** Anthropic 1 hour / OpenAI 12 hour writes. */
  cacheWriteLongTokens: number;
  /** Every input token of the request. */
  totalTokens: number;
}

export type CacheRule =
  | { kind: "explicit"; minTokens: number; lookback: number }
  | { kind: "automatic"; minTokens: number; blockTokens?: number; ttlMs: number }
  | { kind: "implicit-breakpoints"; minTokens: number; ttlMs: number; explicitOnly: boolean };

const TTL_MS: Record<NonNullable<CacheSegment["mark"]>["ttl"], number> = {
  "5m": 5 * 60_000,
  "1h": 60 * 60_000,
  "30m": 30 * 60_000,
  "12h": 12 * 60 * 60_000,
};

/** The fake's token estimate: UTF-8 bytes / 4, at least one token per non-empty block. */
export function estimateTokens(text: string): number {
  const bytes = Buffer.byteLength(text, "utf8");
  return bytes === 0 ? 0 : Math.max(1, Math.ceil(bytes / 4));
}

interface Entry {
  expiresAt: number;
}

/** One vendor's cache: entries keyed by scope (model, routing key) and prefix hash. */
export class PromptCacheStore {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  /** Bills one request and records what it writes. */
  bill(scope: string, segments: readonly CacheSegment[], rule: CacheRule): CacheBill {
    const hashes = prefixHashes(scope, segments);
    const through: number[] = [];
    let sum = 0;
    for (const s of segments) {
      sum += s.tokens;
      through.push(sum);
    }
    const total = sum;
    const now = this.now();
    const live = (i: number): boolean => {
      const e = this.entries.get(hashes[i]!);
      if (!e) return false;
      if (e.expiresAt <= now) {
        this.entries.delete(hashes[i]!);
        return false;
      }
      return true;
    };
    const put = (i: number, ttlMs: number) => {
      const key = hashes[i]!;
      const prev = this.entries.get(key);
      this.entries.set(key, { expiresAt: Math.max(prev?.expiresAt ?? 0, now + ttlMs) });
    };
    const bill = (read: number, write: number, writeLong: number): CacheBill => ({
      inputTokens: total - read - write - writeLong,
      cacheReadTokens: read,
      cacheWriteTokens: write,
      cacheWriteLongTokens: writeLong,
      totalTokens: total,
    });

    if (rule.kind === "automatic") {
      let hit = -1;
      for (let i = segments.length - 1; i >= 0; i--) {
        if (live(i)) {
          hit = i;
          break;
        }
      }
      let read = hit >= 0 ? through[hit]! : 0;
      if (read < rule.minTokens) read = 0;
      else if (rule.blockTokens)
        read = rule.minTokens + Math.floor((read - rule.minTokens) / rule.blockTokens) * rule.blockTokens;
      if (hit >= 0 && read > 0) put(hit, rule.ttlMs);
      for (let i = 0; i < segments.length; i++) put(i, rule.ttlMs);
      return bill(read, 0, 0);
    }

    if (rule.kind === "explicit") {
      const marks = segments.flatMap((s, i) => (s.mark ? [i] : []));
      let hit = -1;
      for (const m of marks) {
        for (let i = m; i >= Math.max(0, m - rule.lookback); i--) {
          if (i > hit && live(i)) {
            hit = i;
            break;
          }
        }
      }
      const read = hit >= 0 ? through[hit]! : 0;
      if (hit >= 0) put(hit, TTL_MS[segments[hit]?.mark?.ttl ?? "5m"]);
      // Everything up to the last marker past the hit is written once; a 1 hour marker must
      // precede any 5 minute one, so the tokens up to the last 1 hour marker are long writes.
      const writes = marks.filter((m) => m > hit && through[m]! >= rule.minTokens);
      if (writes.length === 0) return bill(read, 0, 0);
      const last = writes.at(-1)!;
      const lastLong = writes.filter((m) => segments[m]!.mark!.ttl === "1h").at(-1);
      for (const m of writes) put(m, TTL_MS[segments[m]!.mark!.ttl]);
      const longUntil = lastLong !== undefined ? through[lastLong]! : read;
      return bill(read, through[last]! - longUntil, longUntil - read);
    }

    // Implicit breakpoints: the managed one after the latest user or tool input, unless the
    // request asked for explicit breakpoints only.
    const explicit = segments.flatMap((s, i) => (s.mark ? [i] : []));
    const implicit = rule.explicitOnly
      ? undefined
      : segments.findLastIndex((s) => s.role === "user" || s.role === "tool-result");
    const written = [
      ...explicit.slice(rule.explicitOnly ? -4 : -3),
      ...(implicit !== undefined && implicit >= 0 ? [implicit] : []),
    ].sort((a, b) => a - b);
    let hit = -1;
    for (let i = segments.length - 1; i >= 0; i--) {
      if (live(i)) {
        hit = i;
        break;
      }
    }
    let read = hit >= 0 ? through[hit]! : 0;
    if (read < rule.minTokens) {
      read = 0;
      hit = -1;
    }
    if (hit >= 0) put(hit, rule.ttlMs);
    const writes = written.filter((m) => m > hit && through[m]! >= rule.minTokens);
    let short = 0;
    let long = 0;
    let from = read;
    for (const m of writes) {
      const ttl = segments[m]!.mark?.ttl === "12h" ? TTL_MS["12h"] : rule.ttlMs;
      const n = through[m]! - from;
      if (segments[m]!.mark?.ttl === "12h") long += n;
      else short += n;
      from = through[m]!;
      put(m, ttl);
    }
    return bill(read, short, long);
  }

  /** Forgets everything (a test can simulate expiry or a cold start). */
  clear(): void {
    this.entries.clear();
  }
}

function prefixHashes(scope: string, segments: readonly CacheSegment[]): string[] {
  const out: string[] = [];
  let h = createHash("sha256").update(scope).digest("hex");
  for (const s of segments) {
    h = createHash("sha256").update(h).update("\u0000").update(s.text).digest("hex");
    out.push(h);
  }
  return out;
}
