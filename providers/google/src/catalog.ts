// The built-in Gemini catalog. Every figure has a source (CATALOG.md lists them); models
// whose limits or prices could not be sourced are left out rather than guessed — users
// can declare them through models_json.
import type { CatalogModel } from "@pluggableharness/model-kit";

const PRICING = "ai.google.dev/gemini-api/docs/pricing (paid tier, text/image/video input; batch = 50%)";
const REPORT = "reference-spec first-party/providers/google.md §2-3";
const MODELS = "ai.google.dev/gemini-api/docs/models (model pages: token limits, inputs, capabilities)";
const THINKING = "ai.google.dev/gemini-api/docs/thinking (thinkingBudget ranges, thinkingLevel values)";

/** Gemini-specific per-model wire knobs (read by request.ts). */
export interface GeminiWire {
  /** Which thinking control the model speaks: Gemini 3 levels or Gemini 2.5 budgets. */
  thinkingParam: "level" | "budget" | "none";
}

const common = {
  toolUse: true,
  vision: true,
  documents: true,
  streaming: true,
  parallelToolCalls: true,
  // Implicit caching is automatic; the kernel's breakpoints additionally become explicit
  // CachedContent resources (explicit-cache.ts).
  caching: { explicitMarkers: true, implicitAutomatic: true },
  toolChoiceModes: ["auto", "any", "none", "specific"],
} satisfies Partial<CatalogModel>;

// "Prompts <= 200K tokens" pay the first rate card: the second starts at 200,001. The
// prompt is the whole promptTokenCount, cached content included (docs/decisions.md).
const LONG = 200_001;

// Explicit-cache storage, USD per million tokens per hour (pricing page, "Context caching
// ... storage price"). Creating a cache bills its tokens once at the input rate, which is
// why cacheWrite equals input.
const STORAGE_PRO = 4.5;
const STORAGE_FLASH = 1;

export const GEMINI_MODELS: CatalogModel[] = [
  {
    id: "gemini-3-pro",
    ...common,
    toolChoiceModes: [...common.toolChoiceModes],
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    thinking: {
      effort: { levels: ["low", "high"], default: "high" },
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
      limits: `${REPORT} (confirmed: 1M context, 64K output); ${MODELS}`,
      thinking: `${REPORT} lists LOW/MEDIUM/HIGH, ${THINKING} lists low and high for Pro; the narrower set is declared`,
      pricing: `${PRICING}: <=200K prompt $2/$12, >200K $4/$18, context caching $0.20/$0.40, storage $4.50 per MTok-hour`,
      caching: `${REPORT} §3 (implicit caching on by default from 2.5, explicit caching alongside)`,
    },
    wire: { thinkingParam: "level" },
  },
  {
    id: "gemini-2.5-pro",
    ...common,
    toolChoiceModes: [...common.toolChoiceModes],
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    // Dynamic thinking by default; cannot be turned off (budget 0 is rejected).
    thinking: { budget: { min: 128, max: 32_768 }, adaptiveByDefault: true, disable: "never" },
    pricing: {
      tiers: [
        {
          input: 1.25,
          output: 10,
          cacheRead: 0.125,
          cacheWrite: 1.25,
          cacheStorage: STORAGE_PRO,
          batchInput: 0.625,
          batchOutput: 5,
          inputUntil: LONG,
        },
        {
          input: 2.5,
          output: 15,
          cacheRead: 0.25,
          cacheWrite: 2.5,
          cacheStorage: STORAGE_PRO,
          batchInput: 1.25,
          batchOutput: 7.5,
          inputFrom: LONG,
        },
      ],
    },
    sources: {
      limits: `${REPORT} (1M current context, not the announced 2M); ${MODELS} (65,536 output)`,
      thinking: `${THINKING}: thinkingBudget 128-32768, dynamic (-1) by default, cannot disable`,
      pricing: `${PRICING}: <=200K prompt $1.25/$10, >200K $2.50/$15, caching $0.125/$0.25, storage $4.50 per MTok-hour`,
    },
    wire: { thinkingParam: "budget" },
  },
  {
    id: "gemini-2.5-flash",
    ...common,
    toolChoiceModes: [...common.toolChoiceModes],
    contextWindow: 1_048_576,
    maxOutputTokens: 65_536,
    // Budget 0 turns thinking off; omitted means dynamic thinking.
    thinking: { budget: { min: 0, max: 24_576 }, adaptiveByDefault: true, disable: "always" },
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
      limits: `${REPORT} (65,536 output); ${MODELS} (1,048,576 input)`,
      thinking: `${THINKING}: thinkingBudget 0-24576, 0 disables, dynamic by default`,
      pricing: `${PRICING}: $0.30 input, $2.50 output (thinking included), caching $0.03, storage $1 per MTok-hour`,
    },
    wire: { thinkingParam: "budget" },
  },
];

export function wireOf(model: CatalogModel): GeminiWire {
  const p = model.wire?.["thinkingParam"];
  return { thinkingParam: p === "level" || p === "budget" ? p : model.thinking ? "budget" : "none" };
}
