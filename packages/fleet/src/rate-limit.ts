// The per-vendor rate limit shared by every worker (issue 37, point 4). When any session
// gets a 429, the kernel tells its VendorThrottle the vendor's retry-after; this one
// writes "paused until" for that provider into Redis, where every worker's kernels read it
// before their next model attempt, and pauses the queue (BullMQ's global rate limit), so
// no worker starts a new task during the window either. One 429 holds back the fleet
// instead of each worker finding the limit on its own.
import type { VendorThrottle } from "@pluggableharness/kernel";
import type { Redis } from "ioredis";

const KEY = (prefix: string, provider: string) => `${prefix}:pause:${provider}`;

/** The longest one wait sleeps before looking again (a longer pause may have been shortened). */
const MAX_SLEEP_MS = 1_000;

export class RedisThrottle implements VendorThrottle {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #onLimited: (ms: number) => void;

  constructor(redis: Redis, prefix: string, onLimited: (ms: number) => void = () => {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#onLimited = onLimited;
  }

  async wait(provider: string, signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) return;
      let left: number;
      try {
        left = await this.#redis.pttl(KEY(this.#prefix, provider));
      } catch {
        return; // Redis unreachable: the vendor's own answers pace the call
      }
      if (left <= 0) return;
      await sleep(Math.min(left, MAX_SLEEP_MS), signal);
    }
  }

  rateLimited(provider: string, retryAfterMs: number): void {
    const ms = Math.max(1, Math.ceil(retryAfterMs));
    // Only ever lengthened: a shorter retry-after from another worker must not cut a pause short.
    this.#redis
      .eval(
        "local t = redis.call('PTTL', KEYS[1]) if t < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end return 1",
        1,
        KEY(this.#prefix, provider),
        String(ms),
      )
      .catch(() => {});
    this.#onLimited(ms);
  }

  /** How long `provider` stays paused, in ms (0: not paused). */
  async pausedFor(provider: string): Promise<number> {
    return Math.max(0, await this.#redis.pttl(KEY(this.#prefix, provider)));
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
