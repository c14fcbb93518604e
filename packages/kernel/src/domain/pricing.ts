// Pricing tiers: exact coverage checking and per-event tier resolution.
//
// A tier is a rectangle [effective_from, effective_until) x [input_tokens_from,
// input_tokens_until) over (receipt time, input tokens); an omitted bound is unbounded on
// its side, and input tokens start at 0. A valid tier set partitions that whole plane.
// The check is exact: every tier bound becomes a breakpoint, which cuts the plane into
// cells each tier covers entirely or not at all, and every cell must be covered once.
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { Pricing, PricingTier } from "@pluggableharness/protocol/model";
import { PricingError } from "./errors.ts";
import { formatTimestamp, nanosToTimestamp, timestampToNanos } from "./time.ts";

interface Rect {
  readonly index: number;
  /** Undefined means unbounded. Time in epoch nanoseconds. */
  readonly tFrom?: bigint;
  readonly tUntil?: bigint;
  readonly kFrom: bigint;
  readonly kUntil?: bigint;
}

export type CoverageIssue =
  | { readonly kind: "empty"; readonly tier: number; readonly message: string }
  | { readonly kind: "gap"; readonly message: string }
  | { readonly kind: "overlap"; readonly tiers: readonly number[]; readonly message: string };

function rectOf(tier: PricingTier, index: number): Rect {
  return {
    index,
    ...(tier.effectiveFrom ? { tFrom: timestampToNanos(tier.effectiveFrom) } : {}),
    ...(tier.effectiveUntil ? { tUntil: timestampToNanos(tier.effectiveUntil) } : {}),
    kFrom: tier.inputTokensFrom ?? 0n,
    ...(tier.inputTokensUntil !== undefined ? { kUntil: tier.inputTokensUntil } : {}),
  };
}

function contains(r: Rect, t: bigint, k: bigint): boolean {
  return (
    (r.tFrom === undefined || r.tFrom <= t) &&
    (r.tUntil === undefined || t < r.tUntil) &&
    r.kFrom <= k &&
    (r.kUntil === undefined || k < r.kUntil)
  );
}

function sortedUnique(values: bigint[]): bigint[] {
  return [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function describeTime(from: bigint | undefined, until: bigint | undefined): string {
  const a = from === undefined ? "the beginning" : formatTimestamp(nanosToTimestamp(from));
  const b = until === undefined ? "forever" : formatTimestamp(nanosToTimestamp(until));
  return `from ${a} until ${b}`;
}

function describeTokens(from: bigint, until: bigint | undefined): string {
  return until === undefined ? `${from}+ input tokens` : `${from}..${until - 1n} input tokens`;
}

/** Every way a tier set fails to cover (time x input tokens) exactly once; empty when valid. */
export function checkTierCoverage(tiers: readonly PricingTier[]): CoverageIssue[] {
  const issues: CoverageIssue[] = [];
  const rects: Rect[] = [];
  for (const [i, tier] of tiers.entries()) {
    const r = rectOf(tier, i);
    if (r.kFrom < 0n || (r.kUntil !== undefined && r.kUntil < 0n)) {
      issues.push({ kind: "empty", tier: i, message: `tier #${i} has a negative input-token bound` });
    } else if (r.tFrom !== undefined && r.tUntil !== undefined && r.tFrom >= r.tUntil) {
      issues.push({ kind: "empty", tier: i, message: `tier #${i} ends before or when it starts` });
    } else if (r.kUntil !== undefined && r.kFrom >= r.kUntil) {
      issues.push({
        kind: "empty",
        tier: i,
        message: `tier #${i} has input_tokens_until <= input_tokens_from`,
      });
    } else {
      rects.push(r);
    }
  }
  if (issues.length > 0) return issues;
  if (rects.length === 0) return [{ kind: "gap", message: "no pricing tier is declared" }];

  const times = sortedUnique(
    rects.flatMap((r) => [r.tFrom, r.tUntil].filter((v): v is bigint => v !== undefined)),
  );
  const tokens = sortedUnique([
    0n,
    ...rects.flatMap((r) => [r.kFrom, r.kUntil].filter((v): v is bigint => v !== undefined)),
  ]);
  // Cells: time (-inf, t0), [t0, t1), ..., [tn, +inf); tokens [0, k1), ..., [km, +inf).
  const timeCells: { rep: bigint; from?: bigint; until?: bigint }[] = [];
  if (times.length === 0) timeCells.push({ rep: 0n });
  else {
    timeCells.push({ rep: times[0]! - 1n, until: times[0]! });
    for (let i = 0; i < times.length; i++) {
      const until = times[i + 1];
      timeCells.push({ rep: times[i]!, from: times[i]!, ...(until !== undefined ? { until } : {}) });
    }
  }
  const tokenCells: { from: bigint; until?: bigint }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const until = tokens[i + 1];
    tokenCells.push({ from: tokens[i]!, ...(until !== undefined ? { until } : {}) });
  }
  const seen = new Set<string>();
  for (const tc of timeCells) {
    for (const kc of tokenCells) {
      const covering = rects.filter((r) => contains(r, tc.rep, kc.from)).map((r) => r.index);
      if (covering.length === 1) continue;
      const where = `${describeTokens(kc.from, kc.until)} ${describeTime(tc.from, tc.until)}`;
      if (covering.length === 0) {
        issues.push({ kind: "gap", message: `no tier covers ${where}` });
      } else {
        const key = covering.join(",");
        if (seen.has(key)) continue;
        seen.add(key);
        issues.push({
          kind: "overlap",
          tiers: covering,
          message: `tiers ${covering.map((i) => `#${i}`).join(" and ")} overlap on ${where}`,
        });
      }
    }
  }
  return issues;
}

export interface ResolvedTier {
  readonly tier: PricingTier;
  readonly index: number;
}

/**
 * The tier for a usage event: the one containing (receipt time, that event's
 * input_tokens). Throws PricingError when none or several match (an unvalidated Pricing).
 */
export function resolvePricingTier(
  pricing: Pricing,
  receivedAt: Timestamp,
  inputTokens: bigint,
): ResolvedTier {
  const t = timestampToNanos(receivedAt);
  const matches = pricing.tiers
    .map((tier, index) => ({ tier, index }))
    .filter(({ tier, index }) => contains(rectOf(tier, index), t, inputTokens));
  if (matches.length === 1) return matches[0]!;
  const at = `${formatTimestamp(receivedAt)} with ${inputTokens} input tokens`;
  if (matches.length === 0) throw new PricingError(`no pricing tier matches ${at}`);
  throw new PricingError(`pricing tiers ${matches.map((m) => `#${m.index}`).join(", ")} all match ${at}`);
}
