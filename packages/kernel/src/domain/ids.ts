// Kernel-assigned identifiers. Message ids are ULIDs; time (and, in tests, randomness)
// is injected so the same inputs always produce the same ids.
import { monotonicFactory } from "ulid";

export type IdGenerator = () => string;

/**
 * A monotonic ULID generator reading time from `nowMillis`. `prng` returns floats in
 * [0, 1); the default is ulid's cryptographic source.
 */
export function ulidGenerator(nowMillis: () => number, prng?: () => number): IdGenerator {
  const next = prng ? monotonicFactory(prng) : monotonicFactory();
  return () => next(nowMillis());
}
