// The rewind operations of KernelCallbackService.ControlSession (/rewind of the commands
// provider, so every frontend has it): list the session's prompts, work out what rewinding
// to just before one does, and do it. The work is the state package's
// (packages/state/src/rewind.ts), the same code `agent sessions rewind` runs; this module
// reads the live session's file, checks that what is applied is the plan the operator was
// shown, and marks the session so its frontends are moved to the fork once the command
// is over (loop/session/direct-invoke.ts). Only reached through controlSession's operator check.
import { dirname } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { status } from "@grpc/grpc-js";
import { StatusError } from "@pluggableharness/goplugin";
import type {
  RewindAnchorSchema,
  RewindPlanSchema,
  RewindResultSchema,
} from "@pluggableharness/protocol/kernel";
import {
  applySessionRewind,
  openSessionReader,
  planSessionRewind,
  type RewindAnchor,
  RewindError,
  type RewindPlan,
  type RewindSource,
  rewindAnchors,
  rewindSource,
} from "@pluggableharness/state";
import type { Session } from "../loop/session/session.ts";

// gRPC status codes, by grpc-js's own names.
const { INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION } = status;

type AnchorInit = MessageInitShape<typeof RewindAnchorSchema>;

function anchorOf(a: RewindAnchor, number: number): AnchorInit {
  return { number, messageId: a.messageId, timestamp: a.timestamp, text: a.text };
}

/** The session's file as a rewind reads it: everything persisted so far. */
function sourceOf(session: Session): RewindSource {
  if (session.parentId !== undefined)
    throw new StatusError(
      FAILED_PRECONDITION,
      "a sub-agent's session cannot be rewound on its own; rewind the session that started it",
    );
  // Events queued for this event-loop turn go to the file first.
  session.log.commit();
  const reader = openSessionReader(session.id, { dir: dirname(session.writer.path), log: () => {} });
  try {
    return rewindSource(reader, session.workingDirectory);
  } finally {
    reader.close();
  }
}

function plan(session: Session, to: string): RewindPlan {
  if (to.trim() === "") throw new StatusError(INVALID_ARGUMENT, "name the prompt to rewind to");
  try {
    return planSessionRewind(sourceOf(session), to, { byNumber: true });
  } catch (err) {
    if (err instanceof RewindError)
      throw new StatusError(err.code === "not_an_anchor" ? NOT_FOUND : FAILED_PRECONDITION, err.message);
    throw err;
  }
}

export function listRewindAnchors(session: Session): { anchors: AnchorInit[] } {
  return { anchors: rewindAnchors(sourceOf(session).events).map((a, i) => anchorOf(a, i + 1)) };
}

export function planRewindOf(session: Session, to: string): MessageInitShape<typeof RewindPlanSchema> {
  return planMessage(plan(session, to));
}

function planMessage(p: RewindPlan): MessageInitShape<typeof RewindPlanSchema> {
  return {
    anchor: anchorOf(p.anchor, p.number),
    workingDirectory: p.root,
    files: p.steps.map((s) => ({ path: s.path, action: s.action, changedSince: s.changedSince })),
    keptEvents: p.kept.length,
    lines: [...p.lines],
    digest: p.digest,
  };
}

export function applyRewindOf(
  session: Session,
  request: { to: string; digest: string },
  durability: "full" | "normal" | undefined,
): MessageInitShape<typeof RewindResultSchema> {
  const { to, digest } = request;
  if (digest === "")
    throw new StatusError(
      INVALID_ARGUMENT,
      "a rewind needs the digest of the plan the operator was shown (PlanRewind)",
    );
  const p = plan(session, to);
  if (digest !== p.digest) return { stale: planMessage(p) };
  const done = applySessionRewind(p, durability ? { durability } : {});
  session.rewind.mark({
    forkId: done.forkId,
    promptText: p.anchor.text,
    anchorMessageId: p.anchor.messageId,
  });
  return {
    forkSessionId: done.forkId,
    changed: [...done.changed],
    unrestorable: done.unrestorable,
    summary: done.summary,
    anchor: anchorOf(p.anchor, p.number),
  };
}
