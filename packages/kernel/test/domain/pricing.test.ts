import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { PricingSchema, type PricingTier } from "@pluggableharness/protocol/model";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PricingError } from "../../src/domain/errors.ts";
import { checkTierCoverage, resolvePricingTier } from "../../src/domain/pricing.ts";
import { at, tier } from "./fixtures.ts";

const ts = (seconds: number) => create(TimestampSchema, { seconds: BigInt(seconds) });
const pricing = (tiers: PricingTier[]) => create(PricingSchema, { currency: "USD", tiers });

describe("pricing tier resolution", () => {
  const intro = tier({ inputPerMtok: 1, effectiveUntil: at("2026-09-01T00:00:00Z") });
  const regular = tier({
    inputPerMtok: 3,
    effectiveFrom: at("2026-09-01T00:00:00Z"),
    inputTokensUntil: 200_000n,
  });
  const long = tier({
    inputPerMtok: 6,
    effectiveFrom: at("2026-09-01T00:00:00Z"),
    inputTokensFrom: 200_000n,
  });
  const p = pricing([intro, regular, long]);

  it("the tier matching the receipt time and the event's input_tokens is chosen", () => {
    expect(resolvePricingTier(p, at("2026-08-31T23:59:59Z"), 500_000n).index).toBe(0);
    expect(resolvePricingTier(p, at("2026-09-01T00:00:00Z"), 199_999n).index).toBe(1);
    expect(resolvePricingTier(p, at("2026-09-01T00:00:00Z"), 200_000n).index).toBe(2);
  });

  it("effective_from is inclusive and effective_until exclusive", () => {
    expect(resolvePricingTier(p, at("2026-09-01T00:00:00Z"), 0n).index).toBe(1);
    const justBefore = create(TimestampSchema, {
      seconds: at("2026-09-01T00:00:00Z").seconds - 1n,
      nanos: 999_999_999,
    });
    expect(resolvePricingTier(p, justBefore, 0n).index).toBe(0);
  });

  it("a time-only tier set resolves by time alone", () => {
    const q = pricing([tier({ effectiveUntil: ts(100) }), tier({ effectiveFrom: ts(100) })]);
    expect(checkTierCoverage(q.tiers)).toEqual([]);
    expect(resolvePricingTier(q, ts(99), 10_000_000n).index).toBe(0);
    expect(resolvePricingTier(q, ts(100), 0n).index).toBe(1);
  });

  it("resolution of an overlapping or gapped set fails instead of picking one", () => {
    expect(() => resolvePricingTier(pricing([tier(), tier()]), ts(0), 0n)).toThrow(PricingError);
    expect(() => resolvePricingTier(pricing([tier({ inputTokensFrom: 10n })]), ts(0), 0n)).toThrow(
      /no pricing tier/,
    );
  });
});

describe("exact tier coverage", () => {
  it("overlap in the time dimension is rejected", () => {
    const issues = checkTierCoverage([tier({ effectiveUntil: ts(200) }), tier({ effectiveFrom: ts(100) })]);
    expect(issues.map((i) => i.kind)).toEqual(["overlap"]);
  });

  it("gap in the time dimension is rejected", () => {
    const issues = checkTierCoverage([tier({ effectiveUntil: ts(100) }), tier({ effectiveFrom: ts(101) })]);
    expect(issues.map((i) => i.kind)).toEqual(["gap"]);
  });

  it("overlap in the input-token dimension is rejected", () => {
    const issues = checkTierCoverage([tier({ inputTokensUntil: 1000n }), tier({ inputTokensFrom: 999n })]);
    expect(issues.map((i) => i.kind)).toEqual(["overlap"]);
  });

  it("gap in the input-token dimension is rejected, even of a single token", () => {
    const issues = checkTierCoverage([tier({ inputTokensUntil: 1000n }), tier({ inputTokensFrom: 1001n })]);
    expect(issues).toEqual([{ kind: "gap", message: expect.stringContaining("1000..1000 input tokens") }]);
  });

  it("a tier set must cover input tokens from zero", () => {
    expect(checkTierCoverage([tier({ inputTokensFrom: 1n })]).map((i) => i.kind)).toEqual(["gap"]);
    expect(checkTierCoverage([tier({ inputTokensFrom: 0n })])).toEqual([]);
  });

  it("a gap of one nanosecond is found", () => {
    const a = tier({ effectiveUntil: create(TimestampSchema, { seconds: 10n, nanos: 5 }) });
    const b = tier({ effectiveFrom: create(TimestampSchema, { seconds: 10n, nanos: 6 }) });
    expect(checkTierCoverage([a, b]).map((i) => i.kind)).toEqual(["gap"]);
  });
});

// ---- properties ----

/** A random partition of (time x tokens): time columns, each cut into token rows. */
const partition = fc
  .tuple(
    fc.uniqueArray(fc.integer({ min: -50, max: 50 }), { maxLength: 4 }),
    fc.array(fc.uniqueArray(fc.integer({ min: 1, max: 400 }), { maxLength: 3 }), {
      minLength: 5,
      maxLength: 5,
    }),
    fc.boolean(),
  )
  .map(([timeCuts, tokenCutsPerColumn, explicitZero]) => {
    const times = [...timeCuts].sort((a, b) => a - b);
    const tiers: PricingTier[] = [];
    for (let c = 0; c <= times.length; c++) {
      const from = c === 0 ? undefined : times[c - 1]!;
      const until = c === times.length ? undefined : times[c]!;
      const cuts = [...tokenCutsPerColumn[c % tokenCutsPerColumn.length]!].sort((a, b) => a - b);
      for (let r = 0; r <= cuts.length; r++) {
        const kFrom = r === 0 ? (explicitZero ? 0 : undefined) : cuts[r - 1]!;
        const kUntil = r === cuts.length ? undefined : cuts[r]!;
        tiers.push(
          tier({
            inputPerMtok: tiers.length,
            ...(from !== undefined ? { effectiveFrom: ts(from) } : {}),
            ...(until !== undefined ? { effectiveUntil: ts(until) } : {}),
            ...(kFrom !== undefined ? { inputTokensFrom: BigInt(kFrom) } : {}),
            ...(kUntil !== undefined ? { inputTokensUntil: BigInt(kUntil) } : {}),
          }),
        );
      }
    }
    return tiers;
  })
  .chain((tiers) => fc.shuffledSubarray(tiers, { minLength: tiers.length, maxLength: tiers.length }));

/** Probe points around every bound: an oracle that brute-forces containment. */
function probes(tiers: PricingTier[]): [number, bigint][] {
  const times = new Set<number>([0, -1000, 1000]);
  const toks = new Set<bigint>([0n, 1n, 10_000n]);
  for (const t of tiers) {
    for (const x of [t.effectiveFrom, t.effectiveUntil])
      if (x) for (const d of [-1, 0, 1]) times.add(Number(x.seconds) + d);
    for (const x of [t.inputTokensFrom, t.inputTokensUntil])
      if (x !== undefined) for (const d of [-1n, 0n, 1n]) if (x + d >= 0n) toks.add(x + d);
  }
  const out: [number, bigint][] = [];
  for (const t of times) for (const k of toks) out.push([t, k]);
  return out;
}

function covering(tiers: PricingTier[], t: number, k: bigint): number {
  return tiers.filter(
    (x) =>
      (!x.effectiveFrom || Number(x.effectiveFrom.seconds) <= t) &&
      (!x.effectiveUntil || t < Number(x.effectiveUntil.seconds)) &&
      (x.inputTokensFrom ?? 0n) <= k &&
      (x.inputTokensUntil === undefined || k < x.inputTokensUntil),
  ).length;
}

describe("pricing properties", () => {
  it("valid random tier sets always resolve to exactly one tier", () => {
    fc.assert(
      fc.property(partition, (tiers) => {
        expect(checkTierCoverage(tiers)).toEqual([]);
        const p = pricing(tiers);
        const bad: string[] = [];
        for (const [t, k] of probes(tiers)) {
          if (covering(tiers, t, k) !== 1) bad.push(`oracle ${t},${k}`);
          const { tier: chosen } = resolvePricingTier(p, ts(t), k);
          if (covering([chosen], t, k) !== 1) bad.push(`resolved ${t},${k}`);
        }
        expect(bad).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it("invalid random tier sets (overlap or gap) are always rejected", () => {
    const mutation = fc.constantFrom("drop", "duplicate", "extend", "shrink");
    fc.assert(
      fc.property(partition, mutation, fc.nat(), (tiers, how, pick) => {
        const i = pick % tiers.length;
        const victim = tiers[i]!;
        let mutated: PricingTier[];
        if (how === "drop") mutated = tiers.filter((_, j) => j !== i);
        else if (how === "duplicate") mutated = [...tiers, victim];
        else {
          const finite =
            victim.inputTokensUntil !== undefined ? "tokens" : victim.effectiveUntil ? "time" : undefined;
          fc.pre(finite !== undefined);
          const copy = tier({ ...victim });
          if (finite === "tokens") {
            const width = victim.inputTokensUntil! - (victim.inputTokensFrom ?? 0n);
            if (how === "extend") copy.inputTokensUntil = victim.inputTokensUntil! + 1n;
            else {
              fc.pre(width > 1n);
              copy.inputTokensUntil = victim.inputTokensUntil! - 1n;
            }
          } else {
            const until = Number(victim.effectiveUntil!.seconds);
            const from = victim.effectiveFrom ? Number(victim.effectiveFrom.seconds) : -Infinity;
            if (how === "extend") copy.effectiveUntil = ts(until + 1);
            else {
              fc.pre(until - from > 1);
              copy.effectiveUntil = ts(until - 1);
            }
          }
          mutated = tiers.map((t, j) => (j === i ? copy : t));
        }
        const issues = checkTierCoverage(mutated);
        expect(issues.length).toBeGreaterThan(0);
        // The oracle agrees: some probe point is covered zero or several times.
        expect(probes(mutated).some(([t, k]) => covering(mutated, t, k) !== 1) || mutated.length === 0).toBe(
          true,
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe("tier coverage, issue by issue", () => {
  it("names each empty tier and why, and checks nothing else then", () => {
    expect(
      checkTierCoverage([
        tier({ inputTokensFrom: -1n }),
        tier({ inputTokensUntil: -5n }),
        tier({ effectiveFrom: ts(10), effectiveUntil: ts(10) }),
        tier({ inputTokensFrom: 5n, inputTokensUntil: 5n }),
        tier({ effectiveFrom: ts(10), effectiveUntil: ts(11), inputTokensFrom: 5n, inputTokensUntil: 6n }),
      ]),
    ).toEqual([
      { kind: "empty", tier: 0, message: "tier #0 has a negative input-token bound" },
      { kind: "empty", tier: 1, message: "tier #1 has a negative input-token bound" },
      { kind: "empty", tier: 2, message: "tier #2 ends before or when it starts" },
      { kind: "empty", tier: 3, message: "tier #3 has input_tokens_until <= input_tokens_from" },
    ]);
    expect(checkTierCoverage([])).toEqual([{ kind: "gap", message: "no pricing tier is declared" }]);
  });

  it("a tier with only one time bound, or only an upper token bound, is not empty", () => {
    expect(checkTierCoverage([tier({ effectiveFrom: ts(10) }), tier({ effectiveUntil: ts(10) })])).toEqual(
      [],
    );
    expect(checkTierCoverage([tier({ inputTokensUntil: 1n }), tier({ inputTokensFrom: 1n })])).toEqual([]);
  });

  it("describes gaps and overlaps by token range and time window, each overlap once", () => {
    expect(
      checkTierCoverage([tier({ effectiveFrom: ts(0), effectiveUntil: ts(100), inputTokensUntil: 10n })]),
    ).toEqual([
      {
        kind: "gap",
        message: "no tier covers 0..9 input tokens from the beginning until 1970-01-01T00:00:00.000Z",
      },
      {
        kind: "gap",
        message: "no tier covers 10+ input tokens from the beginning until 1970-01-01T00:00:00.000Z",
      },
      {
        kind: "gap",
        message:
          "no tier covers 10+ input tokens from 1970-01-01T00:00:00.000Z until 1970-01-01T00:01:40.000Z",
      },
      {
        kind: "gap",
        message: "no tier covers 0..9 input tokens from 1970-01-01T00:01:40.000Z until forever",
      },
      { kind: "gap", message: "no tier covers 10+ input tokens from 1970-01-01T00:01:40.000Z until forever" },
    ]);
    expect(checkTierCoverage([tier(), tier({ inputTokensFrom: 5n }), tier()])).toEqual([
      {
        kind: "overlap",
        tiers: [0, 2],
        message: "tiers #0 and #2 overlap on 0..4 input tokens from the beginning until forever",
      },
      {
        kind: "overlap",
        tiers: [0, 1, 2],
        message: "tiers #0 and #1 and #2 overlap on 5+ input tokens from the beginning until forever",
      },
    ]);
    // the same pair overlapping in several cells is reported once
    expect(
      checkTierCoverage([tier(), tier({ inputTokensUntil: 5n }), tier({ inputTokensFrom: 5n })]).map(
        (i) => i.message,
      ),
    ).toEqual([
      "tiers #0 and #1 overlap on 0..4 input tokens from the beginning until forever",
      "tiers #0 and #2 overlap on 5+ input tokens from the beginning until forever",
    ]);
    expect(
      checkTierCoverage([
        tier({ effectiveUntil: ts(5) }),
        tier({ effectiveFrom: ts(5) }),
        tier({ effectiveFrom: ts(9) }),
      ]).map((i) => i.message),
    ).toEqual(["tiers #1 and #2 overlap on 0+ input tokens from 1970-01-01T00:00:09.000Z until forever"]);
  });

  it("resolution failures say when and for how many tokens", () => {
    expect(() => resolvePricingTier(pricing([tier({ inputTokensFrom: 10n })]), ts(60), 3n)).toThrow(
      new PricingError("no pricing tier matches 1970-01-01T00:01:00.000Z with 3 input tokens"),
    );
    expect(() =>
      resolvePricingTier(pricing([tier(), tier({ effectiveFrom: ts(0) }), tier()]), ts(60), 3n),
    ).toThrow(
      new PricingError("pricing tiers #0, #1, #2 all match 1970-01-01T00:01:00.000Z with 3 input tokens"),
    );
    // exclusive upper token bound, inclusive lower
    const split = pricing([tier({ inputTokensUntil: 10n }), tier({ inputTokensFrom: 10n })]);
    expect(resolvePricingTier(split, ts(0), 9n).index).toBe(0);
    expect(resolvePricingTier(split, ts(0), 10n).index).toBe(1);
  });
});
