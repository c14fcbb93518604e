// Cost of one usage event, computed by the kernel at receipt time from the reported token
// counts and the pricing tier matching (receipt time, prompt size):
//   input x input rate + output x output rate + cache writes x cache-write rate
//   + cache reads x cache-read rate + reasoning x output rate (skipped when the vendor
//   says reasoning is already inside output_tokens), every rate per million tokens,
//   + cache storage token-seconds x storage rate per million tokens per hour.
// The prompt size that picks an input-size tier is the whole prompt, as every vendor with
// such tiers counts it: uncached input + cache reads + cache writes (docs/decisions/vendors.md,
// "Input-size tiers count the whole prompt").
// The vendor's own figures (vendor_cost, vendor_total_tokens, rate_limits, components)
// are kept exactly as reported: never converted, derived, synthesised or summed.
import { clone, create } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { type UsageRecord, UsageRecordSchema } from "@pluggableharness/protocol/event";
import { type Pricing, type PricingTier, type Usage, UsageSchema } from "@pluggableharness/protocol/model";
import {
  addDecimals,
  type Decimal,
  decimalFromNumber,
  decimalToNumber,
  formatDecimal,
  isDecimalString,
  scaleDecimal,
} from "./decimal.ts";
import { PricingError } from "./errors.ts";
import { resolvePricingTier } from "./pricing.ts";

export interface CostBreakdown {
  /** The persisted figure: the double nearest the exact sum. */
  readonly costUsd: number;
  /** The exact sum in plain decimal notation. */
  readonly exact: string;
}

function term(tokens: bigint | undefined, rate: number | undefined, what: string): Decimal {
  if (tokens === undefined || tokens === 0n) return { numerator: 0n, scale: 0 };
  if (rate === undefined) {
    throw new PricingError(`usage reports ${tokens} ${what} tokens but the pricing tier has no ${what} rate`);
  }
  return scaleDecimal(decimalFromNumber(rate), tokens, 6);
}

/** Digits kept below the rate's own when a storage term is divided by 3600 (1e-12 USD and finer). */
const STORAGE_DIGITS = 12;

/** token-seconds x rate per million tokens per hour, rounded half up at STORAGE_DIGITS extra digits. */
function storageTerm(tokenSeconds: bigint | undefined, rate: number | undefined): Decimal {
  if (tokenSeconds === undefined || tokenSeconds === 0n) return { numerator: 0n, scale: 0 };
  if (rate === undefined) {
    throw new PricingError(
      `usage reports ${tokenSeconds} cache-storage token-seconds but the pricing tier has no cache storage rate`,
    );
  }
  const perHour = scaleDecimal(decimalFromNumber(rate), tokenSeconds, 6);
  const widened = perHour.numerator * 10n ** BigInt(STORAGE_DIGITS);
  return { numerator: (widened + 1800n) / 3600n, scale: perHour.scale + STORAGE_DIGITS };
}

/** The prompt size that selects an input-size tier: every input token, cached or not. */
export function tierInputTokens(usage: Usage): bigint {
  return usage.inputTokens + (usage.cacheReadTokens ?? 0n) + (usage.cacheWriteTokens ?? 0n);
}

/** The cost of one usage event under one tier, exactly (storage rounded at 1e-12 of a rate unit). */
export function computeCost(usage: Usage, tier: PricingTier): CostBreakdown {
  const reasoning = usage.reasoningAlreadyCounted === true ? undefined : usage.reasoningTokens;
  const terms = [
    term(usage.inputTokens, tier.inputPerMtok, "input"),
    term(usage.outputTokens, tier.outputPerMtok, "output"),
    term(usage.cacheWriteTokens, tier.cacheWritePerMtok, "cache-write"),
    term(usage.cacheReadTokens, tier.cacheReadPerMtok, "cache-read"),
    term(reasoning, tier.outputPerMtok, "reasoning"),
    storageTerm(usage.cacheStorageTokenSeconds, tier.cacheStoragePerMtokHour),
  ];
  const sum = terms.reduce(addDecimals, { numerator: 0n, scale: 0 });
  return { costUsd: decimalToNumber(sum), exact: formatDecimal(sum) };
}

/** A copy of the usage ready to persist: components sorted by name, everything else verbatim. */
export function normalizeUsage(usage: Usage): Usage {
  const out = clone(UsageSchema, usage);
  out.components = [...out.components].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return out;
}

/** Shape problems in a reported usage that the kernel records but does not repair. */
export function usageIssues(usage: Usage): string[] {
  const issues: string[] = [];
  for (const [name, v] of [
    ["input_tokens", usage.inputTokens],
    ["output_tokens", usage.outputTokens],
    ["cache_read_tokens", usage.cacheReadTokens],
    ["cache_write_tokens", usage.cacheWriteTokens],
    ["reasoning_tokens", usage.reasoningTokens],
    ["cache_storage_token_seconds", usage.cacheStorageTokenSeconds],
  ] as const) {
    if (v !== undefined && v < 0n) issues.push(`${name} is negative`);
  }
  if (usage.vendorCost) {
    if (!isDecimalString(usage.vendorCost.amount))
      issues.push("vendor_cost.amount is not an exact decimal string");
    if (!usage.vendorCost.unit) issues.push("vendor_cost.unit is empty");
  }
  return issues;
}

/**
 * Prices one usage event at its receipt time and returns the record to persist
 * (event.v1.UsageRecord). A free model without tiers costs 0 with tier index -1.
 */
export function recordUsage(usage: Usage, pricing: Pricing, receivedAt: Timestamp): UsageRecord {
  const normalized = normalizeUsage(usage);
  if (pricing.tiers.length === 0) {
    if (!pricing.free) throw new PricingError("a non-free model declares no pricing tier");
    return create(UsageRecordSchema, { usage: normalized, costUsd: 0, receivedAt, pricingTierIndex: -1 });
  }
  const { tier, index } = resolvePricingTier(pricing, receivedAt, tierInputTokens(usage));
  const cost = pricing.free ? 0 : computeCost(usage, tier).costUsd;
  return create(UsageRecordSchema, { usage: normalized, costUsd: cost, receivedAt, pricingTierIndex: index });
}
