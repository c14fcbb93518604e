// The built-in xAI catalog (Chat Completions). Every figure names its source in `sources`.
// Ids are the vendor's exact model names from docs.x.ai. The reference roster's `grok-4-5`
// and `grok-build` are not declared: no price or output limit for them could be sourced
// (CATALOG.md); users add them with models_json ({"grok-4-5": {"like": "grok-4.3"}}).
//
// Caching is automatic and marker-free; cached prompt tokens are billed at the cached rate
// and a cache write costs the normal input rate (xAI meters no cache writes).
import type { CatalogModel, ThinkingDef, ToolChoiceName } from "@pluggableharness/model-kit";

const S = {
  models: "docs.x.ai/developers/models (context windows, modalities, reasoning variants)",
  grok43:
    "docs.x.ai model page 'Grok 4.3' (1,000,000 context; text and image in; reasoning none/low/medium/high)",
  pricing: "docs.x.ai/developers/pricing (Chat API table: input, cached input, output per 1M tokens)",
  reference:
    "reference-spec first-party/providers/xai.md §3 (effort default high; automatic caching; no cache markers)",
  caching:
    "reference-spec first-party/providers/xai.md §3 (automatic, prefix up to tool results, x-grok-conv-id)",
  toolChoice:
    "xAI Chat Completions tool_choice: auto, required, none, or a named function (OpenAI-compatible)",
  streaming: "notes/vendor-wire.md §5 (recorded xAI chat streams)",
  longContext:
    "docs.x.ai model page says requests above 200K tokens are billed at different rates but publishes no figure; not modelled",
};

const ALL_CHOICES: ToolChoiceName[] = ["auto", "any", "none", "specific"];

function grok(
  id: string,
  e: {
    contextWindow: number;
    maxOutputTokens: number;
    thinking?: ThinkingDef;
    input: number;
    cachedInput: number;
    output: number;
    sources: Record<string, string>;
  },
): CatalogModel {
  return {
    id,
    contextWindow: e.contextWindow,
    maxOutputTokens: e.maxOutputTokens,
    toolUse: true,
    vision: true,
    // docs.x.ai image understanding: 10 MiB per image, jpg/png. No pixel maximum is
    // documented: 2048 px is our cap, as for OpenAI's high detail.
    images: { maxBytes: 10 * 1024 * 1024, maxLongEdge: 2048 },
    documents: false,
    streaming: true,
    parallelToolCalls: true,
    ...(e.thinking ? { thinking: e.thinking } : {}),
    caching: { explicitMarkers: false, implicitAutomatic: true, keepalive: false },
    toolChoiceModes: ALL_CHOICES,
    // Reasoning models refuse presence/frequency penalties and stop, not sampling.
    sampling: { accepted: ["temperature", "top_p"] },
    pricing: {
      tiers: [{ input: e.input, output: e.output, cacheRead: e.cachedInput, cacheWrite: e.input }],
    },
    sources: {
      caching: S.caching,
      tool_choice: S.toolChoice,
      streaming: S.streaming,
      documents:
        "xAI chat takes images inline; documents go through its Files API, which this provider does not use",
      long_context: S.longContext,
      sampling:
        "docs.x.ai/docs/guides/reasoning (reasoning models reject presencePenalty, frequencyPenalty and stop; " +
        "temperature and top_p are accepted); xAI documents no top_k",
      ...e.sources,
    },
  };
}

/** A reasoning model without a reasoning_effort parameter: it always reasons. */
const ALWAYS_REASONS: ThinkingDef = { adaptiveByDefault: true, disable: "never" };

export const XAI_MODELS: readonly CatalogModel[] = [
  grok("grok-4.3", {
    contextWindow: 1_000_000,
    maxOutputTokens: 65_536,
    thinking: {
      effort: { levels: ["none", "low", "medium", "high"], default: "high" },
      adaptiveByDefault: true,
      disable: "always",
    },
    input: 1.25,
    cachedInput: 0.2,
    output: 2.5,
    sources: {
      context_window: S.grok43,
      max_output_tokens: "therouter-docs.pages.dev/models/xai--grok-4.3 (66K); xAI publishes no limit",
      thinking: `${S.grok43}; default high per ${S.reference}; effort 'none' turns reasoning off`,
      pricing: `${S.pricing}; ${S.grok43}`,
      vision: S.grok43,
    },
  }),
  grok("grok-4.20-0309-reasoning", {
    contextWindow: 2_000_000,
    maxOutputTokens: 30_000,
    thinking: ALWAYS_REASONS,
    input: 1.25,
    cachedInput: 0.2,
    output: 2.5,
    sources: {
      context_window: S.models,
      max_output_tokens: "pi.dev/models/xai/grok-4-20-0309-reasoning and models.dev via whichllm.io (30,000)",
      thinking:
        "docs.x.ai/developers/models: a reasoning variant; Grok 4 reasoning models take no reasoning_effort (an error) and cannot turn reasoning off",
      pricing: `${S.pricing} (launched at $2 / $6, docs.x.ai models table, mungomash.com)`,
      vision: S.models,
    },
  }),
  grok("grok-4.20-0309-non-reasoning", {
    contextWindow: 2_000_000,
    maxOutputTokens: 30_000,
    input: 1.25,
    cachedInput: 0.2,
    output: 2.5,
    sources: {
      context_window: S.models,
      max_output_tokens: "as grok-4.20-0309-reasoning (same model, reasoning off)",
      thinking: "docs.x.ai/developers/models: the non-reasoning variant",
      pricing: S.pricing,
      vision: S.models,
    },
  }),
];

export function isXaiModel(id: string): boolean {
  return /^grok-/.test(id);
}
