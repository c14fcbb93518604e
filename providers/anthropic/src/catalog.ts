// The built-in Anthropic catalog. Every figure has a source (CATALOG.md lists them in
// full); where the sources are silent or disagree the conservative reading is taken and
// named in `sources`.
import type { CatalogModel } from "@pluggableharness/model-kit";

const PRICING = "platform.claude.com/docs/en/about-claude/pricing (model pricing, batch processing)";
const ROSTER = "reference-spec first-party/providers/anthropic.md §2-3 (roster, thinking per model)";
const NO_SAMPLING =
  "sampling parameters were removed from the request surface at Opus 4.7: temperature, top_p and top_k answer 400 " +
  "'temperature is deprecated for this model' (reported live for claude-opus-4-7/4-8 and claude-sonnet-5: " +
  "simstudioai/sim#5328, BerriAI/litellm#26444, github/copilot-sdk#1557)";
const SAMPLING =
  "Messages API temperature, top_p and top_k (accepted up to the 4.6 models; the adapter still leaves temperature " +
  "out while extended thinking is on, which the API refuses)";
const SEED =
  "model provider data types seed (ThinkingSpec rationale: Opus/Sonnet 4.6, Haiku 4.5, Opus 4.8, Sonnet 5)";

/** Anthropic-specific per-model wire knobs (read by request.ts). */
export interface AnthropicWire {
  /** The model accepts `thinking: {type: "adaptive"}`. */
  adaptive: boolean;
}

const VISION =
  "platform.claude.com/docs/en/build-with-claude/vision (8000x8000 px maximum, 2000x2000 px when a request carries " +
  "more than 20 images; images over a 1568 px long edge or ~1.15 MP are downscaled by the API, so larger ones cost " +
  "latency for nothing); 5 MB per image measured on the base64 text (the API's 400 'image exceeds 5 MB maximum: N " +
  "bytes > 5242880 bytes', anthropics/claude-code#14887), i.e. 3.75 MiB of image bytes";
const VISION_HIGH_RES =
  "Claude Opus 4.7 introduced high-resolution vision (3.75 MP, up to a 2576 px long edge; release notes as reported " +
  "by vercel.com/ai-gateway and apidog.com); Opus 4.8 is taken to keep it";

/** Standard Claude vision: what the API keeps without downscaling. */
const IMAGES = {
  maxBytes: 3_932_160,
  maxLongEdge: 1568,
  maxPixels: 1_150_000,
  manyImages: { over: 20, longEdge: 2000 },
} as const;

const common = {
  toolUse: true,
  vision: true,
  images: IMAGES,
  documents: true,
  streaming: true,
  parallelToolCalls: true,
  caching: { explicitMarkers: true, implicitAutomatic: false, keepalive: true },
} as const;

/** What Opus 4.6 and Sonnet 4.6 share: 1M context, 128K output, effort with a deprecated budget. */
const GEN_4_6 = {
  contextWindow: 1_000_000,
  maxOutputTokens: 128_000,
  thinking: {
    effort: { levels: ["low", "medium", "high", "max"], default: "high" },
    budget: { min: 1024, max: 127_999, deprecated: true },
    adaptiveByDefault: false,
    disable: "always",
  },
  toolChoiceModes: ["auto", "any", "none", "specific"],
  sampling: { accepted: ["temperature", "top_p", "top_k"] },
} satisfies Partial<CatalogModel>;

export const ANTHROPIC_MODELS: CatalogModel[] = [
  {
    id: "claude-opus-4-8",
    ...common,
    images: { ...IMAGES, maxLongEdge: 2576, maxPixels: 3_750_000 },
    contextWindow: 1_000_000,
    maxOutputTokens: 128_000,
    // Adaptive only: budget_tokens is rejected with a 400; effort rides on output_config.
    thinking: {
      effort: { levels: ["low", "medium", "high", "xhigh", "max"], default: "high" },
      adaptiveByDefault: true,
      disable: "never",
    },
    // Forcing a tool is incompatible with always-on reasoning.
    toolChoiceModes: ["auto", "none"],
    sampling: { accepted: [] },
    pricing: {
      tiers: [{ input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5, batchInput: 2.5, batchOutput: 12.5 }],
    },
    sources: {
      sampling: NO_SAMPLING,
      limits: ROSTER,
      images: `${VISION}; ${VISION_HIGH_RES}`,
      thinking: `${ROSTER}; ${SEED}; disable not documented for this model, declared "never" (conservative)`,
      pricing: PRICING,
    },
    wire: { adaptive: true },
  },
  {
    id: "claude-sonnet-5",
    ...common,
    contextWindow: 1_000_000,
    maxOutputTokens: 128_000,
    thinking: {
      effort: { levels: ["low", "medium", "high", "max"], default: "high" },
      adaptiveByDefault: true,
      disable: "never",
    },
    toolChoiceModes: ["auto", "none"],
    sampling: { accepted: [] },
    pricing: {
      tiers: [{ input: 2, output: 10, cacheWrite: 2.5, cacheRead: 0.2, batchInput: 1, batchOutput: 5 }],
    },
    sources: {
      images: VISION,
      sampling: NO_SAMPLING,
      limits: ROSTER,
      thinking: `${ROSTER}; ${SEED}; effort ladder per the adaptive-thinking docs (xhigh only on Opus), disable declared "never" (conservative)`,
      pricing: `${PRICING}: $2 input / $10 output; cache write 1.25x and read 0.1x of input, batch 50%`,
    },
    wire: { adaptive: true },
  },
  {
    id: "claude-opus-4-6",
    ...common,
    ...GEN_4_6,
    pricing: {
      tiers: [{ input: 5, output: 25, cacheWrite: 6.25, cacheRead: 0.5, batchInput: 2.5, batchOutput: 12.5 }],
    },
    sources: {
      images: VISION,
      sampling: SAMPLING,
      limits: "Anthropic models overview (1M context, 128K output)",
      thinking: `${SEED}: effort and a deprecated but working budget; budget must stay below max_tokens and at least 1024`,
      pricing: PRICING,
    },
    wire: { adaptive: true },
  },
  {
    id: "claude-sonnet-4-6",
    ...common,
    ...GEN_4_6,
    pricing: {
      tiers: [{ input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3, batchInput: 1.5, batchOutput: 7.5 }],
    },
    sources: {
      images: VISION,
      sampling: SAMPLING,
      limits: `${ROSTER} (confirmed 1M / 128K)`,
      thinking: `${ROSTER}; ${SEED}`,
      pricing: PRICING,
    },
    wire: { adaptive: true },
  },
  {
    id: "claude-haiku-4-5-20251001",
    ...common,
    contextWindow: 200_000,
    maxOutputTokens: 64_000,
    // Budget only; the effort parameter is an error on this model.
    thinking: { budget: { min: 1024, max: 63_999 }, adaptiveByDefault: false, disable: "always" },
    toolChoiceModes: ["auto", "any", "none", "specific"],
    sampling: { accepted: ["temperature", "top_p", "top_k"] },
    pricing: {
      tiers: [{ input: 1, output: 5, cacheWrite: 1.25, cacheRead: 0.1, batchInput: 0.5, batchOutput: 2.5 }],
    },
    sources: {
      images: VISION,
      sampling: SAMPLING,
      limits: `${ROSTER} (confirmed 200K / 64K)`,
      thinking: `${ROSTER}; ${SEED}`,
      pricing: PRICING,
    },
    wire: { adaptive: false },
  },
];

export function wireOf(model: CatalogModel): AnthropicWire {
  const w = model.wire ?? {};
  return { adaptive: w["adaptive"] === true };
}
