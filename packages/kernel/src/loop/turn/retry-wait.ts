// How long to wait before retrying a failed model or tool attempt: exponential backoff with
// jitter, the vendor's retry-after as a floor, the operator's cap as a ceiling. A leaf, so
// tool-exec.ts need not load model-call.ts for it.
import type { LoopDeps } from "../deps.ts";

export interface RetryWait {
  /** What the kernel waits: the backoff or the vendor's retry-after, at most max_retry_delay_ms. */
  readonly delayMs: number;
  /** What the vendor's retry-after asked for, when it gave one. */
  readonly askedMs?: number;
  /** The wait was cut to settings.max_retry_delay_ms. */
  readonly capped: boolean;
}

/**
 * The wait before retry `n` (0-based): base * factor^n with equal jitter, never below the
 * vendor's retry_after, and never above settings.max_retry_delay_ms. A retry_after that is
 * not a number is ignored; one that is infinite or huge is cut like any other.
 */
export function retryWait(
  deps: Pick<LoopDeps, "settings" | "clock">,
  n: number,
  retryAfterSeconds: number | undefined,
): RetryWait {
  const r = deps.settings.retry;
  const cap = deps.settings.max_retry_delay_ms;
  const exp = r.base_delay_ms * r.backoff_factor ** n;
  const jittered = exp / 2 + (exp / 2) * deps.clock.random();
  const asked =
    retryAfterSeconds === undefined || Number.isNaN(retryAfterSeconds)
      ? undefined
      : Math.max(0, retryAfterSeconds) * 1000;
  const wanted = Math.max(Number.isNaN(jittered) ? 0 : jittered, asked ?? 0);
  return {
    delayMs: Math.min(wanted, cap),
    ...(asked !== undefined ? { askedMs: asked } : {}),
    capped: wanted > cap,
  };
}

/** The wait before retry `n` in ms (retryWait's delay). */
export function retryDelayMs(
  deps: Pick<LoopDeps, "settings" | "clock">,
  n: number,
  retryAfterSeconds: number | undefined,
): number {
  return retryWait(deps, n, retryAfterSeconds).delayMs;
}
