import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  CapabilitiesSchema,
  type ModelSpec,
  SamplingParameter,
  ThinkingDisable,
  type ThinkingSpecSchema,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import { CapabilityRule, modelSpecViolations, validateCapabilities } from "../../src/domain/capabilities.ts";
import { CapabilitiesError } from "../../src/domain/errors.ts";
import { at, model, plainModel } from "./fixtures.ts";

/** The rules a spec breaks; every violation must also say what is wrong in words. */
function rules(spec: ModelSpec): string[] {
  const violations = modelSpecViolations("acme", spec);
  // "<provider>/<model>: <what is wrong>": the part after the subject must not be empty.
  for (const v of violations) expect(v.message, `message of ${v.rule}`).toMatch(/: \S/);
  return violations.map((v) => v.rule);
}
const withThinking = (thinking: MessageInitShape<typeof ThinkingSpecSchema>) => model({ thinking });

describe("capabilities validation at load", () => {
  it("valid declarations load, keyed by model id", () => {
    const caps = create(CapabilitiesSchema, { models: [model(), plainModel()] });
    const v = validateCapabilities("acme", caps);
    expect([...v.models.keys()]).toEqual(["m-1", "plain"]);
  });

  it("a rejection names provider, model and rule", () => {
    const caps = create(CapabilitiesSchema, { models: [model({ contextWindow: 0n })] });
    try {
      validateCapabilities("acme", caps);
      throw new Error("expected rejection");
    } catch (e) {
      expect(e).toBeInstanceOf(CapabilitiesError);
      const err = e as CapabilitiesError;
      expect(err.category).toBe("invalid_capabilities");
      expect(err.violations[0]).toMatchObject({
        provider: "acme",
        subject: "m-1",
        rule: CapabilityRule.contextWindowPositive,
      });
      expect(err.message).toContain("acme/m-1");
    }
  });

  it("every MUST field of ModelSpec is required", () => {
    expect(rules(model({ id: "" }))).toContain(CapabilityRule.modelIdRequired);
    expect(rules(model({ contextWindow: 0n }))).toEqual([CapabilityRule.contextWindowPositive]);
    expect(rules(model({ maxOutputTokens: 0n }))).toEqual([CapabilityRule.maxOutputTokensPositive]);
    expect(rules(model({ thinking: undefined }))).toEqual([CapabilityRule.thinkingPresent]);
    expect(rules(model({ caching: undefined }))).toContain(CapabilityRule.cachingPresent);
    expect(rules(model({ pricing: undefined }))).toEqual([CapabilityRule.pricingPresent]);
  });

  it("model ids are unique within a provider", () => {
    const caps = create(CapabilitiesSchema, { models: [model(), model()] });
    expect(() => validateCapabilities("acme", caps)).toThrow(/declared more than once/);
  });

  it("supports_parallel_tool_calls absent draws a warning (calls will be serialized)", () => {
    const caps = create(CapabilitiesSchema, { models: [model({ supportsParallelToolCalls: undefined })] });
    expect(validateCapabilities("acme", caps).warnings.map((w) => w.rule)).toEqual([
      CapabilityRule.parallelToolCallsDeclared,
    ]);
  });

  it("supported_tool_choice_modes may not list UNSPECIFIED", () => {
    expect(rules(model({ supportedToolChoiceModes: [ToolChoiceMode.UNSPECIFIED] }))).toEqual([
      CapabilityRule.toolChoiceModesSpecified,
    ]);
    expect(rules(model({ supportedToolChoiceModes: [] }))).toEqual([]);
  });

  it("a sampling spec lists known parameters and only the model's own effort levels", () => {
    expect(
      rules(model({ sampling: { accepted: [SamplingParameter.TEMPERATURE], onlyAtEffort: ["low"] } })),
    ).toEqual([]);
    expect(rules(model({ sampling: { accepted: [] } }))).toEqual([]);
    expect(rules(model({ sampling: { accepted: [SamplingParameter.UNSPECIFIED] } }))).toEqual([
      CapabilityRule.samplingParametersSpecified,
    ]);
    expect(
      rules(model({ sampling: { accepted: [SamplingParameter.TOP_P], onlyAtEffort: ["none"] } })),
    ).toEqual([CapabilityRule.samplingEffortLevelsDeclared]);
    expect(rules(plainModel({ sampling: { accepted: [], onlyAtEffort: ["low"] } }))).toEqual([
      CapabilityRule.samplingEffortLevelsDeclared,
    ]);
  });
});

describe("ThinkingSpec", () => {
  it("the all-zero ThinkingSpec is a valid declaration of a model that does not reason", () => {
    expect(rules(plainModel())).toEqual([]);
  });

  it("supported: false forbids an effort control", () => {
    expect(rules(withThinking({ supported: false, effort: { levels: ["low"], default: "low" } }))).toEqual([
      CapabilityRule.thinkingUnsupportedNoEffort,
    ]);
  });

  it("supported: false forbids a budget control", () => {
    expect(rules(withThinking({ supported: false, budget: { range: { min: 0n, max: 10n } } }))).toEqual([
      CapabilityRule.thinkingUnsupportedNoBudget,
    ]);
  });

  it("supported: false forbids adaptive_by_default", () => {
    expect(rules(withThinking({ supported: false, adaptiveByDefault: true }))).toEqual([
      CapabilityRule.thinkingUnsupportedNotAdaptive,
    ]);
  });

  it("supported: false accepts disable unspecified or never as equal", () => {
    expect(rules(withThinking({ supported: false, disable: ThinkingDisable.UNSPECIFIED }))).toEqual([]);
    expect(rules(withThinking({ supported: false, disable: ThinkingDisable.NEVER }))).toEqual([]);
  });

  it("supported: false rejects disable always or conditional", () => {
    for (const disable of [ThinkingDisable.ALWAYS, ThinkingDisable.CONDITIONAL]) {
      expect(rules(withThinking({ supported: false, disable }))).toEqual([
        CapabilityRule.thinkingUnsupportedCannotDisable,
      ]);
    }
  });

  it("supported: true must declare disable", () => {
    expect(rules(withThinking({ supported: true, adaptiveByDefault: true }))).toEqual([
      CapabilityRule.thinkingDisableDeclared,
    ]);
  });

  it("every combination of effort, budget and adaptive axes is declarable", () => {
    const effort = { levels: ["low", "high"], default: "high" };
    const budget = { range: { min: 1n, max: 9n }, deprecated: true };
    for (const e of [undefined, effort]) {
      for (const b of [undefined, budget]) {
        for (const adaptiveByDefault of [false, true]) {
          expect(
            rules(
              withThinking({
                supported: true,
                effort: e,
                budget: b,
                adaptiveByDefault,
                disable: ThinkingDisable.CONDITIONAL,
              }),
            ),
          ).toEqual([]);
        }
      }
    }
  });

  it("effort levels must be non-empty", () => {
    expect(
      rules(withThinking({ supported: true, disable: 1, effort: { levels: [], default: "x" } })),
    ).toEqual([CapabilityRule.effortLevelsNonEmpty]);
  });

  it("the effort default must be one of the levels", () => {
    expect(
      rules(withThinking({ supported: true, disable: 1, effort: { levels: ["low"], default: "max" } })),
    ).toEqual([CapabilityRule.effortDefaultInLevels]);
  });

  it("a budget control needs a range", () => {
    expect(rules(withThinking({ supported: true, disable: 1, budget: {} }))).toEqual([
      CapabilityRule.budgetRangePresent,
    ]);
  });

  it("the budget range must have min <= max", () => {
    expect(
      rules(withThinking({ supported: true, disable: 1, budget: { range: { min: 10n, max: 9n } } })),
    ).toEqual([CapabilityRule.budgetRangeOrdered]);
    expect(
      rules(withThinking({ supported: true, disable: 1, budget: { range: { min: 9n, max: 9n } } })),
    ).toEqual([]);
  });

  it("the budget default must lie inside the range", () => {
    expect(
      rules(
        withThinking({ supported: true, disable: 1, budget: { range: { min: 1n, max: 9n }, default: 10n } }),
      ),
    ).toEqual([CapabilityRule.budgetDefaultInRange]);
    expect(
      rules(
        withThinking({ supported: true, disable: 1, budget: { range: { min: 1n, max: 9n }, default: 9n } }),
      ),
    ).toEqual([]);
  });
});

describe("CachingSpec", () => {
  const tiers = [{ inputPerMtok: 1, outputPerMtok: 2, cacheReadPerMtok: 0.1, cacheWritePerMtok: 1.25 }];

  it("unsupported caching means both mechanisms are false", () => {
    expect(rules(plainModel({ caching: { supported: false, explicitMarkers: true } }))).toEqual([
      CapabilityRule.cachingUnsupportedNoMechanism,
    ]);
    expect(rules(plainModel({ caching: { supported: false, implicitAutomatic: true } }))).toEqual([
      CapabilityRule.cachingUnsupportedNoMechanism,
    ]);
  });

  it("supported caching needs at least one mechanism", () => {
    expect(rules(model({ caching: { supported: true } }))).toEqual([
      CapabilityRule.cachingSupportedNeedsMechanism,
    ]);
  });

  it("both caching mechanisms may be declared at once", () => {
    expect(
      rules(
        model({
          caching: { supported: true, explicitMarkers: true, implicitAutomatic: true },
          pricing: { currency: "USD", tiers },
        }),
      ),
    ).toEqual([]);
  });
});

describe("Pricing", () => {
  it("currency must be USD in v1", () => {
    expect(rules(plainModel({ pricing: { currency: "", tiers: [{ inputPerMtok: 1 }] } }))).toEqual([
      CapabilityRule.pricingCurrency,
    ]);
    expect(rules(plainModel({ pricing: { currency: "EUR", tiers: [{ inputPerMtok: 1 }] } }))).toEqual([
      CapabilityRule.pricingCurrency,
    ]);
  });

  it("at least one tier unless free", () => {
    expect(rules(plainModel({ pricing: { currency: "USD", tiers: [] } }))).toEqual([
      CapabilityRule.pricingTiersRequired,
    ]);
    expect(rules(plainModel({ pricing: { currency: "USD", free: true, tiers: [] } }))).toEqual([]);
  });

  it("a free model may carry a single zero-rate tier but no charging one", () => {
    expect(rules(plainModel({ pricing: { currency: "USD", free: true, tiers: [{}] } }))).toEqual([]);
    expect(
      rules(plainModel({ pricing: { currency: "USD", free: true, tiers: [{ inputPerMtok: 1 }] } })),
    ).toEqual([CapabilityRule.pricingFreeZeroRates]);
  });

  it("rates must be finite and non-negative", () => {
    expect(rules(plainModel({ pricing: { currency: "USD", tiers: [{ inputPerMtok: -1 }] } }))).toEqual([
      CapabilityRule.pricingRatesValid,
    ]);
    expect(
      rules(plainModel({ pricing: { currency: "USD", tiers: [{ outputPerMtok: Number.NaN }] } })),
    ).toEqual([CapabilityRule.pricingRatesValid]);
  });

  it("cache rates are present iff caching is supported", () => {
    expect(
      rules(model({ pricing: { currency: "USD", tiers: [{ inputPerMtok: 1, cacheReadPerMtok: 0.1 }] } })),
    ).toEqual([CapabilityRule.pricingCacheRatesIffCaching]);
    expect(
      rules(plainModel({ pricing: { currency: "USD", tiers: [{ inputPerMtok: 1, cacheWritePerMtok: 1 }] } })),
    ).toEqual([CapabilityRule.pricingCacheRatesIffCaching]);
  });

  it("batch rates come in pairs", () => {
    expect(
      rules(
        plainModel({ pricing: { currency: "USD", tiers: [{ inputPerMtok: 1, batchInputPerMtok: 0.5 }] } }),
      ),
    ).toEqual([CapabilityRule.pricingBatchRatesPaired]);
    expect(
      rules(
        plainModel({
          pricing: {
            currency: "USD",
            tiers: [{ inputPerMtok: 1, batchInputPerMtok: 0.5, batchOutputPerMtok: 1 }],
          },
        }),
      ),
    ).toEqual([]);
  });

  it("overlapping tiers are rejected at load", () => {
    const tiers = [
      { inputPerMtok: 1, effectiveUntil: at("2026-09-01T00:00:00Z") },
      { inputPerMtok: 2, effectiveFrom: at("2026-08-01T00:00:00Z") },
    ];
    const err = modelSpecViolations("acme", plainModel({ pricing: { currency: "USD", tiers } }));
    expect(err.map((v) => v.rule)).toEqual([CapabilityRule.pricingTiersExactCover]);
    expect(err[0]!.message).toContain("overlap");
  });

  it("gapped tiers are rejected at load", () => {
    const tiers = [
      { inputPerMtok: 1, inputTokensUntil: 100_000n },
      { inputPerMtok: 2, inputTokensFrom: 200_000n },
    ];
    const err = modelSpecViolations("acme", plainModel({ pricing: { currency: "USD", tiers } }));
    expect(err.map((v) => v.rule)).toEqual([CapabilityRule.pricingTiersExactCover]);
    expect(err[0]!.message).toContain("100000..199999 input tokens");
  });

  it("an empty tier is rejected at load", () => {
    const tiers = [
      {
        inputPerMtok: 1,
        effectiveFrom: at("2026-01-01T00:00:00Z"),
        effectiveUntil: at("2026-01-01T00:00:00Z"),
      },
    ];
    expect(rules(plainModel({ pricing: { currency: "USD", tiers } }))).toEqual([
      CapabilityRule.pricingTierNonEmpty,
    ]);
  });
});
