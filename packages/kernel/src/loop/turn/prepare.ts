// Step 1 of a turn (prepare): route the turn once, compact when the request would cross
// the ceiling (or the operator asked), assemble the context for the chosen model, and make
// sure what is about to be sent fits the model's window at all.
import type { ModelTarget } from "@pluggableharness/protocol/model";
import type { LoopDeps } from "../deps.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import {
  applyRewrittenHistory,
  CompactionReason,
  type CompactionStates,
  compactHistory,
  compactionDue,
  compactors,
  dropOldest,
  historyTokens,
  modelTarget,
} from "./compaction.ts";
import { type AssembledContext, assembleContext } from "./context-assembly.ts";
import {
  estimateInputTokens,
  type ResolvedCandidate,
  type RouteResult,
  routeCandidates,
} from "./model-call.ts";

/** A turn ready for its model call: the route, the target, the context, and how to compact again. */
export interface PreparedTurn {
  readonly kind: "ready";
  readonly route: RouteResult & { readonly chosen: ResolvedCandidate };
  readonly target: ModelTarget;
  readonly assembled: AssembledContext;
  /** The calibrated size of the request as it stands now (history, sections, tools). */
  requestTokens(): number;
  /** One more compaction pass (a refused request); true when the history shrank. */
  compact(reason: CompactionReason): Promise<boolean>;
}

export type PrepareOutcome =
  | PreparedTurn
  | { readonly kind: "cancelled" }
  | { readonly kind: "failed"; readonly detail: string };

export async function prepareTurn(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  states: CompactionStates,
): Promise<PrepareOutcome> {
  const { turnId, signal, tools, candidates } = ctx;
  const history = () => ports.conversation.messages;
  const historySize = () => historyTokens(states.compaction, history());
  // The turn is routed once, here: context is assembled for the chosen model's window, and
  // the model call goes to it (routing again only to fall back after a failure).
  let pre = routeCandidates(
    deps,
    candidates,
    0,
    { inputTokens: estimateInputTokens(history(), [], tools), messages: history(), tools },
    states.modelCalls.unavailable,
    { sessionId: ctx.sessionId, turnId },
  );
  let overflow = false;
  if (!pre.chosen && compactors(deps).length > 0) {
    // No window holds the history: compaction, not a dead end. The first candidate able to
    // serve the turn apart from its size is the one compacted for.
    const unsized = routeCandidates(
      deps,
      candidates,
      0,
      { inputTokens: 0n, messages: history(), tools },
      states.modelCalls.unavailable,
    );
    if (unsized.chosen) {
      pre = { chosen: unsized.chosen, skipped: pre.skipped };
      overflow = true;
    }
  }
  if (!pre.chosen) {
    // An image or document no model of the chain takes is a bad request, not a routing
    // failure (routeCandidates says which): the operator must drop it or /model another.
    return {
      kind: "failed",
      detail:
        pre.category === "invalid_request"
          ? `invalid_request: the conversation carries content no model of the chain accepts: ${pre.skipped.join("; ")}`
          : `routing_exhausted: no model in the chain can serve this turn: ${pre.skipped.join("; ") || "the chain is empty"}`,
    };
  }
  const route = { ...pre, chosen: pre.chosen };
  const toolTokens = Number(estimateInputTokens([], [], tools));
  const target = modelTarget(deps, pre.chosen, toolTokens);
  let compacted = false;
  const compact = async (reason: CompactionReason): Promise<boolean> => {
    const instructions = states.compaction.pending?.instructions ?? "";
    const outcome = await compactHistory(deps, ctx, ports, states, {
      turnId,
      target,
      reason,
      signal,
      ...(instructions ? { instructions } : {}),
    });
    compacted = compacted || outcome.kind === "compacted";
    return outcome.kind === "compacted";
  };
  const lastSections = states.compaction.assembledTokensLastTurn;
  const due = overflow
    ? CompactionReason.OVERFLOW
    : compactionDue(deps, states.compaction, history(), target, lastSections);
  deps.log.debug(
    "context usage",
    {
      history: historySize(),
      sections: lastSections,
      ceiling: Number(target.effectiveCeiling),
      compaction: due === undefined ? "" : String(due),
    },
    ctx.sessionId,
  );
  if (due !== undefined) await compact(due);
  if (signal.aborted) return { kind: "cancelled" };
  const assembled = await assembleContext(deps, ctx, ports, {
    target,
    history: history(),
    historyTokens: historySize(),
    assembledTokensLastTurn: states.compaction.assembledTokensLastTurn,
  });
  if (assembled.rewrittenHistory) {
    // A compactor that rewrote the history on its own initiative: persisted like any other.
    const p = compactors(deps)[0];
    applyRewrittenHistory(deps, ctx, ports, states, {
      turnId,
      compactor: p?.name ?? "",
      history: assembled.rewrittenHistory,
      reason: CompactionReason.UNSPECIFIED,
    });
  }
  states.compaction.assembledTokensLastTurn = assembled.totalTokens;
  if (signal.aborted) return { kind: "cancelled" };
  // This turn's sections are known now: a request that would still cross the ceiling is
  // compacted before it is sent, not refused by the vendor.
  const requestTokens = () => historySize() + assembled.totalTokens + toolTokens;
  if (!compacted && compactors(deps).length > 0 && requestTokens() > Number(target.effectiveCeiling)) {
    await compact(CompactionReason.OVERFLOW);
    if (signal.aborted) return { kind: "cancelled" };
  }
  // A request larger than the window is never sent: what compaction left too large loses
  // its oldest turns, and one that still cannot fit fails the turn unsent.
  const window = Number(target.contextWindow);
  if (deps.settings.compaction.enabled && compactors(deps).length > 0 && requestTokens() > window) {
    const goal = Math.max(1, Number(target.effectiveCeiling) - assembled.totalTokens - toolTokens);
    dropOldest(deps, ctx, ports, states, {
      turnId,
      reason: CompactionReason.OVERFLOW,
      goal,
      why: "the request would not have fit the model's window otherwise",
    });
    if (requestTokens() > window) {
      return {
        kind: "failed",
        detail: `context_length_exceeded: the request (~${requestTokens()} tokens) does not fit the model's window of ${window} tokens even without its oldest turns; it was not sent`,
      };
    }
  }
  return { kind: "ready", route, target, assembled, requestTokens, compact };
}
