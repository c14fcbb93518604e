// Which sampling parameters (temperature, top_p, top_k) a model takes, read from its
// ModelSpec.sampling, for the load-time check of a profile (validate.ts). The kernel's pure
// domain (which may not import config) keeps its own copy for per-request validation;
// generation-params.test.ts holds the two to the same answer on every combination.
import { type ModelSpec, SamplingParameter } from "@pluggableharness/protocol/model";
import type { GenerationParamsConfig } from "./model.ts";

export type SamplingParamName = "temperature" | "top_p" | "top_k";

const CODE: Record<SamplingParamName, SamplingParameter> = {
  temperature: SamplingParameter.TEMPERATURE,
  top_p: SamplingParameter.TOP_P,
  top_k: SamplingParameter.TOP_K,
};

/**
 * Why `spec` does not take `param` for a request reasoning at `effort` (the requested
 * level, else the model's default effort); undefined when it does, or when the model
 * declares no sampling spec (then nothing is checked and the parameter is forwarded).
 */
export function samplingRefusal(
  spec: ModelSpec,
  param: SamplingParamName,
  effort: string | undefined,
): string | undefined {
  const s = spec.sampling;
  if (!s) return undefined;
  if (!s.accepted.includes(CODE[param])) return `${spec.id} does not accept ${param}`;
  if (s.onlyAtEffort.length > 0) {
    const inForce = effort ?? (spec.thinking?.supported ? spec.thinking.effort?.default : undefined);
    if (inForce === undefined || !s.onlyAtEffort.includes(inForce)) {
      const levels = s.onlyAtEffort.map((e) => `"${e}"`).join(", ");
      return `${spec.id} accepts ${param} only at thinking effort ${levels}${inForce !== undefined ? `, not "${inForce}"` : ""}`;
    }
  }
  return undefined;
}

/** The sampling parameters a profile candidate sets, in a fixed order. */
export function samplingParamsOf(params: GenerationParamsConfig): SamplingParamName[] {
  const out: SamplingParamName[] = [];
  if (params.temperature !== undefined) out.push("temperature");
  if (params.top_p !== undefined) out.push("top_p");
  if (params.top_k !== undefined) out.push("top_k");
  return out;
}
