// Kernel-owned cache-breakpoint placement. Breakpoints go at the stable-prefix boundaries
// of the tools -> system -> static context -> conversation order: after the tool list when
// it is unchanged from the previous turn, and after the assembled context when its
// leading section is static. A model without explicit cache markers gets none.
import { create, toJson } from "@bufbuild/protobuf";
import { type ContextSection, Stability } from "@pluggableharness/protocol/content";
import {
  type CacheBreakpoint,
  CacheBreakpoint_AfterAssembledContextSchema,
  CacheBreakpoint_AfterToolsSchema,
  CacheBreakpointSchema,
  type CachingSpec,
  type ToolDeclaration,
  ToolDeclarationSchema,
} from "@pluggableharness/protocol/model";
import { canonicalJson } from "./canonical-json.ts";

/** A stable fingerprint of a tool list, to tell whether it changed between turns. */
export function toolListFingerprint(tools: readonly ToolDeclaration[]): string {
  return canonicalJson(tools.map((t) => toJson(ToolDeclarationSchema, t)));
}

export interface BreakpointInput {
  readonly caching: CachingSpec | undefined;
  readonly tools: readonly ToolDeclaration[];
  /** The previous turn's toolListFingerprint; undefined on a session's first turn. */
  readonly previousToolsFingerprint?: string;
  readonly assembledContext: readonly ContextSection[];
}

export function placeCacheBreakpoints(input: BreakpointInput): CacheBreakpoint[] {
  if (!input.caching?.explicitMarkers) return [];
  const out: CacheBreakpoint[] = [];
  const toolsStable =
    input.previousToolsFingerprint === undefined ||
    input.previousToolsFingerprint === toolListFingerprint(input.tools);
  if (input.tools.length > 0 && toolsStable) {
    out.push(
      create(CacheBreakpointSchema, {
        position: { case: "afterTools", value: create(CacheBreakpoint_AfterToolsSchema) },
      }),
    );
  }
  const first = input.assembledContext[0];
  if (first && first.stability === Stability.STATIC) {
    out.push(
      create(CacheBreakpointSchema, {
        position: {
          case: "afterAssembledContext",
          value: create(CacheBreakpoint_AfterAssembledContextSchema),
        },
      }),
    );
  }
  return out;
}

/**
 * Config-load lint: a dynamic section declared before a static one invalidates the cache
 * prefix of everything after it whenever it changes. Returns one warning per such pair
 * (declaration order is the author's call, so this never reorders).
 */
export function stabilityOrderWarnings(
  sections: readonly { readonly provider: string; readonly stability: Stability }[],
): string[] {
  const warnings: string[] = [];
  let firstDynamic: string | undefined;
  for (const s of sections) {
    if (s.stability === Stability.DYNAMIC && firstDynamic === undefined) firstDynamic = s.provider;
    if (s.stability === Stability.STATIC && firstDynamic !== undefined) {
      warnings.push(
        `context provider "${firstDynamic}" (dynamic) is declared before "${s.provider}" (static); its changes invalidate the prompt-cache prefix for "${s.provider}"`,
      );
    }
  }
  return warnings;
}
