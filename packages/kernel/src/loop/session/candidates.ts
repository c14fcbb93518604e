// A profile's model chain as a session routes over it. Its own module so the settings
// (session-settings.ts) and the kernel read it without loading session.ts.
import type { AgentProfile } from "@pluggableharness/config";
import type { LoopDeps } from "../deps.ts";
import { type ModelCandidate, paramsFromConfig } from "../turn/model-call.ts";

/** A profile's model chain (primary, then fallbacks); without one, the first model loaded. */
export function profileCandidates(
  profile: AgentProfile,
  deps: Pick<LoopDeps, "providers">,
): ModelCandidate[] {
  const m = profile.model;
  if (m) {
    return [m.primary, ...m.fallbacks].map((r) => {
      const params = paramsFromConfig(r.params);
      return {
        provider: r.provider,
        modelId: r.id,
        ...(params ? { params } : {}),
        ...(r.provider_options ? { providerOptions: r.provider_options } : {}),
      };
    });
  }
  for (const p of deps.providers.modelProviders()) {
    const first = p.models?.models.keys().next().value;
    if (first !== undefined) return [{ provider: p.name, modelId: first }];
  }
  return [];
}
