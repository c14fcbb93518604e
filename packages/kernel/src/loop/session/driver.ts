// One run of a session: from a user message until the turn loop stops, or one tool call
// the operator made directly (direct-invoke.ts), which runs no turn at all. session-start
// fires before the first turn and session-end after the last, so every RUNNING period
// of a session is bracketed by the pair (a re-opened session gets a new pair). When a
// bound, the doom-loop detector or a breaker fires, exactly one more turn runs with
// every tool spec withheld and an instruction to answer; then the run ends with the
// status naming what fired. The wall-clock bound is also a deadline for every wait on the
// model: when it comes mid-call (a stall, a retry wait), the run ends at once with
// error_max_wall_clock, since no further model call could finish in time.
import { create } from "@bufbuild/protobuf";
import type { AgentProfile } from "@pluggableharness/config";
import { HookPayloadSchema } from "@pluggableharness/protocol/hook";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { SessionWriter } from "@pluggableharness/state";
import type { LoopDeps } from "../deps.ts";
import { textBlock } from "../gate/call.ts";
import {
  type CircuitBreaker,
  type CostNode,
  type DoomLoopDetector,
  type StopReason,
  statusForStop,
} from "../turn/bounds.ts";
import { type CompactionContext, type CompactionState, compactNow } from "../turn/compaction.ts";
import type { ModelCallState } from "../turn/model-call.ts";
import { runTurn } from "../turn/turn.ts";
import { type DirectInvokeSession, runDirectInvocation } from "./direct-invoke.ts";
import type { RunQueue } from "./run-queue.ts";
import type { SessionInput } from "./session-input.ts";
import type { SessionLog } from "./session-log.ts";
import { type TurnContextSource, turnContext } from "./turn-context.ts";

/** What one run reads and moves of its session: its status, bounds, log, states and ports. */
export interface RunnableSession extends DirectInvokeSession, TurnContextSource {
  readonly profile: AgentProfile;
  /** A sub-agent's parent, whose run's deadline bounds this one. */
  readonly parent: { readonly runs: Pick<RunQueue, "deadline"> } | undefined;
  readonly runs: Pick<RunQueue, "deadline">;
  readonly writer: Pick<SessionWriter, "setTitleIfUnset">;
  readonly log: Pick<SessionLog, "appendUserMessage" | "recordTurnFailure" | "commit">;
  readonly cost: CostNode;
  readonly doom: DoomLoopDetector;
  readonly breaker: CircuitBreaker;
  readonly compaction: CompactionState;
  readonly modelCalls: ModelCallState;
  status(): SessionStatus;
  setStatus(status: SessionStatus, detail?: string): void;
  /** What a compaction knows of the session outside a turn (/compact). */
  compactionContext(): CompactionContext;
}

const STOP_TEXT: Record<StopReason, string> = {
  max_turns: "the maximum number of turns for this session was reached",
  max_cost_usd: "the cost budget for this session was used up",
  max_wall_clock_s: "the time limit for this session was reached",
  doom_loop: "the same tool call was repeated several times in a row without progress",
  denial_breaker: "too many tool calls in a row were denied",
  crash_breaker: "a tool provider crashed repeatedly",
};

/**
 * How long the final-answer turn after the wall-clock bound may wait for the model: the
 * time is already up, so a stalled or rate-limited model cannot hold the run much longer.
 */
export const FINAL_ANSWER_GRACE_MS = 30_000;

/** The kernel's synthetic instruction for the final-answer turn. */
export function finalAnswerInstruction(reason: StopReason): string {
  return `[kernel] Stop: ${STOP_TEXT[reason]}. No tools are available any more. Give your final answer now from what you already have, and say plainly what is left undone.`;
}

/** One run of a session, as one span (a sub-agent's under its spawning tool call's). */
export function runSessionRun(
  deps: LoopDeps,
  session: RunnableSession,
  input: SessionInput,
  signal: AbortSignal,
): Promise<void> {
  const t = deps.telemetry;
  const role = session.parentId ? "subagent" : "root";
  const started = deps.clock.now();
  t.add("agent.session.count", 1, { "agent.role": role, "agent.profile": session.profile.name });
  return t.span(
    "session",
    {
      "session.id": session.id,
      "gen_ai.conversation.id": session.id,
      "session.parent_id": session.parentId,
      "agent.profile": session.profile.name,
      "agent.role": role,
      "session.input": input.kind,
    },
    async (span) => {
      try {
        await runSessionBody(deps, session, input, signal);
      } finally {
        const status = SessionStatus[session.status()] ?? String(session.status());
        span.set({ "session.status": status });
        if (session.status() === SessionStatus.FAILED) span.fail("session_failed");
        t.record("agent.session.duration", (deps.clock.now() - started) / 1000, {
          "agent.role": role,
          "session.status": status,
        });
      }
    },
  );
}

async function runSessionBody(
  deps: LoopDeps,
  session: RunnableSession,
  input: SessionInput,
  signal: AbortSignal,
): Promise<void> {
  if (session.status() !== SessionStatus.RUNNING) session.setStatus(SessionStatus.RUNNING, "re-opened");
  // Bounds start fresh for every run (a re-opened session does not inherit what it used).
  session.cost.reset();
  session.doom.reset();
  session.breaker.reset();
  session.modelCalls.startRun();
  const runStartedAt = deps.clock.now();
  const ctx = { sessionId: session.id, turnId: "", workingDirectory: session.workingDirectory };
  deps.trace({ name: "session.start", sessionId: session.id });
  await deps.hooks.dispatch(
    "session-start",
    create(HookPayloadSchema, {
      point: {
        case: "sessionStart",
        value: {
          sessionId: session.id,
          profile: session.profile.name,
          ...(session.parentId ? { parentSessionId: session.parentId } : {}),
          workingDirectory: session.workingDirectory,
        },
      },
    }),
    { ...ctx, signal },
  );

  let status: SessionStatus = SessionStatus.FAILED;
  let detail = "";
  const endRun = (final: SessionStatus) =>
    deps.hooks.dispatch(
      "session-end",
      create(HookPayloadSchema, {
        point: { case: "sessionEnd", value: { sessionId: session.id, status: final } },
      }),
      ctx,
    );
  try {
    if (signal.aborted) {
      status = SessionStatus.CANCELLED;
    } else if (input.kind === "invoke") {
      // The operator's own call: no model turn, no bounds (nothing was spent), and the run
      // completes whatever the call's outcome; the model reads the report next turn.
      const outcome = await runDirectInvocation(deps, session, input.invocation, signal);
      status = outcome === "cancelled" ? SessionStatus.CANCELLED : SessionStatus.COMPLETED;
      if (outcome === "cancelled") detail = "interrupted";
    } else if (input.kind === "compact") {
      // The operator's "compact now": no model turn; a compactor that could not shrink the
      // history leaves it as it was, and the session goes on either way.
      const outcome = await compactNow(
        deps,
        session.compactionContext(),
        session.ports,
        session,
        input.instructions,
        signal,
      );
      status = signal.aborted ? SessionStatus.CANCELLED : SessionStatus.COMPLETED;
      if (outcome.kind === "unchanged") detail = `not compacted: ${outcome.why}`;
    } else {
      let turnId = deps.newId();
      session.log.appendUserMessage(turnId, input.content);
      // The first prompt names the session in `sessions list` and the resume picker.
      const text = input.content.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []));
      if (text.length > 0) session.writer.setTitleIfUnset(text.join("\n"));
      // post-model-response's run_prompt feeds memory providers' autonomous writes: a prompt
      // holding a secret environment value is withheld (kernel:memory_secrets).
      const joined = text.join("\n");
      const prompt = deps.secretMask.contains(joined) ? "" : joined;
      let turns = 0;
      let final: StopReason | undefined;
      const own =
        session.profile.max_wall_clock_s !== undefined
          ? runStartedAt + session.profile.max_wall_clock_s * 1000
          : undefined;
      // A sub-agent's time runs out with its parent's run at the latest.
      const inherited = session.parent?.runs.deadline;
      const wallClock =
        own === undefined ? inherited : inherited === undefined ? own : Math.min(own, inherited);
      session.runs.deadline = wallClock;
      for (;;) {
        // The final-answer turn after the time limit gets a short grace of its own.
        const deadline = final === "max_wall_clock_s" ? deps.clock.now() + FINAL_ANSWER_GRACE_MS : wallClock;
        const turn = {
          turnId,
          signal,
          ...(final ? { final } : {}),
          turnsBefore: turns,
          ...(turns === 0 && prompt ? { runPrompt: prompt } : {}),
          runStartedAt,
          ...(deadline !== undefined ? { deadline } : {}),
        };
        const states = { compaction: session.compaction, modelCalls: session.modelCalls };
        const ctx = turnContext(session, turn, turnId);
        const outcome = await runTurn(deps, ctx, session.ports, states, turn);
        // A turn boundary: what the turn wrote is in the file (fleet mode ships it from here).
        deps.trace({ name: "turn.end", sessionId: session.id, turnId, attrs: { outcome: outcome.kind } });
        turns++;
        if (outcome.kind === "failed") session.log.recordTurnFailure(turnId, outcome.detail);
        turnId = deps.newId();
        if (outcome.kind === "cancelled") {
          status = SessionStatus.CANCELLED;
          detail = "interrupted";
          break;
        }
        if (outcome.kind === "bound") {
          // The time ran out while the model was awaited: no further model call could finish
          // in time, so the run ends here rather than with a final-answer turn.
          status = final ? statusForStop(final) : SessionStatus.ERROR_MAX_WALL_CLOCK;
          detail = final
            ? `${final}: ${STOP_TEXT[final]}; the final-answer turn ran out of time (${outcome.detail})`
            : `max_wall_clock_s: ${STOP_TEXT.max_wall_clock_s} (${outcome.detail})`;
          deps.log.info(`stopping: ${detail}`, { reason: "max_wall_clock_s" }, session.id);
          break;
        }
        if (final) {
          status = statusForStop(final);
          detail = `${final}: ${STOP_TEXT[final]}${outcome.kind === "failed" ? `; the final-answer turn failed (${outcome.detail})` : ""}`;
          break;
        }
        if (outcome.kind === "failed") {
          status = SessionStatus.FAILED;
          detail = outcome.detail;
          break;
        }
        if (outcome.kind === "done") {
          status = SessionStatus.COMPLETED;
          break;
        }
        if (outcome.stop) {
          final = outcome.stop;
          deps.log.info(
            `stopping: ${STOP_TEXT[final]}; one final-answer turn follows`,
            { reason: final },
            session.id,
          );
          session.log.appendUserMessage(
            turnId,
            [textBlock(finalAnswerInstruction(final))],
            `limit_reached:${final}`,
          );
        }
      }
    }
  } catch (err) {
    // A kernel error ends the run too: session-end still fires (memory providers rely on
    // it as their last chance to persist), then the error goes on to the caller.
    await endRun(SessionStatus.FAILED).catch(() => {});
    throw err;
  }
  await endRun(status);
  deps.trace({
    name: "session.end",
    sessionId: session.id,
    attrs: { status: SessionStatus[status] ?? String(status) },
  });
  session.setStatus(status, detail);
}
