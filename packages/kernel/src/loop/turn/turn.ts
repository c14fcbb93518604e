// RunTurn: the eighteen steps of one turn, in order (7-14, the plan/apply gate, live in
// gate/gate.ts, which operator-initiated calls go through as well).
//
//  1 context-assemble        7 pre-tool-call (each call)   13 post-tool-call (each result)
//  2 pre-model-call          8 split by kind               14 post-apply
//  3 model call              9 data sources (prechecked)   15 history append
//  4 accumulation           9b interactive (one by one)    16 doom-loop check
//  5 post-model-response    10 plan (snapshots, Preview)   17 bounds check
//  6 done check             11 plan-ready (policy, vetoes) 18 loop or stop
//                           12 apply (per ConcurrencySpec)
//
// Every step emits a trace event. An interrupt at any point ends the turn: running
// tools and pending questions are cancelled, every tool_use still gets exactly one
// tool_result, and the turn reports "cancelled".
import type { LoopDeps } from "../deps.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import {
  appendAnswer,
  appendCancelled,
  appendResults,
  closeAfterError,
  keepCutAnswer,
  persistAssistant,
  type TurnAnswer,
} from "./append.ts";
import type { StopReason } from "./bounds.ts";
import type { CompactionStates } from "./compaction.ts";
import { gateStep } from "./gate-step.ts";
import { guardsStep } from "./guards-step.ts";
import { modelStep } from "./model-step.ts";
import { prepareTurn } from "./prepare.ts";

export type TurnOutcome =
  | { readonly kind: "done" }
  | { readonly kind: "continue"; readonly stop?: StopReason }
  | { readonly kind: "cancelled" }
  | { readonly kind: "failed"; readonly detail: string }
  /** The run's wall-clock deadline came while the turn waited for the model. */
  | { readonly kind: "bound"; readonly detail: string };

export interface TurnInput {
  /** The turn's ULID (generated when absent). */
  readonly turnId?: string;
  readonly signal: AbortSignal;
  /** Set on the final-answer turn a guard forced: every tool spec is withheld. */
  readonly final?: StopReason;
  /** Turns completed in this run before this one (for the bounds check). */
  readonly turnsBefore: number;
  /** The operator's message text, on the run's first turn only (post-model-response's run_prompt). */
  readonly runPrompt?: string;
  /** When this run started (ms), for max_wall_clock_s. */
  readonly runStartedAt: number;
  /** When waiting for the model must end (clock ms): the wall-clock bound, or the final turn's grace. */
  readonly deadline?: number;
}

/**
 * One turn: prepare → model → gate → append → guards. The session gives it its context
 * (session/turn-context.ts, built once per turn), its ports and the model-call and
 * compaction states; the turn never sees the Session.
 */
export function runTurn(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  states: CompactionStates,
  input: TurnInput,
): Promise<TurnOutcome> {
  // The whole turn is one span; its steps and hook dispatches nest under it.
  return deps.telemetry.span(
    "turn",
    { "session.id": ctx.sessionId, "turn.id": ctx.turnId, "turn.final": input.final },
    async (span) => {
      const out = await turnSteps(deps, ctx, ports, states, input);
      span.set({ "turn.outcome": out.kind });
      if (out.kind === "failed") span.fail(out.detail.split(/[ :]/)[0] || "failed", out.detail);
      return out;
    },
  );
}

async function turnSteps(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  states: CompactionStates,
  input: TurnInput,
): Promise<TurnOutcome> {
  const { turnId } = ctx;
  const trace = (step: string) => deps.trace({ name: "step", sessionId: ctx.sessionId, turnId, step });
  deps.trace({
    name: "turn.begin",
    sessionId: ctx.sessionId,
    turnId,
    ...(input.final ? { attrs: { final: input.final } } : {}),
  });
  // Counted up the session tree: an ancestor's max_turns covers its sub-agents' turns.
  ports.guards.cost.chargeTurn();
  ports.tools.progress();

  // ---- prepare: 1. context-assemble ----------------------------------------------------------
  trace("1");
  const prepared = await deps.telemetry.span("step 1 context-assemble", { "turn.step": "1" }, () =>
    prepareTurn(deps, ctx, ports, states),
  );
  if (prepared.kind !== "ready") return prepared;

  // ---- model: 2-4 --------------------------------------------------------------------------------
  const model = await modelStep(deps, ctx, ports, states, prepared, trace);
  if (model.kind !== "answered") return model;
  const result = model.result;
  if (result.kind === "failed")
    return { kind: "failed", detail: `model_error ${result.category}: ${result.message}` };
  if (result.kind === "cancelled" || result.kind === "bound") {
    if (result.completion && result.candidate) {
      const reason = result.kind === "bound" ? "limit_reached:max_wall_clock_s" : "cancelled";
      keepCutAnswer(
        deps,
        ctx,
        ports,
        { completion: result.completion, candidate: result.candidate },
        reason,
        trace,
      );
    }
    return result.kind === "bound" ? { kind: "bound", detail: result.detail } : { kind: "cancelled" };
  }
  trace("4");
  // ---- append: the assistant message is in the file before any tool runs ------------------------
  const answer: TurnAnswer = persistAssistant(
    ports,
    turnId,
    result.candidate,
    result.completion,
    input.final ? `final_answer:${input.final}` : "",
  );

  // Steps 5-18 run after the assistant message is in the file. Whatever goes wrong from
  // here (a kernel error), every tool_use of that message still gets exactly one result,
  // so the conversation stays valid for the next run and for a resume.
  try {
    // ---- gate: 5-14 ------------------------------------------------------------------------------
    const gated = await gateStep(deps, ctx, ports, answer, result.completion, {
      ...(input.final ? { final: input.final } : {}),
      ...(input.runPrompt !== undefined ? { runPrompt: input.runPrompt } : {}),
      trace,
    });
    if (gated.kind === "no_calls") {
      trace("15");
      appendAnswer(ports, answer);
      trace("18");
      return { kind: "done" };
    }
    if (gated.kind === "cancelled") {
      appendCancelled(ctx, ports, answer);
      return { kind: "cancelled" };
    }

    // ---- append: 15. history ---------------------------------------------------------------------
    trace("15");
    appendResults(ctx, ports, answer);

    // ---- guards: 16-17 ---------------------------------------------------------------------------
    const verdict = guardsStep(deps, ctx, ports, {
      calls: answer.calls,
      turnsBefore: input.turnsBefore,
      runStartedAt: input.runStartedAt,
      trace,
    });

    // ---- 18. loop or stop ------------------------------------------------------------------------
    trace("18");
    if (gated.done.done) return { kind: "done" };
    const stop: StopReason | undefined = verdict.doomFired
      ? "doom_loop"
      : (gated.breakerTripped ?? verdict.bound);
    return stop ? { kind: "continue", stop } : { kind: "continue" };
  } catch (err) {
    if (answer.closed) throw err;
    const detail = `kernel error: ${(err as Error).message}`;
    deps.log.error(
      "the turn failed after the model answered",
      { error: (err as Error).stack ?? String(err) },
      ctx.sessionId,
    );
    closeAfterError(ctx, ports, answer, detail);
    return { kind: "failed", detail };
  }
}
