// Sampling parameters (temperature, top_p, top_k) as an adapter sends them: from the typed
// GenerationParams first, then from provider_options (the older spelling of top_p/top_k),
// and never one the model's catalog entry says it refuses. Models differ per id, not per
// vendor: Claude Opus 4.7 and later answer any of them with a 400, OpenAI's GPT-5.x take
// temperature/top_p only at effort "none", Gemini takes all three (docs/decisions/vendors.md,
// "Sampling parameters are declared per model"). The kernel already drops what a model refuses; this is
// the adapter's own guard, so no kernel and no provider_options can put one on the wire.
import type { JsonObject } from "@bufbuild/protobuf";
import type { StreamCompletionRequest } from "@pluggableharness/protocol/model";
import { type CatalogModel, SAMPLING_NAMES, type SamplingName } from "./catalog.ts";
import { ModelFailure } from "./errors.ts";

export interface SamplingValues {
  temperature?: number;
  top_p?: number;
  top_k?: number;
}

export interface SamplingChoice {
  /** What to send. */
  values: SamplingValues;
  /** Parameters the request carried that the model refuses: left out. */
  dropped: SamplingName[];
}

/**
 * The sampling parameters `model` accepts for a request reasoning at `effort` (the
 * requested level, else the model's default); undefined when the catalog entry declares
 * nothing, meaning every parameter is passed on.
 */
export function acceptedSampling(
  model: Pick<CatalogModel, "sampling" | "thinking">,
  effort: string | undefined,
): ReadonlySet<SamplingName> | undefined {
  const s = model.sampling;
  if (!s) return undefined;
  if (s.onlyAtEffort && s.onlyAtEffort.length > 0) {
    const inForce = effort ?? model.thinking?.effort?.default;
    if (inForce === undefined || !s.onlyAtEffort.includes(inForce)) return new Set();
  }
  return new Set(s.accepted);
}

/**
 * The sampling values to send. `optionKeys` names the provider_options keys this provider
 * documents as sampling knobs (removed from `options` here, so the caller's pass-through
 * never sees them); a non-number value there is an invalid_request.
 */
export function samplingFor(
  req: StreamCompletionRequest,
  model: Pick<CatalogModel, "sampling" | "thinking">,
  options: { providerOptions?: JsonObject; optionKeys?: readonly SamplingName[] } = {},
): SamplingChoice {
  const wanted: SamplingValues = {};
  const p = req.params;
  for (const key of options.optionKeys ?? []) {
    const v = options.providerOptions?.[key];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isFinite(v))
      throw new ModelFailure("invalid_request", `provider_options.${key} must be a number`, {
        retryable: false,
      });
    wanted[key] = v;
    if (options.providerOptions) delete options.providerOptions[key];
  }
  if (p?.temperature !== undefined) wanted.temperature = p.temperature;
  if (p?.topP !== undefined) wanted.top_p = p.topP;
  if (p?.topK !== undefined) wanted.top_k = Number(p.topK);
  const accepted = acceptedSampling(model, p?.thinkingEffort);
  const values: SamplingValues = {};
  const dropped: SamplingName[] = [];
  for (const name of SAMPLING_NAMES) {
    const v = wanted[name];
    if (v === undefined) continue;
    if (accepted && !accepted.has(name)) dropped.push(name);
    else values[name] = v;
  }
  return { values, dropped };
}

/** A log line for parameters left out, or undefined when none were. */
export function droppedSamplingNote(modelId: string, dropped: readonly SamplingName[]): string | undefined {
  if (dropped.length === 0) return undefined;
  return `${modelId} does not accept ${dropped.join(", ")}; not sent`;
}
