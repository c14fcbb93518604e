// Kernel-assigned identifiers. Message ids are ULIDs; time (and, in tests, randomness)
// is injected so the same inputs always produce the same ids.
import { monotonicFactory } from "ulid";

export type IdGenerator = () => string;

/**
 * A monotonic ULID generator reading time from `nowMillis`. `prng` returns floats in
 * [0, 1); the default is a cryptographic source (pooledRandom).
 */
export function ulidGenerator(nowMillis: () => number, prng?: () => number): IdGenerator {
  const next = monotonicFactory(prng ?? pooledRandom());
  return () => next(nowMillis());
}

/**
 * The same cryptographic source as ulid's own, drawn 4 KiB at a time: ulid asks for one
 * byte per character, and a getRandomValues call per byte (16 per new id, several ids
 * per step) showed in the per-step CPU profile.
 */
export function pooledRandom(): () => number {
  const pool = new Uint8Array(4096);
  let at = pool.length;
  return () => {
    if (at === pool.length) {
      crypto.getRandomValues(pool);
      at = 0;
    }
    return pool[at++]! / 256;
  };
}
