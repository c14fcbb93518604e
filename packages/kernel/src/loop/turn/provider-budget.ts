// The token budget a context or memory provider gets for one request: agent.hcl's
// token_budget when set, else what the provider declared, never above the model's
// effective ceiling (the whole ceiling when neither says anything).
import type { ModelTarget } from "@pluggableharness/protocol/model";
import type { LoadedProvider } from "../../plugins/providers.ts";

export function providerBudget(p: LoadedProvider, declared: bigint | undefined, target: ModelTarget): number {
  const configured = p.config["token_budget"];
  const budget = typeof configured === "number" && configured > 0 ? configured : Number(declared ?? 0n);
  const ceiling = Number(target.effectiveCeiling);
  if (budget <= 0) return ceiling;
  return ceiling > 0 ? Math.min(budget, ceiling) : budget;
}
