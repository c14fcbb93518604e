// The autonomous write path (memory protocol, write triggers): the kernel dispatches
// post-model-response every turn and session-end once per run to this provider in
// observe mode. The heuristic is deliberately narrow: only an explicit request in the
// operator's own message (post-model-response's run_prompt, which the kernel withholds
// when it holds a secret environment value) becomes a record, and only as a PENDING
// draft that recall never shows until the model (memory.remember with the draft's id),
// the operator (ApproveRecord, or editing the file's status) confirms it. session-end
// reconciles: a draft the model has since recorded itself this session is dropped as a
// duplicate; the others stay pending for review. Nothing is inferred from the model's
// own text, so the model cannot talk itself into a memory.
import { type Memory, refuseSecrets } from "./memory.ts";
import { similarity, type TypeName } from "./record.ts";
import type { Roots } from "./store.ts";

/** recorded_by of a draft this path wrote. */
export const AUTO_RECORDER = "memory:auto";
/** At most this many drafts from one message, each at most this long. */
const MAX_DRAFTS = 3;
const MAX_CHARS = 500;

interface Trigger {
  readonly re: RegExp;
  readonly type: TypeName;
  /** Keep the whole sentence (a standing instruction) rather than what follows the cue. */
  readonly whole: boolean;
}

// Each cue must open a sentence; a question never counts ("do you remember that ...?").
const TRIGGERS: readonly Trigger[] = [
  { re: /^(?:please\s+)?remember(?:\s+that|\s*:)\s+(.{3,})$/i, type: "project", whole: false },
  {
    re: /^(?:please\s+)?(?:keep in mind|note for the future)(?:\s+that|\s*:)\s+(.{3,})$/i,
    type: "project",
    whole: false,
  },
  { re: /^from now on[,:]?\s+(.{3,})$/i, type: "feedback", whole: true },
  { re: /^(?:always|never)\s+(?!mind\b)(\S+\s+\S+.*)$/i, type: "feedback", whole: true },
];

export interface Draft {
  readonly type: TypeName;
  readonly title: string;
  readonly content: string;
}

const sentences = (text: string) =>
  text
    .split(/\n+/)
    .flatMap((line) => line.split(/(?<=[.!;])\s+/))
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The explicit remember-requests in an operator's message, as drafts. */
export function draftsFrom(prompt: string): Draft[] {
  const out: Draft[] = [];
  for (const s of sentences(prompt)) {
    if (out.length >= MAX_DRAFTS) break;
    if (s.endsWith("?")) continue;
    for (const t of TRIGGERS) {
      const m = t.re.exec(s);
      if (!m?.[1]) continue;
      const content = capital((t.whole ? s : m[1]).replace(/[\s.!;]+$/, "")).slice(0, MAX_CHARS);
      if (out.some((d) => d.content === content)) break;
      out.push({ type: t.type, title: content.slice(0, 60), content });
      break;
    }
  }
  return out;
}

/** A draft to write; true when the kernel wrote it (and recorded it in the session). */
export type DraftWriter = (draft: Draft) => Promise<boolean>;

/**
 * post-model-response: writes the run prompt's requests as pending drafts, through
 * `viaKernel` when it can, else straight into the store; returns how many were written.
 */
export async function draftTurn(
  memory: Memory,
  roots: Roots,
  prompt: string,
  sessionId: string,
  turnId: string,
  now: string,
  viaKernel: DraftWriter = async () => false,
): Promise<number> {
  if (!prompt) return 0;
  const existing = memory.store.list(roots);
  let written = 0;
  for (const d of draftsFrom(prompt)) {
    // Already known (a canonical record or an earlier draft says the same): nothing new.
    if (existing.some((r) => r.type === d.type && similarity(r.content, d.content) >= 0.8)) continue;
    try {
      // Credential shapes are refused before anything leaves the plugin.
      refuseSecrets(d.title, d.content);
      if (!(await viaKernel(d)))
        memory.record(
          roots,
          {
            type: d.type,
            scope: "project",
            title: d.title,
            content: d.content,
            status: "pending",
            provenance: { sourceSessionId: sessionId, sourceTurnId: turnId, recordedBy: AUTO_RECORDER },
          },
          now,
        );
      written++;
    } catch {
      // A refused draft (a credential shape) is simply not written; its text is never logged.
    }
  }
  return written;
}

/**
 * session-end: drops this session's drafts the model has since recorded (through
 * `viaKernel` when it can); the rest stay pending.
 */
export async function reconcileSession(
  memory: Memory,
  roots: Roots,
  sessionId: string,
  viaKernel: (id: string) => Promise<boolean> = async () => false,
): Promise<string[]> {
  const all = memory.store.list(roots);
  const drafts = all.filter(
    (r) =>
      r.status === "pending" &&
      r.provenance.recordedBy === AUTO_RECORDER &&
      r.provenance.sourceSessionId === sessionId,
  );
  const confirmed = all.filter((r) => r.status === "canonical");
  const dropped: string[] = [];
  for (const d of drafts) {
    if (confirmed.some((c) => similarity(c.content, d.content) >= 0.6 || c.content.includes(d.content))) {
      if (!(await viaKernel(d.id))) memory.store.remove(roots, d.id);
      dropped.push(d.id);
    }
  }
  return dropped;
}
