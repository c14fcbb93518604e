// Capability-aware routing over a primary/fallback chain: the first candidate whose
// declared envelope satisfies what this turn actually needs wins; every skipped candidate
// gets a reason; an exhausted chain is a typed error carrying all the reasons.
import type { ContentBlock, Message } from "@pluggableharness/protocol/content";
import type { GenerationParams, ModelSpec } from "@pluggableharness/protocol/model";
import { DomainError } from "./errors.ts";
import {
  type GenerationParamsResult,
  type ParamPolicy,
  validateGenerationParams,
} from "./generation-params.ts";

export interface RouteCandidate {
  /** Declared name of the provider serving the model. */
  readonly provider: string;
  readonly spec: ModelSpec;
}

/** What the turn really needs from a model. */
export interface TurnNeeds {
  /** Input tokens the request will carry (history + assembled context + tools). */
  readonly inputTokens: bigint;
  readonly toolUse: boolean;
  readonly vision: boolean;
  readonly documents: boolean;
  readonly params?: GenerationParams;
  /** Tool names declared in the request (for tool_choice SPECIFIC). */
  readonly toolNames?: readonly string[];
  /** How to treat parameters a candidate cannot honour. Default: reject (skip the candidate). */
  readonly paramPolicy?: ParamPolicy;
}

export interface SkippedCandidate {
  readonly provider: string;
  readonly modelId: string;
  readonly reasons: readonly string[];
}

export interface RouteDecision {
  readonly chosen: RouteCandidate;
  /** Position of the chosen candidate in the chain (0 = primary). */
  readonly index: number;
  readonly skipped: readonly SkippedCandidate[];
  /** The parameters to send to the chosen model. */
  readonly params: GenerationParamsResult;
}

export class RoutingExhaustedError extends DomainError {
  readonly category = "routing_exhausted";
  readonly skipped: readonly SkippedCandidate[];
  constructor(skipped: readonly SkippedCandidate[]) {
    const lines = skipped.map((s) => `  - ${s.provider}/${s.modelId}: ${s.reasons.join("; ")}`);
    super(
      skipped.length === 0
        ? "no model can serve this turn: the model chain is empty"
        : `no model in the chain can serve this turn:\n${lines.join("\n")}`,
    );
    this.name = "RoutingExhaustedError";
    this.skipped = skipped;
  }
}

/** Why a candidate cannot serve the turn; empty when it can. */
export function unmetNeeds(
  spec: ModelSpec,
  needs: TurnNeeds,
): { reasons: string[]; params: GenerationParamsResult } {
  const reasons: string[] = [];
  if (needs.inputTokens > spec.contextWindow) {
    reasons.push(`needs ${needs.inputTokens} input tokens but the context window is ${spec.contextWindow}`);
  }
  if (needs.toolUse && !spec.supportsToolUse)
    reasons.push("the turn uses tools but the model has no tool use");
  if (needs.vision && !spec.supportsVision)
    reasons.push("the turn carries images but the model has no vision");
  if (needs.documents && !spec.supportsDocuments)
    reasons.push("the turn carries documents but the model has no document support");
  const params = validateGenerationParams(spec, needs.params, {
    toolNames: needs.toolNames ?? [],
    policy: needs.paramPolicy ?? "reject",
  });
  for (const d of params.decisions) if (d.outcome === "rejected") reasons.push(`${d.param}: ${d.reason}`);
  return { reasons, params };
}

/** Picks the first candidate able to serve the turn; throws RoutingExhaustedError otherwise. */
export function routeModel(chain: readonly RouteCandidate[], needs: TurnNeeds): RouteDecision {
  const skipped: SkippedCandidate[] = [];
  for (const [index, candidate] of chain.entries()) {
    const { reasons, params } = unmetNeeds(candidate.spec, needs);
    if (reasons.length === 0) return { chosen: candidate, index, skipped, params };
    skipped.push({ provider: candidate.provider, modelId: candidate.spec.id, reasons });
  }
  throw new RoutingExhaustedError(skipped);
}

function scan(
  blocks: readonly ContentBlock[],
  found: { vision: boolean; documents: boolean; toolUse: boolean },
): void {
  for (const b of blocks) {
    switch (b.block.case) {
      case "image":
        found.vision = true;
        break;
      case "document":
        found.documents = true;
        break;
      case "toolUse":
        found.toolUse = true;
        break;
      case "toolResult":
        found.toolUse = true;
        scan(b.block.value.content, found);
        break;
    }
  }
}

/** The content-derived needs of a request: images, documents, tools declared or in history. */
export function contentNeeds(
  messages: readonly Message[],
  toolCount: number,
): { vision: boolean; documents: boolean; toolUse: boolean } {
  const found = { vision: false, documents: false, toolUse: toolCount > 0 };
  for (const m of messages) scan(m.content, found);
  return found;
}
