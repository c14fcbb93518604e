// `agent sessions rewind <id> --to <message-id>`: fork a session at one of its prompts and
// put the files its later turns changed back the way they were when that prompt was sent.
// The fork holds every event before the prompt (the original is left as it is); the files
// come from the session's checkpoints (packages/state/src/checkpoints.ts). What will change
// is shown first and confirmed on a terminal (`--yes` for headless use).
import { createInterface } from "node:readline/promises";
import { fromBinary } from "@bufbuild/protobuf";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { RewindHost } from "@pluggableharness/provider-tui";
import {
  applyRewind,
  CheckpointStore,
  checkpointsDir,
  createSession,
  forkCheckpoints,
  KERNEL_PRODUCER_NAME,
  planRewind,
  type RewindStep,
  type StoredEvent,
} from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { CliError, type Io, line } from "../io.ts";
import { openReader } from "./show.ts";

export interface Prompt {
  readonly messageId: string;
  readonly sequence: number;
  readonly timestamp: string;
  readonly text: string;
}

/** The user's prompts in a session: the points it can be rewound to. */
export function promptsOf(events: readonly StoredEvent[]): Prompt[] {
  const out: Prompt[] = [];
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

const SYMBOL: Record<RewindStep["action"], string> = {
  restore: "~",
  create: "+",
  delete: "-",
  unchanged: "=",
  unrestorable: "!",
};

function describe(step: RewindStep): string {
  const what = {
    restore: "restore",
    create: "recreate",
    delete: "delete",
    unchanged: "already as it was",
    unrestorable: "cannot restore (it was over the checkpoint size limit)",
  }[step.action];
  const since =
    step.changedSince && step.action !== "unchanged" ? "  (changed since the agent last touched it)" : "";
  return `  ${SYMBOL[step.action]} ${step.path}: ${what}${since}`;
}

function firstLine(text: string): string {
  const l = text.split("\n")[0] ?? "";
  return l.length > 70 ? `${l.slice(0, 69)}…` : l;
}

async function confirm(
  question: string,
  stdin: NodeJS.ReadableStream,
  out: NodeJS.WritableStream,
): Promise<boolean> {
  const rl = createInterface({ input: stdin, output: out });
  try {
    const answer = await rl.question(question);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** A rewind worked out and not yet done: what `performRewind` will do. */
export interface PlannedRewind {
  readonly sessionId: string;
  readonly anchor: Prompt;
  readonly root: string;
  readonly steps: readonly RewindStep[];
  /** The plan as lines for a person: what forks, what each file does. */
  readonly lines: readonly string[];
  readonly events: readonly StoredEvent[];
  readonly path: string;
  readonly meta: { profile: string; title: string | undefined };
}

function loadSession(typed: string): { meta: SessionMetaLike; events: StoredEvent[]; path: string } {
  const reader = openReader(typed);
  try {
    const meta = reader.meta();
    return {
      meta: {
        sessionId: meta.sessionId,
        profile: meta.profile,
        title: meta.title,
        workingDirectory: meta.workingDirectory,
      },
      events: reader.readEvents(),
      path: reader.path,
    };
  } finally {
    reader.close();
  }
}

interface SessionMetaLike {
  sessionId: string;
  profile: string;
  title: string | undefined;
  workingDirectory: string | undefined;
}

/** The prompts of a session, oldest first. */
export function sessionPrompts(typed: string): Prompt[] {
  return promptsOf(loadSession(typed).events);
}

/** Works out a rewind of session `typed` to before prompt `to` (throws CliError when `to` is no prompt). */
export function planSessionRewind(typed: string, to: string): PlannedRewind {
  const { meta, events, path } = loadSession(typed);
  const prompts = promptsOf(events);
  const anchor = prompts.find((p) => p.messageId === to.trim().toUpperCase() || p.messageId === to);
  if (!anchor) {
    throw new CliError(
      `agent: ${to} is not a prompt of session ${meta.sessionId}; its prompts:\n${prompts.map((p) => `  ${p.messageId}  ${firstLine(p.text)}`).join("\n") || "  (none)"}`,
      EXIT.USAGE,
    );
  }
  const root = meta.workingDirectory;
  if (!root)
    throw new CliError(`agent: session ${meta.sessionId} has no recorded working directory`, EXIT.ERROR);
  const store = new CheckpointStore(checkpointsDir(path), root);
  const steps = planRewind(store, anchor.sequence - 1);
  const kept = events.filter((e) => e.sequence < anchor.sequence);
  const lines = [
    `Rewind session ${meta.sessionId} to before the prompt ${anchor.messageId}:`,
    `  "${firstLine(anchor.text)}" (${anchor.timestamp})`,
    `A new session gets the ${kept.length} event(s) before it; ${meta.sessionId} itself is kept.`,
  ];
  if (steps.every((s) => s.action === "unchanged")) lines.push(`No file in ${root} changes.`);
  else lines.push(`Files in ${root}:`, ...steps.map(describe));
  return {
    sessionId: meta.sessionId,
    anchor,
    root,
    steps,
    lines,
    events: kept,
    path,
    meta: { profile: meta.profile, title: meta.title },
  };
}

export interface RewindDone {
  readonly forkId: string;
  readonly changed: readonly string[];
  readonly unrestorable: number;
  readonly summary: string;
}

/** Forks the session before the prompt and restores the files. */
export function performRewind(plan: PlannedRewind): RewindDone {
  const kept = plan.events;
  const writer = createSession({ profile: plan.meta.profile, depth: 0, workingDirectory: plan.root });
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
      checkpointsDir(plan.path),
      checkpointsDir(writer.path),
      plan.anchor.sequence - 1,
      (s) => seqMap.get(s) ?? 0,
    );
    if (plan.meta.title) writer.setTitleIfUnset(`${plan.meta.title} (rewound)`);
    writer.setStatus(SessionStatus.COMPLETED);
  } finally {
    writer.close();
  }
  const changed = applyRewind(new CheckpointStore(checkpointsDir(plan.path), plan.root), plan.steps);
  const unrestorable = plan.steps.filter((s) => s.action === "unrestorable").length;
  return {
    forkId,
    changed,
    unrestorable,
    summary: `Forked as ${forkId}; ${changed.length} file(s) restored${unrestorable ? `, ${unrestorable} could not be` : ""}.`,
  };
}

export interface RewindOptions {
  to?: string;
  yes?: boolean;
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

export async function runRewind(io: Io, typed: string, opts: RewindOptions): Promise<number> {
  if (!opts.to) {
    const { meta, events } = loadSession(typed);
    const prompts = promptsOf(events);
    if (prompts.length === 0) {
      line(io.out, `Session ${meta.sessionId} has no prompts to rewind to.`);
      return EXIT.OK;
    }
    line(io.out, `Prompts of session ${meta.sessionId} (rewind with --to <message-id>):`);
    for (const p of prompts) line(io.out, `  ${p.messageId}  ${p.timestamp}  ${firstLine(p.text)}`);
    return EXIT.OK;
  }
  const plan = planSessionRewind(typed, opts.to);
  for (const l of plan.lines) line(io.out, l);
  if (!opts.yes) {
    const stdin = opts.stdin;
    if (!stdin?.isTTY)
      throw new CliError(
        "agent: sessions rewind needs --yes to proceed without a terminal to confirm on",
        EXIT.USAGE,
      );
    if (!(await confirm("Proceed? [y/N] ", stdin, io.out))) {
      line(io.out, "Nothing changed.");
      return EXIT.OK;
    }
  }
  const done = performRewind(plan);
  line(io.out, `${done.summary} Continue with: agent run --resume ${done.forkId}`);
  return done.unrestorable > 0 ? EXIT.ERROR : EXIT.OK;
}

/** /rewind in the CLI's in-process terminal UI (providers/tui/src/rewind.ts) works through these. */
export const cliRewindHost: RewindHost = {
  async prompts(sessionId) {
    return sessionPrompts(sessionId);
  },
  async plan(sessionId, messageId) {
    return planSessionRewind(sessionId, messageId).lines;
  },
  async apply(sessionId, messageId) {
    const done = performRewind(planSessionRewind(sessionId, messageId));
    return { forkId: done.forkId, summary: done.summary };
  },
};
