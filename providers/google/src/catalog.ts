// The built-in Gemini catalog. Every figure has a source (CATALOG.md lists them); models
// whose limits or prices could not be sourced are left out rather than guessed — users
// can declare them through models_json.
import type { CatalogModel } from "@pluggableharness/model-kit";

const PRICING =
  "ai.google.dev/gemini-api/docs/pricing (paid tier, text/image/video input; batch = 50%), as transcribed by " +
  "cloudprice.net, vercel.com/ai-gateway and docs.apiyi.com";
const MODELS =
  "ai.google.dev/gemini-api/docs/models and the model ids on ai.google.dev/gemini-api/docs/deprecations " +
  "(read for 2026-12-01: gemini-3-pro-preview shut down 2026-03-09; gemini-2.5-pro and gemini-2.5-flash " +
  "shut down 2026-12-01; gemini-2.5-flash-lite not deprecated)";
const GUIDE =
  "docs.cloud.google.com gemini-enterprise-agent-platform 'Developer's guide to Gemini 3.8 Flash' (spec table: " +
  "3.8 Flash, 3.7 Flash, 3.1 Pro: 1,048,576 context, 65,536 output, thinking levels and defaults)";
const THINKING = "ai.google.dev/gemini-api/docs/thinking (thinkingLevel values, thinkingBudget ranges)";
const SIGNATURES =
  "ai.google.dev/gemini-api/docs/thought-signatures: Gemini 3 models reject function calls of the current turn " +
  "without their thought signature (400); history without one gets the documented placeholder";
const SAMPLING = "generationConfig temperature, topP and topK (every Gemini model takes them)";

/** Gemini-specific per-model wire knobs (read by request.ts). */
export interface GeminiWire {
  /** Which thinking control the model speaks: Gemini 3 levels or Gemini 2.5 budgets. */
  thinkingParam: "level" | "budget" | "none";
  /** The model refuses a current-turn function call without a thought signature (Gemini 3 and later). */
  signaturesRequired: boolean;
}

const common = {
  toolUse: true,
  vision: true,
  // Inline data: the whole request under 20 MB (ai.google.dev/gemini-api/docs/vision); 7 MB
  // per inline file on Vertex AI. No pixel maximum is documented: the long edge is our cap
  // (Gemini bills 258 tokens per 768x768 tile, so 3072 px is at most 16 tiles).
  images: { maxBytes: 7_000_000, maxLongEdge: 3072 },
  documents: true,
  streaming: true,
  parallelToolCalls: true,
  // Implicit caching is automatic; the kernel's breakpoints additionally become explicit
  // CachedContent resources (explicit-cache.ts).
  caching: { explicitMarkers: true, implicitAutomatic: true },
  toolChoiceModes: ["auto", "any", "none", "specific"],
  sampling: { accepted: ["temperature", "top_p", "top_k"] },
} satisfies Partial<CatalogModel>;

/** Fresh copies of the shared declarations (catalog entries are mutable plain data). */
const base = () => ({
  ...common,
  toolChoiceModes: [...common.toolChoiceModes],
  sampling: { accepted: [...common.sampling.accepted] },
});

// "Prompts <= 200K tokens" pay the first rate card: the second starts at 200,001. The
// prompt is the whole promptTokenCount, cached content included (docs/decisions/vendors.md).
const LONG = 200_001;

// Explicit-cache storage, USD per million tokens per hour (pricing page, "Context caching
// ... storage price"). Creating a cache bills its tokens once at the input rate, which is
// why cacheWrite equals input.
const STORAGE_PRO = 4.5;
const STORAGE_FLASH = 1;

export const GEMINI_MODELS: CatalogModel[] = [
  {
    id: "gemini-3.8-flash",
    ...base(),
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    thinking: {
      effort: { levels: ["low", "medium", "high"], default: "medium" },
      adaptiveByDefault: true,
      disable: "never",
    },
    pricing: {
      tiers: [
        {
          input: 0.75,
          output: 3.75,
          cacheRead: 0.075,
          cacheWrite: 0.75,
          cacheStorage: STORAGE_FLASH,
          batchInput: 0.375,
          batchOutput: 1.875,
        },
      ],
    },
    sources: {
      id: `${MODELS} (GA 2026-09-02, no shutdown announced)`,
      limits: GUIDE,
      thinking: `${GUIDE}: LOW, MEDIUM, HIGH, default MEDIUM (minimal was removed in 3.8)`,
      pricing: `${PRICING}: $0.75 input, $3.75 output, cached $0.075, storage $1 per MTok-hour; no long-context tier published`,
      signatures: SIGNATURES,
      sampling: SAMPLING,
    },
    wire: { thinkingParam: "level", signaturesRequired: true },
  },
  {
    id: "gemini-3.1-pro-preview",
    ...base(),
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    thinking: {
      effort: { levels: ["low", "medium", "high"], default: "high" },
      adaptiveByDefault: true,
      disable: "never",
    },
    pricing: {
      tiers: [
        {
          input: 2,
          output: 12,
          cacheRead: 0.2,
          cacheWrite: 2,
          cacheStorage: STORAGE_PRO,
          batchInput: 1,
          batchOutput: 6,
          inputUntil: LONG,
        },
        {
          input: 4,
          output: 18,
          cacheRead: 0.4,
          cacheWrite: 4,
          cacheStorage: STORAGE_PRO,
          batchInput: 2,
          batchOutput: 9,
          inputFrom: LONG,
        },
      ],
    },
    sources: {
      id: `${MODELS} (preview since 2026-02-19, the replacement named for gemini-3-pro-preview)`,
      limits: GUIDE,
      thinking: `${GUIDE}: LOW, MEDIUM, HIGH, default HIGH`,
      pricing: `${PRICING}: <=200K prompt $2/$12, >200K $4/$18, cached $0.20/$0.40, storage $4.50 per MTok-hour`,
      signatures: SIGNATURES,
      sampling: SAMPLING,
    },
    wire: { thinkingParam: "level", signaturesRequired: true },
  },
  {
    id: "gemini-3.5-flash-lite",
    ...base(),
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    thinking: {
      effort: { levels: ["minimal", "low", "medium", "high"], default: "minimal" },
      adaptiveByDefault: true,
      disable: "never",
    },
    pricing: {
      tiers: [
        {
          input: 0.3,
          output: 2.5,
          cacheRead: 0.03,
          cacheWrite: 0.3,
          cacheStorage: STORAGE_FLASH,
          batchInput: 0.15,
          batchOutput: 1.25,
        },
      ],
    },
    sources: {
      id: `${MODELS} (GA 2026-07-21; the replacement named for gemini-2.5-flash)`,
      limits:
        "ai.google.dev/gemini-api/docs/whats-new-gemini-3.6 (1M context for 3.6 Flash and 3.5 Flash-Lite); 65,536 output as the Gemini 3 line",
      thinking:
        "ai.google.dev/gemini-api/docs/whats-new-gemini-3.6 (default level minimal); levels minimal, low, medium, high",
      pricing: `${PRICING}: $0.30 input, $2.50 output, cached $0.03, storage $1 per MTok-hour`,
      signatures: SIGNATURES,
      sampling: SAMPLING,
    },
    wire: { thinkingParam: "level", signaturesRequired: true },
  },
  {
    id: "gemini-2.5-flash-lite",
    ...base(),
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    // Off by default; a budget turns it on, 0 turns it off again.
    thinking: { budget: { min: 0, max: 24_576 }, adaptiveByDefault: false, disable: "always" },
    pricing: {
      tiers: [
        {
          input: 0.1,
          output: 0.4,
          cacheRead: 0.01,
          cacheWrite: 0.1,
          cacheStorage: STORAGE_FLASH,
          batchInput: 0.05,
          batchOutput: 0.2,
        },
      ],
    },
    sources: {
      id: `${MODELS} ("not deprecated and remains available through the API until further notice")`,
      limits: "ai.google.dev/gemini-api/docs/models/gemini-2.5-flash-lite (1,048,576 input, 65,536 output)",
      thinking: `${THINKING}: thinkingBudget 512-24576 or 0, no thinking unless a budget is set`,
      pricing: `${PRICING}: $0.10 input, $0.40 output, caching $0.01, storage $1 per MTok-hour`,
      signatures: "Gemini 2.5 returns thought signatures but does not require them back",
      sampling: SAMPLING,
    },
    wire: { thinkingParam: "budget", signaturesRequired: false },
  },
];

/** Gemini 3 and later: the generations whose function calls need their thought signature. */
export const SIGNATURE_GENERATION = /^gemini-([3-9]|\d{2,})[.-]/;

export function wireOf(model: CatalogModel): GeminiWire {
  const p = model.wire?.["thinkingParam"];
  const sig = model.wire?.["signaturesRequired"];
  return {
    thinkingParam: p === "level" || p === "budget" ? p : model.thinking ? "budget" : "none",
    // A user-declared model without the knob is judged by its id.
    signaturesRequired: typeof sig === "boolean" ? sig : SIGNATURE_GENERATION.test(model.id),
  };
}
