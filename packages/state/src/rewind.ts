// Rewinding a session to just before one of its prompts: the one implementation behind
// `agent sessions rewind` (packages/cli) and the kernel's ControlSession rewind operations
// (the commands provider's /rewind, in every frontend). The anchors are the user's own
// prompts; the plan says what the fork keeps and what each file the later turns touched
// does; applying it writes the fork (a new root session holding every event before the
// prompt, its checkpoints up to there) and restores the files from the checkpoints.
// docs/decisions/tools.md, "Shell, diagnostics, checkpoints" and "/rewind in every frontend".
import { createHash } from "node:crypto";
import { dirname } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { CodedError } from "@pluggableharness/protocol/coded-error";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import {
  applyRewind,
  CheckpointStore,
  checkpointsDir,
  forkCheckpoints,
  planRewind,
  type RewindStep,
} from "./checkpoints.ts";
import { KERNEL_PRODUCER_NAME } from "./producer.ts";
import type { SessionReader } from "./reader.ts";
import type { Durability } from "./sqlite.ts";
import type { StoredEvent } from "./types.ts";
import { createSession } from "./writer.ts";

/** A point a session can be rewound to: one of the user's prompts. */
export interface RewindAnchor {
  readonly messageId: string;
  readonly sequence: number;
  readonly timestamp: string;
  readonly text: string;
}

/** What a rewind needs of a session: its meta, its events and where its file is. */
export interface RewindSource {
  readonly sessionId: string;
  readonly profile: string;
  readonly title: string | undefined;
  readonly workingDirectory: string | undefined;
  readonly events: readonly StoredEvent[];
  /** The session file (its checkpoints are beside it; the fork goes in the same directory). */
  readonly path: string;
}

/** A session file as a rewind reads it: its meta and every event so far. */
export function rewindSource(reader: SessionReader, fallbackDirectory?: string): RewindSource {
  const meta = reader.meta();
  return {
    sessionId: meta.sessionId,
    profile: meta.profile,
    title: meta.title,
    workingDirectory: meta.workingDirectory ?? fallbackDirectory,
    events: reader.readEvents(),
    path: reader.path,
  };
}

export type RewindErrorCode = "not_an_anchor" | "no_working_directory";

export class RewindError extends CodedError<RewindErrorCode> {
  override readonly name = "RewindError";
}

/** The user's prompts in a session, oldest first: the points it can be rewound to. */
export function rewindAnchors(events: readonly StoredEvent[]): RewindAnchor[] {
  const out: RewindAnchor[] = [];
  for (const e of events) {
    if (e.kind !== EventKind.MESSAGE || e.producer.name !== KERNEL_PRODUCER_NAME) continue;
    let ev: ReturnType<typeof fromBinary<typeof MessageEventSchema>>;
    try {
      ev = fromBinary(MessageEventSchema, e.payload);
    } catch {
      continue;
    }
    const m = ev.message;
    if (!m || m.role !== Role.USER || ev.syntheticReason) continue;
    if (m.content.some((b) => b.block.case === "toolResult")) continue;
    const text = m.content
      .map((b) => (b.block.case === "text" ? b.block.value.text : b.block.case === "image" ? "[image]" : ""))
      .join(" ")
      .trim();
    out.push({ messageId: m.id || e.id, sequence: e.sequence, timestamp: e.timestamp, text });
  }
  return out;
}

export function firstLine(text: string): string {
  const l = text.split("\n")[0] ?? "";
  return l.length > 70 ? `${l.slice(0, 69)}…` : l;
}

/**
 * The anchor `to` names: a message id (any case), or with `byNumber` a 1-based position
 * in the list as `rewindAnchors` gives it (what /rewind numbers them by).
 */
export function findAnchor(
  anchors: readonly RewindAnchor[],
  to: string,
  options: { byNumber?: boolean } = {},
): RewindAnchor | undefined {
  const t = to.trim();
  if (options.byNumber && /^\d+$/.test(t)) return anchors[Number(t) - 1];
  return anchors.find((a) => a.messageId === t || a.messageId === t.toUpperCase());
}

const SYMBOL: Record<RewindStep["action"], string> = {
  restore: "~",
  create: "+",
  delete: "-",
  unchanged: "=",
  unrestorable: "!",
};

function describeStep(step: RewindStep): string {
  const what = {
    restore: "restore",
    create: "recreate",
    delete: "delete",
    unchanged: "already as it was",
    unrestorable: `cannot restore (${step.reason ?? "it was over the checkpoint size limit"})`,
  }[step.action];
  const since =
    step.changedSince && step.action !== "unchanged" ? "  (changed since the agent last touched it)" : "";
  return `  ${SYMBOL[step.action]} ${step.path}: ${what}${since}`;
}

/** A rewind worked out and not yet done. */
export interface RewindPlan {
  readonly sessionId: string;
  readonly anchor: RewindAnchor;
  /** The anchor's 1-based position among the session's prompts. */
  readonly number: number;
  readonly root: string;
  readonly steps: readonly RewindStep[];
  /** The events the fork gets (every one before the prompt). */
  readonly kept: readonly StoredEvent[];
  /** The plan as lines for a person: what forks, what each file does. */
  readonly lines: readonly string[];
  /**
   * Identifies what this plan would do (the anchor, the kept events, every file step):
   * applying checks the plan it computes then still has it, so what runs is what was shown.
   */
  readonly digest: string;
  readonly source: Pick<RewindSource, "path" | "profile" | "title">;
}

/** Works out a rewind of `source` to just before prompt `to` (a message id, or a number with `byNumber`). */
export function planSessionRewind(
  source: RewindSource,
  to: string,
  options: { byNumber?: boolean } = {},
): RewindPlan {
  const anchors = rewindAnchors(source.events);
  const anchor = findAnchor(anchors, to, options);
  if (!anchor) {
    throw new RewindError(
      "not_an_anchor",
      `${to} is not a prompt of session ${source.sessionId}; its prompts:\n${anchors.map((p, i) => `  ${i + 1}. ${p.messageId}  ${firstLine(p.text)}`).join("\n") || "  (none)"}`,
    );
  }
  const root = source.workingDirectory;
  if (!root)
    throw new RewindError(
      "no_working_directory",
      `session ${source.sessionId} has no recorded working directory`,
    );
  const store = new CheckpointStore(checkpointsDir(source.path), root);
  const steps = planRewind(store, anchor.sequence - 1);
  const kept = source.events.filter((e) => e.sequence < anchor.sequence);
  const lines = [
    `Rewind session ${source.sessionId} to before the prompt ${anchor.messageId}:`,
    `  "${firstLine(anchor.text)}" (${anchor.timestamp})`,
    `A new session gets the ${kept.length} event(s) before it; ${source.sessionId} itself is kept.`,
  ];
  if (steps.every((s) => s.action === "unchanged")) lines.push(`No file in ${root} changes.`);
  else lines.push(`Files in ${root}:`, ...steps.map(describeStep));
  const digest = createHash("sha256")
    .update(
      JSON.stringify({
        session: source.sessionId,
        anchor: anchor.messageId,
        kept: kept.length,
        last: kept.at(-1)?.sequence ?? 0,
        steps: steps.map((s) => [s.path, s.action, s.target ?? String(s.target), s.changedSince]),
      }),
    )
    .digest("hex")
    .slice(0, 16);
  return {
    sessionId: source.sessionId,
    anchor,
    number: anchors.indexOf(anchor) + 1,
    root,
    steps,
    kept,
    lines,
    digest,
    source: { path: source.path, profile: source.profile, title: source.title },
  };
}

export interface RewindResult {
  readonly forkId: string;
  /** Paths the rewind wrote or deleted. */
  readonly changed: readonly string[];
  /** Files it could not restore (over the checkpoint size limit). */
  readonly unrestorable: number;
  readonly summary: string;
}

/**
 * Carries a plan out: the fork first (a new root session in the same directory as the
 * original, with every event before the prompt and the checkpoints up to it), then the files.
 */
export function applySessionRewind(
  plan: RewindPlan,
  options: { durability?: Durability } = {},
): RewindResult {
  const kept = plan.kept;
  const writer = createSession(
    { profile: plan.source.profile, depth: 0, workingDirectory: plan.root },
    { dir: dirname(plan.source.path), ...(options.durability ? { durability: options.durability } : {}) },
  );
  const forkId = writer.sessionId;
  try {
    const appended =
      kept.length > 0
        ? writer.appendBatch(
            kept.map((e) => ({
              kind: e.kind,
              producer: e.producer,
              schemaVersion: e.schemaVersion,
              payload: e.payload,
              timestamp: new Date(e.timestamp),
            })),
          )
        : [];
    const seqMap = new Map(kept.map((e, i) => [e.sequence, appended[i]!.sequence]));
    forkCheckpoints(
      checkpointsDir(plan.source.path),
      checkpointsDir(writer.path),
      plan.anchor.sequence - 1,
      (s) => seqMap.get(s) ?? 0,
    );
    if (plan.source.title) writer.setTitleIfUnset(`${plan.source.title} (rewound)`);
    writer.setStatus(SessionStatus.COMPLETED);
  } finally {
    writer.close();
  }
  const changed = applyRewind(new CheckpointStore(checkpointsDir(plan.source.path), plan.root), plan.steps);
  const unrestorable = plan.steps.filter((s) => s.action === "unrestorable").length;
  return {
    forkId,
    changed,
    unrestorable,
    summary: `Forked as ${forkId}; ${changed.length} file(s) restored${unrestorable ? `, ${unrestorable} could not be` : ""}.`,
  };
}
