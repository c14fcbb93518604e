// What a turn starts with, read from the session once, before step 1: the TurnContext the
// steps take (ports.ts). It lives with the session so the turn never names Session.
import type { AgentProfile } from "@pluggableharness/config";
import type { LockOwner } from "../../domain/index.ts";
import type { ModelCandidate, TurnContext } from "../ports.ts";
import type { ToolRegistry } from "../tool-registry.ts";
import type { TurnInput } from "../turn/turn.ts";
import type { RunQueue } from "./run-queue.ts";
import type { SettingsState } from "./settings-state.ts";

/** What a turn's context is read from: the session's identity, place, tools and settings. */
export interface TurnContextSource {
  readonly id: string;
  readonly parentId: string | undefined;
  readonly ancestors: readonly string[];
  readonly workingDirectory: string;
  readonly lockOwner: LockOwner;
  readonly remainingDepth: number;
  readonly profile: Pick<AgentProfile, "max_turns" | "max_wall_clock_s">;
  /** Set for a sub-agent (its deadline is inherited); only its presence is read here. */
  readonly parent: object | undefined;
  readonly runs: Pick<RunQueue, "deadline">;
  readonly tools: Pick<ToolRegistry, "declarations">;
  readonly settings: Pick<SettingsState, "planMode">;
  readonly policy: TurnContext["policy"];
  candidates(): ModelCandidate[];
}

/** The turn's fixed facts, read from the session once, before step 1. */
export function turnContext(session: TurnContextSource, input: TurnInput, turnId: string): TurnContext {
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
