// Steps 16-17 of a turn (guards): the doom-loop detector hears each call that ran, and the
// profile's bounds (turns, cost, wall clock, a sub-agent's inherited deadline) are checked.
import { ToolKind } from "@pluggableharness/protocol/tool";
import type { LoopDeps } from "../deps.ts";
import type { CallRecord } from "../gate/call.ts";
import type { TurnContext, TurnPorts } from "../ports.ts";
import { callHash, checkBounds, type StopReason } from "./bounds.ts";

export interface GuardsInput {
  readonly calls: readonly CallRecord[];
  /** Turns completed in this run before this one. */
  readonly turnsBefore: number;
  /** When this run started (clock ms). */
  readonly runStartedAt: number;
  readonly trace: (step: string) => void;
}

/** What the guards say: the doom loop fired, a bound was reached, or neither. */
export interface GuardsVerdict {
  readonly doomFired: boolean;
  readonly bound: StopReason | undefined;
}

export function guardsStep(
  deps: LoopDeps,
  ctx: TurnContext,
  ports: TurnPorts,
  input: GuardsInput,
): GuardsVerdict {
  // ---- 16. doom loop --------------------------------------------------------------------------------
  input.trace("16");
  let doomFired = false;
  for (const c of input.calls) {
    if (!c.tool || c.tool.tool.schema.kind === ToolKind.INTERACTIVE) continue;
    if (ports.guards.doom.record(callHash(c.tool.declaredName, c.args))) doomFired = true;
  }

  // ---- 17. bounds --------------------------------------------------------------------------------------
  input.trace("17");
  const now = deps.clock.now();
  const { inheritedDeadline, ...limits } = ctx.limits;
  const bound =
    checkBounds({
      ...limits,
      turns: input.turnsBefore + 1,
      elapsedMs: now - input.runStartedAt,
      cost: ports.guards.cost,
    }) ??
    // A sub-agent's inherited deadline (its parent's run ends then).
    (inheritedDeadline !== undefined && now >= inheritedDeadline ? "max_wall_clock_s" : undefined);
  return { doomFired, bound };
}
