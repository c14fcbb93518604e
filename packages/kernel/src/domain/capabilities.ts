// ModelSpec validation at capability-load time: every declaration the kernel later relies
// on for routing, parameter validation and cost is checked once, and a provider breaking
// any rule is rejected with every violation named.
import type {
  CachingSpec,
  Capabilities,
  ModelSpec,
  Pricing,
  ThinkingSpec,
} from "@pluggableharness/protocol/model";
import { SamplingParameter, ThinkingDisable, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { CapabilitiesError, type RuleViolation } from "./errors.ts";
import { checkTierCoverage } from "./pricing.ts";

export const CapabilityRule = {
  modelIdRequired: "model-id-required",
  modelIdUnique: "model-id-unique",
  contextWindowPositive: "context-window-positive",
  maxOutputTokensPositive: "max-output-tokens-positive",
  thinkingPresent: "thinking-present",
  cachingPresent: "caching-present",
  pricingPresent: "pricing-present",
  thinkingUnsupportedNoEffort: "thinking-unsupported-no-effort",
  thinkingUnsupportedNoBudget: "thinking-unsupported-no-budget",
  thinkingUnsupportedNotAdaptive: "thinking-unsupported-not-adaptive",
  thinkingUnsupportedCannotDisable: "thinking-unsupported-disable-unspecified-or-never",
  thinkingDisableDeclared: "thinking-disable-declared",
  effortLevelsNonEmpty: "effort-levels-non-empty",
  effortDefaultInLevels: "effort-default-in-levels",
  budgetRangePresent: "budget-range-present",
  budgetRangeOrdered: "budget-range-ordered",
  budgetDefaultInRange: "budget-default-in-range",
  cachingUnsupportedNoMechanism: "caching-unsupported-no-mechanism",
  cachingSupportedNeedsMechanism: "caching-supported-needs-mechanism",
  pricingCurrency: "pricing-currency-usd",
  pricingTiersRequired: "pricing-tiers-required-unless-free",
  pricingFreeZeroRates: "pricing-free-zero-rates",
  pricingRatesValid: "pricing-rates-finite-non-negative",
  pricingCacheRatesIffCaching: "pricing-cache-rates-iff-caching",
  pricingBatchRatesPaired: "pricing-batch-rates-paired",
  pricingTierNonEmpty: "pricing-tier-non-empty",
  pricingTiersExactCover: "pricing-tiers-exact-cover",
  toolChoiceModesSpecified: "tool-choice-modes-specified",
  parallelToolCallsDeclared: "parallel-tool-calls-declared",
  samplingParametersSpecified: "sampling-parameters-specified",
  samplingEffortLevelsDeclared: "sampling-only-at-effort-names-effort-levels",
} as const;

export interface ValidatedCapabilities {
  readonly provider: string;
  /** Models by ModelSpec.id, in declaration order. */
  readonly models: ReadonlyMap<string, ModelSpec>;
  readonly warnings: readonly RuleViolation[];
}

type Report = (rule: string, what: string) => void;

/** Validates a GetCapabilities response; throws CapabilitiesError naming every violation. */
export function validateCapabilities(provider: string, capabilities: Capabilities): ValidatedCapabilities {
  const errors: RuleViolation[] = [];
  const warnings: RuleViolation[] = [];
  const models = new Map<string, ModelSpec>();
  for (const [i, spec] of capabilities.models.entries()) {
    const subject = spec.id || `#${i}`;
    const fail: Report = (rule, what) =>
      errors.push({ provider, subject, rule, message: `${provider}/${subject}: ${what}` });
    const warn: Report = (rule, what) =>
      warnings.push({ provider, subject, rule, message: `${provider}/${subject}: ${what}` });
    if (spec.id && models.has(spec.id))
      fail(CapabilityRule.modelIdUnique, "model id is declared more than once");
    checkModelSpec(spec, fail, warn);
    if (spec.id && !models.has(spec.id)) models.set(spec.id, spec);
  }
  if (errors.length > 0) throw new CapabilitiesError(provider, errors);
  return { provider, models, warnings };
}

/** The violations of one ModelSpec, without throwing (used by validateCapabilities and conformance). */
export function modelSpecViolations(provider: string, spec: ModelSpec): RuleViolation[] {
  const errors: RuleViolation[] = [];
  const subject = spec.id || "(no id)";
  checkModelSpec(
    spec,
    (rule, what) => errors.push({ provider, subject, rule, message: `${provider}/${subject}: ${what}` }),
    () => {},
  );
  return errors;
}

function checkModelSpec(spec: ModelSpec, fail: Report, warn: Report): void {
  if (!spec.id) fail(CapabilityRule.modelIdRequired, "id is empty");
  if (spec.contextWindow <= 0n)
    fail(CapabilityRule.contextWindowPositive, "context_window must be a positive token count");
  if (spec.maxOutputTokens <= 0n)
    fail(CapabilityRule.maxOutputTokensPositive, "max_output_tokens must be a positive token count");
  if (spec.supportsParallelToolCalls === undefined) {
    warn(
      CapabilityRule.parallelToolCallsDeclared,
      "supports_parallel_tool_calls is not declared; its tool calls will run one at a time",
    );
  }
  for (const mode of spec.supportedToolChoiceModes) {
    if (mode === ToolChoiceMode.UNSPECIFIED || !(mode in ToolChoiceMode)) {
      fail(
        CapabilityRule.toolChoiceModesSpecified,
        `supported_tool_choice_modes lists an unspecified mode (${mode})`,
      );
    }
  }
  if (spec.sampling) {
    for (const p of spec.sampling.accepted) {
      if (p === SamplingParameter.UNSPECIFIED || !(p in SamplingParameter))
        fail(
          CapabilityRule.samplingParametersSpecified,
          `sampling.accepted lists an unspecified parameter (${p})`,
        );
    }
    const levels = spec.thinking?.supported ? (spec.thinking.effort?.levels ?? []) : [];
    for (const level of spec.sampling.onlyAtEffort) {
      if (!levels.includes(level))
        fail(
          CapabilityRule.samplingEffortLevelsDeclared,
          `sampling.only_at_effort names "${level}", which is not one of the model's effort levels`,
        );
    }
  }
  if (!spec.thinking)
    fail(CapabilityRule.thinkingPresent, "thinking is missing (declare { supported: false } for none)");
  else checkThinking(spec.thinking, fail);
  if (!spec.caching)
    fail(CapabilityRule.cachingPresent, "caching is missing (declare { supported: false } for none)");
  else checkCaching(spec.caching, fail);
  if (!spec.pricing)
    fail(CapabilityRule.pricingPresent, "pricing is missing (it is required even for free models)");
  else checkPricing(spec.pricing, spec.caching?.supported === true, fail);
}

function checkThinking(t: ThinkingSpec, fail: Report): void {
  if (!t.supported) {
    if (t.effort)
      fail(
        CapabilityRule.thinkingUnsupportedNoEffort,
        "thinking is unsupported but an effort control is declared",
      );
    if (t.budget)
      fail(
        CapabilityRule.thinkingUnsupportedNoBudget,
        "thinking is unsupported but a budget control is declared",
      );
    if (t.adaptiveByDefault) {
      fail(
        CapabilityRule.thinkingUnsupportedNotAdaptive,
        "thinking is unsupported but adaptive_by_default is true",
      );
    }
    if (t.disable !== ThinkingDisable.UNSPECIFIED && t.disable !== ThinkingDisable.NEVER) {
      fail(
        CapabilityRule.thinkingUnsupportedCannotDisable,
        "thinking is unsupported, so it cannot claim reasoning can be disabled",
      );
    }
  } else if (t.disable === ThinkingDisable.UNSPECIFIED || !(t.disable in ThinkingDisable)) {
    fail(
      CapabilityRule.thinkingDisableDeclared,
      "thinking is supported, so disable must be never, always or conditional",
    );
  }
  if (t.effort) {
    if (t.effort.levels.length === 0)
      fail(CapabilityRule.effortLevelsNonEmpty, "effort control has no levels");
    else if (!t.effort.levels.includes(t.effort.default)) {
      fail(
        CapabilityRule.effortDefaultInLevels,
        `effort default "${t.effort.default}" is not one of its levels`,
      );
    }
  }
  if (t.budget) {
    const r = t.budget.range;
    if (!r) fail(CapabilityRule.budgetRangePresent, "budget control has no range");
    else if (r.min < 0n || r.min > r.max) {
      fail(CapabilityRule.budgetRangeOrdered, `budget range ${r.min}..${r.max} must satisfy 0 <= min <= max`);
    } else if (t.budget.default !== undefined && (t.budget.default < r.min || t.budget.default > r.max)) {
      fail(
        CapabilityRule.budgetDefaultInRange,
        `budget default ${t.budget.default} lies outside ${r.min}..${r.max}`,
      );
    }
  }
}

function checkCaching(c: CachingSpec, fail: Report): void {
  if (!c.supported && (c.explicitMarkers || c.implicitAutomatic)) {
    fail(
      CapabilityRule.cachingUnsupportedNoMechanism,
      "caching is unsupported but a caching mechanism is declared",
    );
  }
  if (c.supported && !c.explicitMarkers && !c.implicitAutomatic) {
    fail(
      CapabilityRule.cachingSupportedNeedsMechanism,
      "caching is supported but neither explicit_markers nor implicit_automatic is set",
    );
  }
}

const RATE_FIELDS = [
  "inputPerMtok",
  "outputPerMtok",
  "cacheWritePerMtok",
  "cacheReadPerMtok",
  "batchInputPerMtok",
  "batchOutputPerMtok",
  "cacheStoragePerMtokHour",
] as const;

function checkPricing(p: Pricing, cachingSupported: boolean, fail: Report): void {
  if (p.currency !== "USD") {
    fail(CapabilityRule.pricingCurrency, `currency is "${p.currency}"; v1 prices in "USD" only`);
  }
  if (!p.free && p.tiers.length === 0)
    fail(CapabilityRule.pricingTiersRequired, "a non-free model needs at least one pricing tier");
  for (const [i, tier] of p.tiers.entries()) {
    for (const field of RATE_FIELDS) {
      const v = tier[field];
      if (v !== undefined && (!Number.isFinite(v) || v < 0)) {
        fail(CapabilityRule.pricingRatesValid, `tier #${i} ${field} must be a finite, non-negative rate`);
      } else if (p.free && v !== undefined && v !== 0) {
        fail(CapabilityRule.pricingFreeZeroRates, `tier #${i} of a free model charges ${field} = ${v}`);
      }
    }
    const hasWrite = tier.cacheWritePerMtok !== undefined;
    const hasRead = tier.cacheReadPerMtok !== undefined;
    if (cachingSupported && (!hasWrite || !hasRead)) {
      fail(
        CapabilityRule.pricingCacheRatesIffCaching,
        `tier #${i} needs cache_write_per_mtok and cache_read_per_mtok because caching is supported`,
      );
    }
    if (!cachingSupported && tier.cacheStoragePerMtokHour !== undefined) {
      fail(
        CapabilityRule.pricingCacheRatesIffCaching,
        `tier #${i} declares a cache storage rate but caching is unsupported`,
      );
    }
    if (!cachingSupported && (hasWrite || hasRead)) {
      fail(
        CapabilityRule.pricingCacheRatesIffCaching,
        `tier #${i} declares cache rates but caching is unsupported`,
      );
    }
    if ((tier.batchInputPerMtok === undefined) !== (tier.batchOutputPerMtok === undefined)) {
      fail(
        CapabilityRule.pricingBatchRatesPaired,
        `tier #${i} declares only one of batch_input_per_mtok and batch_output_per_mtok`,
      );
    }
  }
  if (p.tiers.length > 0) {
    for (const issue of checkTierCoverage(p.tiers)) {
      fail(
        issue.kind === "empty" ? CapabilityRule.pricingTierNonEmpty : CapabilityRule.pricingTiersExactCover,
        issue.message,
      );
    }
  }
}
