// A port for pacing model calls across kernels that share a vendor account (fleet mode's
// workers on several machines; docs/decisions/fleet.md). The kernel asks it before every
// model attempt and tells it of every rate limit the vendor answered, so one 429 with a
// retry-after holds back every kernel behind the same port, not only the one that got it.
// Without one (every ordinary run) nothing waits.

export interface VendorThrottle {
  /** Resolves when `provider` may be called; rejects or resolves early when `signal` aborts. */
  wait(provider: string, signal: AbortSignal): Promise<void>;
  /** The vendor answered `provider`'s call with a rate limit: nobody calls it for `retryAfterMs`. */
  rateLimited(provider: string, retryAfterMs: number): void;
}
