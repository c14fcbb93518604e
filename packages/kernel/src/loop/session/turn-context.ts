// What a turn starts with, read from the session once, before step 1: the TurnContext the
// steps take (ports.ts). It lives with the session so the turn never names Session.
import type { TurnContext } from "../ports.ts";
import type { TurnInput } from "../turn/turn.ts";
import type { Session } from "./session.ts";

/** The turn's fixed facts, read from the session once, before step 1. */
export function turnContext(session: Session, input: TurnInput, turnId: string): TurnContext {
  const { signal } = input;
  const p = session.profile;
  return {
    sessionId: session.id,
    ...(session.parentId !== undefined ? { parentSessionId: session.parentId } : {}),
    ancestors: session.ancestors,
    turnId,
    workingDirectory: session.workingDirectory,
    lockOwner: session.lockOwner,
    remainingDepth: session.remainingDepth,
    signal,
    ...(input.deadline !== undefined ? { deadline: input.deadline } : {}),
    tools: input.final ? [] : session.tools.declarations({ planMode: session.settings.planMode }),
    candidates: session.candidates(),
    limits: {
      ...(p.max_turns !== undefined ? { maxTurns: p.max_turns } : {}),
      ...(p.max_wall_clock_s !== undefined ? { maxWallClockS: p.max_wall_clock_s } : {}),
      // A sub-agent's run ends when its parent's does (driver.ts sets it before the first turn).
      ...(session.parent && session.runs.deadline !== undefined
        ? { inheritedDeadline: session.runs.deadline }
        : {}),
    },
    policy: session.policy,
    hook: { sessionId: session.id, turnId, workingDirectory: session.workingDirectory, signal },
  };
}
