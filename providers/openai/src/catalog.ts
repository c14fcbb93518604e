// The built-in OpenAI catalog (Responses API models). Every figure names its source in
// `sources`; where a source is silent the entry says what was assumed and why. The realtime
// family is left out on purpose: it speaks a different (WebSocket) transport, which the
// model protocol rules out of scope for v1.
//
// Pricing conventions used below:
// - Rates are USD per million tokens. OpenAI prices cached input separately (cache_read);
//   before GPT-5.6 a cache write costs the normal input rate, so cache_write = input there.
//   GPT-5.6 meters cache writes separately at 1.25x input.
// - Long context: a request whose input exceeds 272,000 tokens is billed at 2x input and
//   1.5x output for the whole request, so each such model has a second tier from 272,001
//   input tokens (input_tokens_from is inclusive).
// - Batch rates are half the standard rates (Batch API).
// - Price changes are time-bounded tiers (effective_from/until), so usage recorded before a
//   change keeps the rate it was billed at.
import type {
  CatalogModel,
  PricingTierDef,
  SamplingDef,
  ThinkingDef,
  ToolChoiceName,
} from "@pluggableharness/model-kit";

const S = {
  roster:
    "reference-spec first-party/providers/openai.md §2 (roster: context window, max output, tool use, vision)",
  pricing:
    "https://developers.openai.com/api/docs/pricing, as transcribed in api-evangelist/openai plans/openai-plans-pricing.yml (2026-05-04)",
  gpt56:
    "https://developers.openai.com/api/docs/changelog via docs.laozhang.ai/en/announcements/gpt-5-6-pricing-2026-07 (Luna/Terra cut 2026-07-30) and gpt-5-6-sol-price-cut-2026-09 (Sol promotion from 2026-08-21, 'at least through 2026-11-21')",
  gpt56Launch:
    "dev.to/hassann 'GPT-5.6 Sol vs Terra vs Luna' (GA 2026-07-09: Sol $5/$30, Terra $2.50/$15, Luna $1/$6)",
  gpt56Effort:
    "docs.ai-stats.phaseo.app 'OpenAI: Migrating to GPT-5.6' (Sol: none..xhigh plus max; Terra, Luna: none..xhigh; separate cache-write meter)",
  gpt56CacheWrite:
    "wavespeed.ai/llm/openai/gpt-5.6-sol (cache write $6.25 = 1.25x input); same ratio on GPT-6 Sol/Luna (TheKrush/PromptFuel v1.0.21)",
  longContext:
    "benchr.org 'GPT-5.5 pricing explained' and docs.laozhang.ai GPT-5.6 notice: above 272K input tokens the whole request is billed at 2x input, 1.5x output",
  batch: "morphllm.com/openai-api-pricing and aipromptshub.co: Batch API is 50% off input and output",
  effortDefaults:
    "zansara.dev 'Reasoning effort defaults across the GPT-5.x family' (2026-05-26): GPT-5.4 defaults to none, GPT-5.5 reasons by default (medium)",
  effortMatrix:
    "community.openai.com 'compatibility matrix reasoning effort' (gpt-5.1-codex-max: low, medium, high, xhigh; codex models accept no 'none')",
  sampling:
    "platform.openai.com/docs/guides/latest-model: GPT-5.1 and later take temperature and top_p only with reasoning " +
    "effort none (400 'Unsupported parameter: temperature' otherwise; vercel/ai#10932); codex models never",
  caching:
    "reference-spec first-party/providers/openai.md §3: automatic prefix caching above 1,024 tokens, no markers",
  documents:
    "OpenAI Responses API input_file parts (PDF) for vision-capable models; vercel.com/ai-gateway lists File Input for the GPT-5.x line",
  streaming:
    "Responses API SSE event sequence (notes/vendor-wire.md §3, recorded gpt-5.1 and gpt-5.1-codex-max streams)",
};

/** Where the GPT-5.6 variants' figures come from (the same sources for each). */
const SOURCES_5_6 = {
  context_window: S.roster,
  max_output_tokens: S.roster,
  thinking: `${S.gpt56Effort}; default medium assumed as for GPT-5.5`,
  pricing: `${S.gpt56Launch}; ${S.gpt56}; cache write at 1.25x input (${S.gpt56CacheWrite}); ${S.longContext}`,
};

const ALL_CHOICES: ToolChoiceName[] = ["auto", "any", "none", "specific"];
const THRESHOLD = 272_001; // first input-token count billed at the long-context rate

interface Rates {
  input: number;
  output: number;
  cacheRead: number;
  /** Defaults to the input rate (no separate cache-write meter). */
  cacheWrite?: number;
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** One period's tiers: standard, and (when long) the 2x/1.5x tier from 272,001 input tokens. */
function period(r: Rates, opts: { from?: string; until?: string; long: boolean }): PricingTierDef[] {
  const when = { ...(opts.from ? { from: opts.from } : {}), ...(opts.until ? { until: opts.until } : {}) };
  const tier = (x: Rates, bounds: Partial<PricingTierDef>): PricingTierDef => ({
    ...when,
    ...bounds,
    input: round(x.input),
    output: round(x.output),
    cacheRead: round(x.cacheRead),
    cacheWrite: round(x.cacheWrite ?? x.input),
    batchInput: round(x.input / 2),
    batchOutput: round(x.output / 2),
  });
  if (!opts.long) return [tier(r, {})];
  const long: Rates = {
    input: r.input * 2,
    output: r.output * 1.5,
    cacheRead: r.cacheRead * 2,
    cacheWrite: (r.cacheWrite ?? r.input) * 2,
  };
  return [tier(r, { inputUntil: THRESHOLD }), tier(long, { inputFrom: THRESHOLD })];
}

const effort = (levels: string[], dflt: string, canDisable: boolean): ThinkingDef => ({
  effort: { levels, default: dflt },
  adaptiveByDefault: dflt !== "none",
  disable: canDisable ? "always" : "never",
});

interface Entry {
  id: string;
  contextWindow: number;
  maxOutputTokens: number;
  thinking: ThinkingDef;
  tiers: PricingTierDef[];
  sources: Record<string, string>;
  /** Default: temperature and top_p at effort "none" only. */
  sampling?: SamplingDef;
}

/** GPT-5.1 and later: sampling only while not reasoning. */
const AT_EFFORT_NONE: SamplingDef = { accepted: ["temperature", "top_p"], onlyAtEffort: ["none"] };

function model(e: Entry): CatalogModel {
  return {
    id: e.id,
    contextWindow: e.contextWindow,
    maxOutputTokens: e.maxOutputTokens,
    toolUse: true,
    vision: true,
    // 20 MB per image (50 MB of images per request); "high" detail first scales an image
    // to fit 2048x2048, so a longer edge is only bandwidth.
    images: { maxBytes: 20_000_000, maxLongEdge: 2048 },
    documents: true,
    streaming: true,
    parallelToolCalls: true,
    thinking: e.thinking,
    caching: { explicitMarkers: false, implicitAutomatic: true, keepalive: false },
    toolChoiceModes: ALL_CHOICES,
    sampling: e.sampling ?? AT_EFFORT_NONE,
    pricing: { tiers: e.tiers },
    sources: {
      sampling: S.sampling,
      documents: S.documents,
      streaming: S.streaming,
      caching: S.caching,
      tool_choice: "Responses API tool_choice: auto, required, none, {type: function, name}",
      batch: S.batch,
      images:
        "developers.openai.com/docs/guides/images-vision (image input requirements: PNG, JPEG, WEBP, non-animated " +
        "GIF; 20 MB per image, 500 images and 50 MB of image bytes per request; detail high fits 2048x2048, then " +
        "768 px on the short side)",
      ...e.sources,
    },
    wire: { reasoning: true },
  };
}

const GA_56 = "2026-07-09";
const CUT_56 = "2026-07-30";
const PROMO_SOL = "2026-08-21";
const LEVELS_56 = ["none", "low", "medium", "high", "xhigh"];

export const OPENAI_MODELS: readonly CatalogModel[] = [
  model({
    id: "gpt-5.6-sol",
    contextWindow: 1_050_000,
    maxOutputTokens: 128_000,
    thinking: effort([...LEVELS_56, "max"], "medium", true),
    tiers: [
      ...period({ input: 5, output: 30, cacheRead: 0.5, cacheWrite: 6.25 }, { until: PROMO_SOL, long: true }),
      ...period({ input: 4, output: 20, cacheRead: 0.4, cacheWrite: 5 }, { from: PROMO_SOL, long: true }),
    ],
    sources: {
      context_window: S.roster,
      max_output_tokens: S.roster,
      thinking: `${S.gpt56Effort}; default medium assumed as for GPT-5.5 (${S.effortDefaults}); 'none' disables reasoning`,
      pricing: `${S.gpt56Launch}; ${S.gpt56}; cache write ${S.gpt56CacheWrite}; ${S.longContext}`,
      launched: GA_56,
    },
  }),
  model({
    id: "gpt-5.6-terra",
    contextWindow: 1_050_000,
    maxOutputTokens: 128_000,
    thinking: effort(LEVELS_56, "medium", true),
    tiers: [
      ...period(
        { input: 2.5, output: 15, cacheRead: 0.25, cacheWrite: 3.125 },
        { until: CUT_56, long: true },
      ),
      ...period({ input: 2, output: 12, cacheRead: 0.2, cacheWrite: 2.5 }, { from: CUT_56, long: true }),
    ],
    sources: SOURCES_5_6,
  }),
  model({
    id: "gpt-5.6-luna",
    contextWindow: 1_050_000,
    maxOutputTokens: 128_000,
    thinking: effort(LEVELS_56, "medium", true),
    tiers: [
      ...period({ input: 1, output: 6, cacheRead: 0.1, cacheWrite: 1.25 }, { until: CUT_56, long: true }),
      ...period({ input: 0.2, output: 1.2, cacheRead: 0.02, cacheWrite: 0.25 }, { from: CUT_56, long: true }),
    ],
    sources: SOURCES_5_6,
  }),
  model({
    id: "gpt-5.5",
    contextWindow: 1_000_000,
    maxOutputTokens: 128_000,
    thinking: effort(LEVELS_56, "medium", true),
    tiers: period({ input: 5, output: 30, cacheRead: 0.5 }, { long: true }),
    sources: {
      context_window: S.roster,
      max_output_tokens:
        "not confirmed by the roster; 128,000 assumed as for the GPT-5.x line (runware.ai lists 128K for GPT-5.6 Sol)",
      thinking: `${S.effortDefaults}; levels per learn.microsoft.com ReasoningEffort (none..xhigh after gpt-5.1-codex-max)`,
      pricing: `${S.pricing}; ${S.longContext}`,
    },
  }),
  model({
    id: "gpt-5.4",
    contextWindow: 1_050_000,
    maxOutputTokens: 128_000,
    thinking: effort(LEVELS_56, "none", true),
    tiers: period({ input: 2.5, output: 15, cacheRead: 0.25 }, { long: false }),
    sources: {
      context_window:
        "vercel.com/ai-gateway model list (1.1M, i.e. 1,050,000) and ai-model-matrix.com (GPT-5.4 line 1.05M)",
      max_output_tokens: "not published in our sources; 128,000 assumed as for the GPT-5.x line",
      thinking: `${S.effortDefaults}; levels none..xhigh`,
      pricing: `${S.pricing}; no long-context tier found for this model`,
    },
  }),
  model({
    id: "gpt-5.4-mini",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    thinking: effort(LEVELS_56, "none", true),
    tiers: period({ input: 0.75, output: 4.5, cacheRead: 0.075 }, { long: false }),
    sources: {
      context_window: "docs.venice.ai/models/gpt-5-4-mini (400K context, 128K output)",
      max_output_tokens: "docs.venice.ai/models/gpt-5-4-mini",
      thinking:
        "docs.venice.ai/models/gpt-5-4-mini (none, low, medium, high, xhigh); default none assumed as for GPT-5.4",
      pricing: S.pricing,
    },
  }),
  model({
    id: "gpt-5.3-codex",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    thinking: effort(["low", "medium", "high", "xhigh"], "medium", false),
    sampling: { accepted: [] },
    tiers: period({ input: 1.75, output: 14, cacheRead: 0.175 }, { long: false }),
    sources: {
      context_window: "vercel.com/ai-gateway/models/gpt-5.3-codex (400K; vision and file input)",
      max_output_tokens: "not published in our sources; 128,000 assumed as for the codex line",
      thinking: `levels as gpt-5.2-codex in ${S.effortMatrix}; default medium`,
      pricing:
        "fernando-nog.netlify.app 'GPT coding model costs' (2026-05-05) and kissapi.ai: $1.75 / $0.175 cached / $14",
    },
  }),
  model({
    id: "gpt-5.1-codex-max",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    thinking: effort(["low", "medium", "high", "xhigh"], "medium", false),
    sampling: { accepted: [] },
    tiers: period({ input: 1.25, output: 10, cacheRead: 0.125 }, { long: false }),
    sources: {
      context_window: "assumed as for the codex line (400K); llmreference.com has no sourced figure",
      max_output_tokens: "not published in our sources; 128,000 assumed as for the codex line",
      thinking: `${S.effortMatrix}; default medium (learn.microsoft.com ReasoningEffort: models before gpt-5.1 default to medium)`,
      pricing: "fernando-nog.netlify.app 'GPT coding model costs' (2026-05-05): $1.25 / $0.125 cached / $10",
      vision: "llmreference.com lists it as multimodal",
    },
  }),
];

/** Model ids of OpenAI's naming, for deciding whose reasoning items a history holds. */
export function isOpenAIModel(id: string): boolean {
  return /^(gpt-|o\d|codex-|chatgpt-|computer-use)/.test(id);
}
