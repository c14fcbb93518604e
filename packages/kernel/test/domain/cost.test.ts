import { create, equals, type MessageInitShape } from "@bufbuild/protobuf";
import { PricingSchema, PricingTierSchema, type Usage, UsageSchema } from "@pluggableharness/protocol/model";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { computeCost, normalizeUsage, recordUsage, usageIssues } from "../../src/domain/cost.ts";
import { PricingError } from "../../src/domain/errors.ts";
import { at, tier } from "./fixtures.ts";

const examplePricing = create(PricingSchema, {
  currency: "USD",
  free: false,
  tiers: [{ inputPerMtok: 3.0, outputPerMtok: 15.0, cacheReadPerMtok: 0.3, cacheWritePerMtok: 3.75 }],
});
const usage = (init: MessageInitShape<typeof UsageSchema> = {}): Usage =>
  create(UsageSchema, { inputTokens: 412n, outputTokens: 28n, ...init } as MessageInitShape<
    typeof UsageSchema
  >);

describe("cost computation", () => {
  it("reproduces the worked example of model/examples.md exactly: 0.001656", () => {
    const cost = computeCost(usage({ cacheReadTokens: 0n, cacheWriteTokens: 0n }), examplePricing.tiers[0]!);
    expect(cost.exact).toBe("0.001656");
    expect(cost.costUsd).toBe(0.001656);
    expect(cost.costUsd.toFixed(2)).toBe("0.00");
  });

  it("sums are exact where binary floating point is not", () => {
    // 0.1 + 0.2 per token style sums: 1 token at 0.1/Mtok + 2 tokens at 0.1/Mtok.
    const c = computeCost(
      usage({ inputTokens: 1n, outputTokens: 2n }),
      tier({ inputPerMtok: 0.1, outputPerMtok: 0.1 }),
    );
    expect(c.exact).toBe("0.0000003");
    expect((1 * 0.1) / 1e6 + (2 * 0.1) / 1e6).not.toBe(3e-7);
    expect(c.costUsd).toBe(3e-7);
  });

  it("the cost is the five-term sum of input, output, cache-write, cache-read and reasoning", () => {
    const c = computeCost(
      usage({
        inputTokens: 1_000_000n,
        outputTokens: 1_000_000n,
        cacheWriteTokens: 1_000_000n,
        cacheReadTokens: 1_000_000n,
        reasoningTokens: 1_000_000n,
      }),
      examplePricing.tiers[0]!,
    );
    expect(c.exact).toBe("37.05"); // 3 + 15 + 3.75 + 0.3 + 15
  });

  it("reasoning tokens are billed at the output rate", () => {
    const c = computeCost(
      usage({ inputTokens: 201n, outputTokens: 19n, reasoningTokens: 143n }),
      examplePricing.tiers[0]!,
    );
    expect(c.exact).toBe("0.003033"); // (201*3 + 19*15 + 143*15) per million
  });

  it("reasoning tokens are not billed again when reasoning_already_counted", () => {
    const c = computeCost(
      usage({ inputTokens: 0n, outputTokens: 200n, reasoningTokens: 143n, reasoningAlreadyCounted: true }),
      examplePricing.tiers[0]!,
    );
    expect(c.exact).toBe("0.003");
  });

  it("cache tokens without a cache rate cannot be priced", () => {
    expect(() => computeCost(usage({ cacheReadTokens: 5n }), tier())).toThrow(PricingError);
    expect(computeCost(usage({ cacheReadTokens: 0n }), tier()).exact).toBe("0.001656");
  });

  it("a count without its optional rate is refused, naming the term; a zero count needs no rate", () => {
    const noRates = create(PricingTierSchema, {});
    // input and output rates are required fields (never absent), so only the optional rates
    // can be missing.
    const cases: Array<[MessageInitShape<typeof UsageSchema>, RegExp]> = [
      [
        { inputTokens: 0n, outputTokens: 0n, cacheWriteTokens: 3n },
        /3 cache-write tokens .* no cache-write rate/,
      ],
      [
        { inputTokens: 0n, outputTokens: 0n, cacheReadTokens: 4n },
        /4 cache-read tokens .* no cache-read rate/,
      ],
      [{ inputTokens: 0n, outputTokens: 0n, cacheStorageTokenSeconds: 6n }, /6 cache-storage token-seconds/],
    ];
    for (const [init, message] of cases) {
      expect(() => computeCost(create(UsageSchema, init), noRates)).toThrow(PricingError);
      expect(() => computeCost(create(UsageSchema, init), noRates)).toThrow(message);
    }
    const zeros = create(UsageSchema, {
      inputTokens: 0n,
      outputTokens: 0n,
      cacheWriteTokens: 0n,
      cacheReadTokens: 0n,
      reasoningTokens: 0n,
      cacheStorageTokenSeconds: 0n,
    });
    expect(computeCost(zeros, noRates).exact).toBe("0");
  });

  it("a non-free model without tiers cannot be priced", () => {
    const p = create(PricingSchema, { currency: "USD", free: false });
    expect(() => recordUsage(usage(), p, at("2026-01-01T00:00:00Z"))).toThrow(PricingError);
    expect(() => recordUsage(usage(), p, at("2026-01-01T00:00:00Z"))).toThrow(/no pricing tier/);
  });

  it("the tier is resolved per usage event from its receipt time and input_tokens", () => {
    const p = create(PricingSchema, {
      currency: "USD",
      tiers: [
        tier({ inputPerMtok: 3, outputPerMtok: 15, inputTokensUntil: 200_000n }),
        tier({ inputPerMtok: 6, outputPerMtok: 22.5, inputTokensFrom: 200_000n }),
      ],
    });
    const small = recordUsage(usage({ inputTokens: 1000n, outputTokens: 0n }), p, at("2026-01-01T00:00:00Z"));
    const large = recordUsage(
      usage({ inputTokens: 250_000n, outputTokens: 0n }),
      p,
      at("2026-01-01T00:00:00Z"),
    );
    expect([small.pricingTierIndex, small.costUsd]).toEqual([0, 0.003]);
    expect([large.pricingTierIndex, large.costUsd]).toEqual([1, 1.5]);
  });

  it("the input-size tier counts the whole prompt: uncached input, cache reads and cache writes", () => {
    const p = create(PricingSchema, {
      currency: "USD",
      tiers: [
        tier({
          inputPerMtok: 3,
          outputPerMtok: 15,
          cacheReadPerMtok: 0.3,
          cacheWritePerMtok: 3.75,
          inputTokensUntil: 200_001n,
        }),
        tier({
          inputPerMtok: 6,
          outputPerMtok: 22.5,
          cacheReadPerMtok: 0.6,
          cacheWritePerMtok: 7.5,
          inputTokensFrom: 200_001n,
        }),
      ],
    });
    const when = at("2026-01-01T00:00:00Z");
    // 10K new tokens on top of a 240K cached prefix: a 250K prompt, billed at the long rates.
    const cached = recordUsage(
      usage({ inputTokens: 10_000n, cacheReadTokens: 240_000n, outputTokens: 0n }),
      p,
      when,
    );
    expect(cached.pricingTierIndex).toBe(1);
    expect(cached.costUsd).toBeCloseTo((10_000 * 6 + 240_000 * 0.6) / 1e6, 12);
    const written = recordUsage(
      usage({ inputTokens: 1n, cacheWriteTokens: 200_000n, outputTokens: 0n }),
      p,
      when,
    );
    expect(written.pricingTierIndex).toBe(1);
    const exactly = recordUsage(
      usage({ inputTokens: 100_000n, cacheReadTokens: 100_000n, outputTokens: 0n }),
      p,
      when,
    );
    expect(exactly.pricingTierIndex).toBe(0);
  });

  it("explicit-cache storage is priced per token-hour, exactly to 1e-12 of a rate unit", () => {
    const t = tier({
      inputPerMtok: 1.25,
      outputPerMtok: 10,
      cacheReadPerMtok: 0.125,
      cacheWritePerMtok: 1.25,
      cacheStoragePerMtokHour: 4.5,
    });
    // 1M tokens stored for one hour: $4.50; for five minutes: $0.375.
    expect(
      computeCost(usage({ inputTokens: 0n, outputTokens: 0n, cacheStorageTokenSeconds: 3_600_000_000n }), t)
        .exact,
    ).toBe("4.5");
    expect(
      computeCost(usage({ inputTokens: 0n, outputTokens: 0n, cacheStorageTokenSeconds: 300_000_000n }), t)
        .exact,
    ).toBe("0.375");
    // $1 per MTok-hour, 1 token for 1 second: 1/3.6e9 USD, rounded half up 12 digits below the
    // rate's own scale (here 1e-18).
    const odd = tier({
      inputPerMtok: 1,
      outputPerMtok: 1,
      cacheReadPerMtok: 1,
      cacheWritePerMtok: 1,
      cacheStoragePerMtokHour: 1,
    });
    expect(
      computeCost(usage({ inputTokens: 0n, outputTokens: 0n, cacheStorageTokenSeconds: 1n }), odd).exact,
    ).toBe("0.000000000277777778");
    expect(() => computeCost(usage({ cacheStorageTokenSeconds: 5n }), tier())).toThrow(PricingError);
  });

  it("cost is computed at receipt time and persisted with the receipt timestamp", () => {
    const p = create(PricingSchema, {
      currency: "USD",
      tiers: [
        tier({ inputPerMtok: 1, outputPerMtok: 1, effectiveUntil: at("2026-09-01T00:00:00Z") }),
        tier({ inputPerMtok: 3, outputPerMtok: 15, effectiveFrom: at("2026-09-01T00:00:00Z") }),
      ],
    });
    const before = recordUsage(usage(), p, at("2026-08-31T12:00:00Z"));
    const after = recordUsage(usage(), p, at("2026-09-01T12:00:00Z"));
    expect(before.costUsd).toBe(0.00044);
    expect(after.costUsd).toBe(0.001656);
    expect(after.receivedAt).toEqual(at("2026-09-01T12:00:00Z"));
  });

  it("a free model costs nothing, with or without a zero-rate tier", () => {
    const none = recordUsage(
      usage(),
      create(PricingSchema, { currency: "USD", free: true }),
      at("2026-01-01T00:00:00Z"),
    );
    expect([none.costUsd, none.pricingTierIndex]).toEqual([0, -1]);
    const zero = recordUsage(
      usage(),
      create(PricingSchema, { currency: "USD", free: true, tiers: [{}] }),
      at("2026-01-01T00:00:00Z"),
    );
    expect([zero.costUsd, zero.pricingTierIndex]).toEqual([0, 0]);
  });
});

describe("vendor-reported figures", () => {
  it("vendor_cost is kept as an exact decimal string with its unit, never converted", () => {
    const u = usage({ vendorCost: { amount: "1234567890123456789.0000000001", unit: "xai_ticks_1e10" } });
    const rec = recordUsage(u, examplePricing, at("2026-01-01T00:00:00Z"));
    expect(rec.usage!.vendorCost).toMatchObject({
      amount: "1234567890123456789.0000000001",
      unit: "xai_ticks_1e10",
    });
    expect(rec.costUsd).toBe(0.001656);
    expect(usageIssues(usage({ vendorCost: { amount: "1e-3", unit: "usd" } }))).toEqual([
      "vendor_cost.amount is not an exact decimal string",
    ]);
  });

  it("vendor_total_tokens is never derived by addition", () => {
    const rec = recordUsage(
      usage({ cacheReadTokens: 10n, reasoningTokens: 5n }),
      examplePricing,
      at("2026-01-01T00:00:00Z"),
    );
    expect(rec.usage!.vendorTotalTokens).toBeUndefined();
    const reported = recordUsage(
      usage({ vendorTotalTokens: 999n }),
      examplePricing,
      at("2026-01-01T00:00:00Z"),
    );
    expect(reported.usage!.vendorTotalTokens).toBe(999n);
  });

  it("components are sorted by name before persisting", () => {
    const u = usage({
      components: [
        { name: "web_search_sources", value: 3n },
        { name: "audio_input_tokens", value: 7n },
        { name: "accepted_prediction_tokens", value: 1n },
      ],
    });
    expect(normalizeUsage(u).components.map((c) => c.name)).toEqual([
      "accepted_prediction_tokens",
      "audio_input_tokens",
      "web_search_sources",
    ]);
    expect(u.components[0]!.name).toBe("web_search_sources");
  });

  it("any list of components is persisted sorted by name, equal names keeping their order", () => {
    const component = fc.record({ name: fc.constantFrom("a", "b", "c", "d", "e"), value: fc.bigInt(0n, 9n) });
    fc.assert(
      fc.property(fc.array(component, { maxLength: 12 }), (components) => {
        const got = normalizeUsage(usage({ components })).components.map((c) => ({
          name: c.name,
          value: c.value,
        }));
        const want = components
          .map((c, i) => ({ ...c, i }))
          .sort((x, y) => (x.name === y.name ? x.i - y.i : x.name < y.name ? -1 : 1))
          .map(({ name, value }) => ({ name, value }));
        expect(got).toEqual(want);
      }),
    );
  });

  it("negative counts and an empty vendor_cost unit are recorded as issues; zero is not negative", () => {
    const negative = usageIssues(
      usage({
        inputTokens: -1n,
        outputTokens: -2n,
        cacheReadTokens: -3n,
        cacheWriteTokens: -4n,
        reasoningTokens: -5n,
        cacheStorageTokenSeconds: -6n,
      }),
    );
    expect(negative).toEqual([
      "input_tokens is negative",
      "output_tokens is negative",
      "cache_read_tokens is negative",
      "cache_write_tokens is negative",
      "reasoning_tokens is negative",
      "cache_storage_token_seconds is negative",
    ]);
    expect(
      usageIssues(usage({ inputTokens: 0n, outputTokens: 0n, cacheReadTokens: 0n, reasoningTokens: 0n })),
    ).toEqual([]);
    expect(usageIssues(usage({ vendorCost: { amount: "0.5", unit: "" } }))).toEqual([
      "vendor_cost.unit is empty",
    ]);
    expect(usageIssues(usage({ vendorCost: { amount: "0.5", unit: "usd" } }))).toEqual([]);
  });

  it("rate limits are never synthesized nor converted between counts and percentages", () => {
    const percentOnly = usage({
      rateLimits: [{ kind: 2, usedPercent: 98, windowSeconds: 18_000n, limitName: "5h" }],
    });
    const rec = recordUsage(percentOnly, examplePricing, at("2026-01-01T00:00:00Z"));
    const snap = rec.usage!.rateLimits[0]!;
    expect(snap.limit).toBeUndefined();
    expect(snap.remaining).toBeUndefined();
    expect(snap.usedPercent).toBe(98);
    expect(equals(UsageSchema, normalizeUsage(percentOnly), percentOnly)).toBe(true);
    expect(recordUsage(usage(), examplePricing, at("2026-01-01T00:00:00Z")).usage!.rateLimits).toEqual([]);
  });
});
