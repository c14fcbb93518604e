// Time and randomness the kernel depends on, injected so tests can run backoffs,
// wall-clock bounds and jitter without waiting or flaking.

export interface KernelClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` (or at once when `signal` aborts). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A number in [0, 1), used for retry jitter. */
  random(): number;
}

export const systemClock: KernelClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    }),
  random: () => Math.random(),
};
