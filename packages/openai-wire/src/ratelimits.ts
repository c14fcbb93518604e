// OpenAI's `x-ratelimit-*` headers (also sent by xAI and by some compatible gateways):
// a request budget and a token budget, each with limit, remaining and a reset given as a
// Go duration ("1s", "6m0s", "120ms"). Reported exactly as sent; absent headers stay absent.
import { type RateLimitHeaderFamily, rateLimitsFromHeaders } from "@pluggableharness/model-kit";
import { RateLimitKind, type RateLimitSnapshot } from "@pluggableharness/protocol/model";

export const OPENAI_RATE_LIMIT_HEADERS: readonly RateLimitHeaderFamily[] = [
  {
    kind: RateLimitKind.REQUESTS,
    limit: "x-ratelimit-limit-requests",
    remaining: "x-ratelimit-remaining-requests",
    reset: "x-ratelimit-reset-requests",
    resetFormat: "duration",
    limitId: "requests",
  },
  {
    kind: RateLimitKind.TOKENS,
    limit: "x-ratelimit-limit-tokens",
    remaining: "x-ratelimit-remaining-tokens",
    reset: "x-ratelimit-reset-tokens",
    resetFormat: "duration",
    limitId: "tokens",
  },
];

export function openaiRateLimits(headers: Headers, nowMs = Date.now()): RateLimitSnapshot[] {
  return rateLimitsFromHeaders(headers, OPENAI_RATE_LIMIT_HEADERS, nowMs);
}
