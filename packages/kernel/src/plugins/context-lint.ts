// The config-load lint the context protocol asks of the kernel (the rule itself:
// domain/cache-breakpoints.ts#stabilityOrderWarnings), run over the loaded providers in
// declaration order: a dynamic-stability provider declared before a static one changes the
// prompt prefix every turn its content changes. Declaration order stays the author's: this
// warns, it never reorders. Memory providers count as dynamic (recalled sections are).
import { Stability } from "@pluggableharness/protocol/content";
import { stabilityOrderWarnings } from "../domain/cache-breakpoints.ts";
import type { KernelLogger } from "../log.ts";

export interface AssemblerFacts {
  readonly name: string;
  /** Context capabilities' stability, or undefined for a memory provider. */
  readonly stability: Stability | undefined;
}

export function lintContextOrder(providers: readonly AssemblerFacts[], log: KernelLogger): void {
  const sections = providers.map((p) => ({ provider: p.name, stability: p.stability ?? Stability.DYNAMIC }));
  for (const w of stabilityOrderWarnings(sections)) log.warn(w, { rule: "context_stability_order" });
}
