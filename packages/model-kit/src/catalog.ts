// Built-in model catalogs: plain data with a source for every figure, turned into
// ModelSpec for GetCapabilities, plus the user-declared models a provider block may add
// (`models_json`), which either stand alone or inherit from a catalog entry via "like".
import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConfigDiagnostic } from "@pluggableharness/protocol/config";
import {
  type ModelSpec,
  ModelSpecSchema,
  SamplingParameter,
  ThinkingDisable,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { diagnostic } from "./config.ts";

export type ToolChoiceName = "auto" | "any" | "none" | "specific";
export type SamplingName = "temperature" | "top_p" | "top_k";
export const SAMPLING_NAMES: readonly SamplingName[] = ["temperature", "top_p", "top_k"];

/** The sampling parameters a model accepts (ModelSpec.sampling). */
export interface SamplingDef {
  /** Empty: the model refuses every sampling parameter. */
  accepted: SamplingName[];
  /** When set, `accepted` holds only at these effort levels (the requested one, else the default). */
  onlyAtEffort?: string[];
}
export type DisableName = "never" | "always" | "conditional";

export interface ThinkingDef {
  /** Named effort levels and the vendor's default level. */
  effort?: { levels: string[]; default: string };
  /** Accepted budget range (inclusive), default budget and deprecation. */
  budget?: { min: number; max: number; default?: number; deprecated?: boolean };
  adaptiveByDefault?: boolean;
  disable: DisableName;
}

export interface PricingTierDef {
  /** ISO 8601 dates/instants; absent = unbounded. */
  from?: string;
  until?: string;
  input: number;
  output: number;
  cacheWrite?: number;
  cacheRead?: number;
  batchInput?: number;
  batchOutput?: number;
  /** Explicit-cache storage, USD per million tokens per hour (only where the vendor bills it). */
  cacheStorage?: number;
  /** Half-open input-token window: [inputFrom, inputUntil). */
  inputFrom?: number;
  inputUntil?: number;
}

/** How large an image a vision model takes (ModelSpec.image_limits); 0: no limit of that kind. */
export interface ImageLimitsDef {
  maxBytes: number;
  maxLongEdge: number;
  maxPixels?: number;
  /** A request with more than `over` images has each image's long edge at most `longEdge`. */
  manyImages?: { over: number; longEdge: number };
}

export interface CatalogModel {
  id: string;
  contextWindow: number;
  maxOutputTokens: number;
  toolUse: boolean;
  vision: boolean;
  /** Vision models only. Absent: the kernel's conservative default applies. */
  images?: ImageLimitsDef;
  documents: boolean;
  streaming: boolean;
  parallelToolCalls: boolean;
  /** Absent: the model does not reason. */
  thinking?: ThinkingDef;
  caching: { explicitMarkers: boolean; implicitAutomatic: boolean; keepalive?: boolean };
  toolChoiceModes: ToolChoiceName[];
  /** Absent: not declared, so whatever a profile sets is forwarded. */
  sampling?: SamplingDef;
  pricing: { free?: boolean; tiers: PricingTierDef[] };
  /** Where each figure comes from: free text or URLs, keyed by field or topic. */
  sources: Record<string, string>;
  /** Adapter-specific knobs (wire parameter dialect etc.), opaque to the kit. */
  wire?: Record<string, JsonValue>;
  /** True for models declared in the provider block rather than built in. */
  userDeclared?: boolean;
}

const CHOICE: Record<ToolChoiceName, ToolChoiceMode> = {
  auto: ToolChoiceMode.AUTO,
  any: ToolChoiceMode.ANY,
  none: ToolChoiceMode.NONE,
  specific: ToolChoiceMode.SPECIFIC,
};
const SAMPLING: Record<SamplingName, SamplingParameter> = {
  temperature: SamplingParameter.TEMPERATURE,
  top_p: SamplingParameter.TOP_P,
  top_k: SamplingParameter.TOP_K,
};
const DISABLE: Record<DisableName, ThinkingDisable> = {
  never: ThinkingDisable.NEVER,
  always: ThinkingDisable.ALWAYS,
  conditional: ThinkingDisable.CONDITIONAL,
};

function ts(iso: string) {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new Error(`not an ISO 8601 date: ${iso}`);
  return timestampFromMs(ms);
}

export function toModelSpec(m: CatalogModel): ModelSpec {
  const cachingSupported = m.caching.explicitMarkers || m.caching.implicitAutomatic;
  return create(ModelSpecSchema, {
    id: m.id,
    contextWindow: BigInt(m.contextWindow),
    maxOutputTokens: BigInt(m.maxOutputTokens),
    supportsToolUse: m.toolUse,
    supportsVision: m.vision,
    supportsStreaming: m.streaming,
    supportsParallelToolCalls: m.parallelToolCalls,
    supportsDocuments: m.documents,
    thinking: m.thinking
      ? {
          supported: true,
          ...(m.thinking.effort
            ? { effort: { levels: m.thinking.effort.levels, default: m.thinking.effort.default } }
            : {}),
          ...(m.thinking.budget
            ? {
                budget: {
                  range: { min: BigInt(m.thinking.budget.min), max: BigInt(m.thinking.budget.max) },
                  ...(m.thinking.budget.default !== undefined
                    ? { default: BigInt(m.thinking.budget.default) }
                    : {}),
                  deprecated: m.thinking.budget.deprecated ?? false,
                },
              }
            : {}),
          adaptiveByDefault: m.thinking.adaptiveByDefault ?? false,
          disable: DISABLE[m.thinking.disable],
        }
      : { supported: false },
    caching: {
      supported: cachingSupported,
      explicitMarkers: m.caching.explicitMarkers,
      implicitAutomatic: m.caching.implicitAutomatic,
      keepaliveSupported: cachingSupported && (m.caching.keepalive ?? false),
    },
    pricing: {
      currency: "USD",
      free: m.pricing.free ?? false,
      tiers: m.pricing.tiers.map((t) => ({
        ...(t.from ? { effectiveFrom: ts(t.from) } : {}),
        ...(t.until ? { effectiveUntil: ts(t.until) } : {}),
        inputPerMtok: t.input,
        outputPerMtok: t.output,
        ...(cachingSupported
          ? { cacheWritePerMtok: t.cacheWrite ?? t.input, cacheReadPerMtok: t.cacheRead ?? t.input }
          : {}),
        ...(cachingSupported && t.cacheStorage !== undefined
          ? { cacheStoragePerMtokHour: t.cacheStorage }
          : {}),
        ...(t.batchInput !== undefined && t.batchOutput !== undefined
          ? { batchInputPerMtok: t.batchInput, batchOutputPerMtok: t.batchOutput }
          : {}),
        ...(t.inputFrom !== undefined ? { inputTokensFrom: BigInt(t.inputFrom) } : {}),
        ...(t.inputUntil !== undefined ? { inputTokensUntil: BigInt(t.inputUntil) } : {}),
      })),
    },
    supportedToolChoiceModes: m.toolChoiceModes.map((c) => CHOICE[c]),
    ...(m.vision && m.images
      ? {
          imageLimits: {
            maxBytes: BigInt(m.images.maxBytes),
            maxLongEdge: m.images.maxLongEdge,
            maxPixels: BigInt(m.images.maxPixels ?? 0),
            manyImagesThreshold: m.images.manyImages?.over ?? 0,
            manyImagesLongEdge: m.images.manyImages?.longEdge ?? 0,
          },
        }
      : {}),
    ...(m.sampling
      ? {
          sampling: {
            accepted: m.sampling.accepted.map((n) => SAMPLING[n]),
            onlyAtEffort: m.sampling.onlyAtEffort ?? [],
          },
        }
      : {}),
  });
}

// ---------------------------------------------------------------------------------------
// User-declared models (`models_json`).

export interface CustomModelsResult {
  models: CatalogModel[];
  diagnostics: ConfigDiagnostic[];
}

/** Provider-level defaults for user-declared models (e.g. a provider configured as free). */
export interface CustomModelDefaults {
  /** Pricing for an entry that declares neither "pricing" nor "like". */
  pricing?: CatalogModel["pricing"] | undefined;
}

const KEYS = new Set([
  "like",
  "context_window",
  "max_output_tokens",
  "tool_use",
  "vision",
  "documents",
  "streaming",
  "parallel_tool_calls",
  "thinking",
  "caching",
  "tool_choice_modes",
  "sampling",
  "images",
  "pricing",
  "wire",
]);

const isObj = (v: unknown): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const posInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v > 0;
const rate = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;

/**
 * Parses the `models_json` attribute: a JSON object keyed by model id. Each entry either
 * names a built-in model in "like" (its declaration is copied, then overridden field by
 * field) or declares at least context_window, max_output_tokens and pricing. Unknown keys
 * and malformed values are errors naming the model and the key.
 */
export function parseCustomModels(
  attribute: string,
  text: string | undefined,
  builtins: readonly CatalogModel[],
  defaults: CustomModelDefaults = {},
): CustomModelsResult {
  const models: CatalogModel[] = [];
  const diagnostics: ConfigDiagnostic[] = [];
  if (text === undefined || text.trim() === "") return { models, diagnostics };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    diagnostics.push(
      diagnostic("error", [attribute], `"${attribute}" is not valid JSON`, (err as Error).message),
    );
    return { models, diagnostics };
  }
  if (!isObj(parsed)) {
    diagnostics.push(
      diagnostic("error", [attribute], `"${attribute}" must be a JSON object keyed by model id`),
    );
    return { models, diagnostics };
  }
  for (const [id, entry] of Object.entries(parsed)) {
    const errs: string[] = [];
    const model = customModel(id, entry, builtins, errs, defaults);
    if (errs.length > 0 || !model) {
      for (const e of errs) diagnostics.push(diagnostic("error", [attribute, id], `Model "${id}": ${e}`));
    } else {
      models.push(model);
    }
  }
  return { models, diagnostics };
}

function customModel(
  id: string,
  entry: JsonValue,
  builtins: readonly CatalogModel[],
  errs: string[],
  defaults: CustomModelDefaults,
): CatalogModel | undefined {
  if (id.trim() === "") {
    errs.push("the model id is empty");
    return undefined;
  }
  if (!isObj(entry)) {
    errs.push("the declaration must be a JSON object");
    return undefined;
  }
  for (const k of Object.keys(entry)) if (!KEYS.has(k)) errs.push(`unknown key "${k}"`);
  let base: CatalogModel | undefined;
  if (entry.like !== undefined) {
    base = builtins.find((b) => b.id === entry.like);
    if (!base) errs.push(`"like" names no built-in model (${builtins.map((b) => b.id).join(", ")})`);
  }
  const num = (key: string, fallback: number | undefined): number => {
    const v = entry[key];
    if (v === undefined) {
      if (fallback === undefined) errs.push(`"${key}" is required`);
      return fallback ?? 1;
    }
    if (!posInt(v)) errs.push(`"${key}" must be a positive integer`);
    return v as number;
  };
  const bool = (key: string, fallback: boolean): boolean => {
    const v = entry[key];
    if (v === undefined) return fallback;
    if (typeof v !== "boolean") errs.push(`"${key}" must be true or false`);
    return v === true;
  };
  const thinking = entry.thinking === undefined ? base?.thinking : parseThinking(entry.thinking, errs);
  const caching = entry.caching === undefined ? base?.caching : parseCaching(entry.caching, errs);
  const pricing =
    entry.pricing === undefined ? (base?.pricing ?? defaults.pricing) : parsePricing(entry.pricing, errs);
  if (!pricing) errs.push(`"pricing" is required (use {"free": true} for a free model)`);
  let modes = base?.toolChoiceModes ?? [];
  if (entry.tool_choice_modes !== undefined) {
    const v = entry.tool_choice_modes;
    if (!Array.isArray(v) || !v.every((x) => x === "auto" || x === "any" || x === "none" || x === "specific"))
      errs.push(`"tool_choice_modes" must list "auto", "any", "none" or "specific"`);
    else modes = v as ToolChoiceName[];
  }
  const sampling = entry.sampling === undefined ? base?.sampling : parseSampling(entry.sampling, errs);
  const images = entry.images === undefined ? base?.images : parseImages(entry.images, errs);
  if (entry.wire !== undefined && !isObj(entry.wire)) errs.push(`"wire" must be an object`);
  const model: CatalogModel = {
    id,
    contextWindow: num("context_window", base?.contextWindow),
    maxOutputTokens: num("max_output_tokens", base?.maxOutputTokens),
    toolUse: bool("tool_use", base?.toolUse ?? true),
    vision: bool("vision", base?.vision ?? false),
    ...(images ? { images } : {}),
    documents: bool("documents", base?.documents ?? false),
    streaming: bool("streaming", base?.streaming ?? true),
    parallelToolCalls: bool("parallel_tool_calls", base?.parallelToolCalls ?? false),
    ...(thinking ? { thinking } : {}),
    caching: caching ?? { explicitMarkers: false, implicitAutomatic: false },
    toolChoiceModes: modes,
    ...(sampling ? { sampling } : {}),
    pricing: pricing ?? { tiers: [] },
    sources: {
      all: base ? `declared in the provider block, like ${base.id}` : "declared in the provider block",
    },
    ...(isObj(entry.wire)
      ? { wire: { ...(base?.wire ?? {}), ...entry.wire } }
      : base?.wire
        ? { wire: base.wire }
        : {}),
    userDeclared: true,
  };
  return model;
}

function parseThinking(v: JsonValue, errs: string[]): ThinkingDef | undefined {
  if (v === false || v === null) return undefined;
  if (!isObj(v)) {
    errs.push(`"thinking" must be an object, or false for a model that does not reason`);
    return undefined;
  }
  const out: ThinkingDef = { disable: "never" };
  const disable = v.disable ?? "never";
  if (disable !== "never" && disable !== "always" && disable !== "conditional")
    errs.push(`"thinking.disable" must be "never", "always" or "conditional"`);
  else out.disable = disable;
  if (v.adaptive_by_default !== undefined) {
    if (typeof v.adaptive_by_default !== "boolean")
      errs.push(`"thinking.adaptive_by_default" must be true or false`);
    else out.adaptiveByDefault = v.adaptive_by_default;
  }
  if (v.effort !== undefined) {
    const e = v.effort;
    if (
      !isObj(e) ||
      !Array.isArray(e.levels) ||
      e.levels.length === 0 ||
      !e.levels.every((l) => typeof l === "string") ||
      typeof e.default !== "string" ||
      !e.levels.includes(e.default)
    )
      errs.push(`"thinking.effort" needs non-empty "levels" and a "default" among them`);
    else out.effort = { levels: e.levels as string[], default: e.default };
  }
  if (v.budget !== undefined) {
    const b = v.budget;
    if (!isObj(b) || !posInt(b.min) || !posInt(b.max) || b.min > b.max)
      errs.push(`"thinking.budget" needs positive integers "min" <= "max"`);
    else {
      out.budget = { min: b.min, max: b.max, deprecated: b.deprecated === true };
      if (b.default !== undefined) {
        if (!posInt(b.default) || b.default < b.min || b.default > b.max)
          errs.push(`"thinking.budget.default" must lie within [min, max]`);
        else out.budget.default = b.default;
      }
    }
  }
  const unknown = Object.keys(v).filter(
    (k) => !["disable", "adaptive_by_default", "effort", "budget"].includes(k),
  );
  for (const k of unknown) errs.push(`unknown key "thinking.${k}"`);
  return out;
}

/**
 * `"sampling"`: the list of accepted parameters, or `{"accepted": [...], "only_at_effort": [...]}`;
 * `null` removes an inherited declaration (the kernel then forwards what a profile sets).
 */
/** `"images"`: `{"max_bytes": n, "max_long_edge": n, "max_pixels": n}`, each optional (0: no limit). */
function parseImages(v: JsonValue, errs: string[]): ImageLimitsDef | undefined {
  if (v === null) return undefined;
  const keys = ["max_bytes", "max_long_edge", "max_pixels"];
  if (!isObj(v)) {
    errs.push(`"images" must be an object with ${keys.map((k) => `"${k}"`).join(", ")}`);
    return undefined;
  }
  for (const k of Object.keys(v)) if (!keys.includes(k)) errs.push(`unknown key "images.${k}"`);
  const n = (k: string): number => {
    const x = v[k];
    if (x === undefined) return 0;
    if (typeof x !== "number" || !Number.isInteger(x) || x < 0) {
      errs.push(`"images.${k}" must be a whole number, 0 or more`);
      return 0;
    }
    return x;
  };
  return { maxBytes: n("max_bytes"), maxLongEdge: n("max_long_edge"), maxPixels: n("max_pixels") };
}

function parseSampling(v: JsonValue, errs: string[]): SamplingDef | undefined {
  if (v === null) return undefined;
  const names = (x: JsonValue | undefined): SamplingName[] | undefined =>
    Array.isArray(x) && x.every((n) => typeof n === "string" && SAMPLING_NAMES.includes(n as SamplingName))
      ? ([...new Set(x)] as SamplingName[])
      : undefined;
  const list = names(v);
  if (list) return { accepted: list };
  if (isObj(v)) {
    const accepted = names(v.accepted);
    const effort = v.only_at_effort;
    const levels =
      effort === undefined
        ? []
        : Array.isArray(effort) && effort.every((e) => typeof e === "string")
          ? (effort as string[])
          : undefined;
    for (const k of Object.keys(v))
      if (k !== "accepted" && k !== "only_at_effort") errs.push(`unknown key "sampling.${k}"`);
    if (accepted && levels) return levels.length > 0 ? { accepted, onlyAtEffort: levels } : { accepted };
  }
  errs.push(
    `"sampling" must list ${SAMPLING_NAMES.map((n) => `"${n}"`).join(", ")}, or be {"accepted": [...], "only_at_effort": [...]}`,
  );
  return undefined;
}

function parseCaching(v: JsonValue, errs: string[]): CatalogModel["caching"] | undefined {
  if (v === false || v === null) return { explicitMarkers: false, implicitAutomatic: false };
  if (!isObj(v)) {
    errs.push(`"caching" must be an object`);
    return undefined;
  }
  const explicit = v.explicit_markers ?? false;
  const implicit = v.implicit_automatic ?? false;
  if (typeof explicit !== "boolean" || typeof implicit !== "boolean")
    errs.push(`"caching.explicit_markers" and "caching.implicit_automatic" must be true or false`);
  return { explicitMarkers: explicit === true, implicitAutomatic: implicit === true };
}

function parsePricing(v: JsonValue, errs: string[]): CatalogModel["pricing"] | undefined {
  if (!isObj(v)) {
    errs.push(`"pricing" must be an object`);
    return undefined;
  }
  if (v.free === true) return { free: true, tiers: [] };
  const fields: Array<[string, keyof PricingTierDef]> = [
    ["input_per_mtok", "input"],
    ["output_per_mtok", "output"],
    ["cache_write_per_mtok", "cacheWrite"],
    ["cache_read_per_mtok", "cacheRead"],
    ["batch_input_per_mtok", "batchInput"],
    ["batch_output_per_mtok", "batchOutput"],
    ["cache_storage_per_mtok_hour", "cacheStorage"],
  ];
  const tier: Partial<PricingTierDef> = {};
  for (const [key, field] of fields) {
    const r = v[key];
    if (r === undefined) continue;
    if (!rate(r)) errs.push(`"pricing.${key}" must be a non-negative number`);
    else (tier as Record<string, number>)[field] = r;
  }
  if (tier.input === undefined || tier.output === undefined)
    errs.push(`"pricing" needs "input_per_mtok" and "output_per_mtok" (or "free": true)`);
  for (const k of Object.keys(v))
    if (k !== "free" && !fields.some(([f]) => f === k)) errs.push(`unknown key "pricing.${k}"`);
  return { tiers: [tier as PricingTierDef] };
}
