// Rate-limit headers in each vendor's own format.
import type { RateLimitSpec, RateLimitWindow } from "./types.ts";

/** Go's time.Duration.String() for a non-negative number of seconds: "120ms", "1s", "6m0s", "1h0m0s". */
export function goDuration(seconds: number): string {
  if (seconds <= 0) return "0s";
  if (seconds < 1) {
    const ms = seconds * 1000;
    return `${trimFloat(ms)}ms`;
  }
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds - h * 3600 - m * 60;
  if (h > 0) return `${h}h${m}m${trimFloat(s)}s`;
  if (m > 0) return `${m}m${trimFloat(s)}s`;
  return `${trimFloat(s)}s`;
}

function trimFloat(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}

/** RFC 3339 instant with whole seconds, as Anthropic sends in `*-reset`. */
export function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export function anthropicRateLimitHeaders(spec: RateLimitSpec, nowMs: number): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (name: string, w: RateLimitWindow | undefined) => {
    if (!w) return;
    out[`anthropic-ratelimit-${name}-limit`] = String(w.limit);
    out[`anthropic-ratelimit-${name}-remaining`] = String(w.remaining);
    out[`anthropic-ratelimit-${name}-reset`] = rfc3339(nowMs + w.resetSeconds * 1000);
  };
  put("input-tokens", spec.inputTokens);
  put("output-tokens", spec.outputTokens);
  put("requests", spec.requests);
  put("tokens", spec.tokens);
  const priority = (name: string, w: RateLimitWindow | undefined) => {
    if (!w) return;
    out[`anthropic-priority-${name}-limit`] = String(w.limit);
    out[`anthropic-priority-${name}-remaining`] = String(w.remaining);
    out[`anthropic-priority-${name}-reset`] = rfc3339(nowMs + w.resetSeconds * 1000);
  };
  priority("input-tokens", spec.priorityInputTokens);
  priority("output-tokens", spec.priorityOutputTokens);
  return out;
}

/** OpenAI's (and xAI's OpenAI-compatible) `x-ratelimit-*` headers; resets are Go durations. */
export function openaiRateLimitHeaders(spec: RateLimitSpec): Record<string, string> {
  const out: Record<string, string> = {};
  const put = (name: string, w: RateLimitWindow | undefined) => {
    if (!w) return;
    out[`x-ratelimit-limit-${name}`] = String(w.limit);
    out[`x-ratelimit-remaining-${name}`] = String(w.remaining);
    out[`x-ratelimit-reset-${name}`] = goDuration(w.resetSeconds);
  };
  put("requests", spec.requests);
  put("tokens", spec.tokens);
  return out;
}

/** The same budgets with nothing left, for 429 answers. */
export function exhausted(spec: RateLimitSpec): RateLimitSpec {
  const zero = (w: RateLimitWindow | undefined) => (w ? { ...w, remaining: 0 } : undefined);
  return {
    requests: spec.requests,
    tokens: zero(spec.tokens),
    inputTokens: zero(spec.inputTokens),
    outputTokens: zero(spec.outputTokens),
    priorityInputTokens: zero(spec.priorityInputTokens),
    priorityOutputTokens: zero(spec.priorityOutputTokens),
  };
}
