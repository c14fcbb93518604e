// The config-load lint the context protocol asks of the kernel: a dynamic-stability
// provider declared before a static one changes the prompt prefix every turn its content
// changes, so every static section after it misses the vendor's prompt cache. Declaration
// order stays the author's: this warns, it never reorders. Memory providers count as
// dynamic (recalled sections are).
import { Stability } from "@pluggableharness/protocol/content";
import type { KernelLogger } from "../log.ts";

export interface AssemblerFacts {
  readonly name: string;
  /** Context capabilities' stability, or undefined for a memory provider. */
  readonly stability: Stability | undefined;
}

/** The warnings for these providers, in declaration order. */
export function stabilityOrderWarnings(providers: readonly AssemblerFacts[]): string[] {
  const out: string[] = [];
  let firstDynamic: string | undefined;
  for (const p of providers) {
    const dynamic = p.stability !== Stability.STATIC;
    if (dynamic) firstDynamic ??= p.name;
    else if (firstDynamic !== undefined) {
      out.push(
        `context provider "${p.name}" (static) is declared after "${firstDynamic}" (dynamic): its sections miss the prompt cache whenever "${firstDynamic}" changes; declare static providers first`,
      );
    }
  }
  return out;
}

export function lintContextOrder(providers: readonly AssemblerFacts[], log: KernelLogger): void {
  for (const w of stabilityOrderWarnings(providers)) log.warn(w, { rule: "context_stability_order" });
}
