// Order statistics for benchmark samples. Percentiles use the nearest-rank method, so every
// reported figure is one that was actually measured.

export interface Summary {
  n: number;
  median: number;
  p95: number;
  min: number;
  max: number;
  mean: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** The median of an even count is the mean of the two middle samples. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function summarize(values: readonly number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  return {
    n: s.length,
    median: median(s),
    p95: percentile(s, 95),
    min: s[0] ?? Number.NaN,
    max: s[s.length - 1] ?? Number.NaN,
    mean: s.length === 0 ? Number.NaN : s.reduce((a, b) => a + b, 0) / s.length,
  };
}

export const nsToMs = (ns: bigint): number => Number(ns) / 1e6;
