// `agent sessions show`: the transcript straight from the session file, every event
// through the kernel's generic renderer; no plugin is started. It loads only the session
// reader, the generic renderer (`@pluggableharness/kernel/render`) and the plain-text
// painter, never the kernel, so it starts fast.
import { eventProblem, genericRenderTree, StoredInputs } from "@pluggableharness/kernel/render";
import type { SessionInfo } from "@pluggableharness/protocol/session";
import { treeText } from "@pluggableharness/provider-tui/render-tree";
import {
  isSessionId,
  openSessionReader,
  SessionNotFoundError,
  type SessionReader,
  type SessionTreeNode,
  sessionTree,
} from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { CliError, CoalescingWriter, type Io } from "../io.ts";
import { resolveSessionId, shownStatus } from "../session-ids.ts";

export function openReader(typed: string): SessionReader {
  const id = resolveSessionId(typed);
  if (!isSessionId(id)) throw new CliError(`agent: "${typed}" is not a session id`, EXIT.USAGE);
  try {
    return openSessionReader(id, { log: () => {} });
  } catch (err) {
    if (err instanceof SessionNotFoundError) throw new CliError(`agent: no session ${id}`, EXIT.ERROR);
    throw new CliError(`agent: ${(err as Error).message}`, EXIT.ERROR);
  }
}

/**
 * What is damaged in a session file: events that cannot be read as what their row says,
 * and tables the file has lost (noted by the reader while it read).
 */
export function damageOf(reader: SessionReader, problems: readonly string[]): string[] {
  return [...reader.checkTables(), ...problems];
}

/** Reports damage on stderr after what could be read was shown; 1 when there was any. */
export function reportDamage(io: Io, id: string, damage: readonly string[]): number {
  if (damage.length === 0) return EXIT.OK;
  io.err.write(
    `agent: session ${id} is damaged; everything else is shown:\n${damage.map((d) => `  damaged: ${d}\n`).join("")}`,
  );
  return EXIT.ERROR;
}

/** Every event that cannot be read as what its row says, as "event N: why". */
export function eventProblems(reader: SessionReader): string[] {
  const problems: string[] = [];
  for (const e of reader.events()) {
    const p = eventProblem(e);
    if (p) problems.push(`event ${e.sequence} cannot be read: ${p}`);
  }
  return problems;
}

/**
 * A session's descendants (sub-agents, their own sub-agents, ...) in spawn order, depth
 * first, with their nesting level below it.
 */
export function descendantsOf(sessionId: string): Array<{ info: SessionInfo; level: number }> {
  const out: Array<{ info: SessionInfo; level: number }> = [];
  const walk = (n: SessionTreeNode, level: number) => {
    for (const c of n.children) {
      out.push({ info: c.info, level });
      walk(c, level + 1);
    }
  };
  const tree = sessionTree(sessionId, { log: () => {} });
  if (tree) walk(tree, 1);
  return out;
}

/**
 * The line above a session's transcript: its profile, the model in use (the operator's
 * /model choice, which a resume applies, when one is set) and its status.
 */
export function sessionHeading(info: SessionInfo): string {
  const model = info.model
    ? ` · model ${info.model}${info.modelOverridden ? " (chosen with /model)" : ""}`
    : "";
  return `Session ${info.sessionId} · ${info.profile}${model} · ${shownStatus(info)}`;
}

/** The heading a sub-agent's transcript is printed under. */
export function subagentHeading(info: SessionInfo, level: number): string {
  const indent = "  ".repeat(level - 1);
  return `${indent}── sub-agent ${info.sessionId} · ${info.profile} · ${shownStatus(info)} · spawned by ${info.parentSessionId} ──`;
}

/**
 * Prints the transcript of a session file with the kernel's generic renderer, then each
 * of its sub-agents' (unless `children` is false), under a heading naming it.
 */
export async function runShow(
  io: Io,
  id: string,
  opts: { expand?: boolean; children?: boolean },
): Promise<number> {
  const reader = openReader(id);
  const rootId = reader.sessionId;
  const out = new CoalescingWriter(io.out);
  let code: number = EXIT.OK;
  try {
    out.write(`${sessionHeading(reader.info())}\n\n`);
    code = showOne(io, out, reader, opts);
  } finally {
    reader.close();
  }
  try {
    if (opts.children !== false) {
      for (const { info, level } of descendantsOf(rootId)) {
        out.write(`\n${subagentHeading(info, level)}\n\n`);
        const r = openReader(info.sessionId);
        try {
          code = Math.max(code, showOne(io, out, r, opts));
        } finally {
          r.close();
        }
      }
    }
    out.flushNow();
    return code;
  } finally {
    out.close();
  }
}

function showOne(io: Io, out: CoalescingWriter, reader: SessionReader, opts: { expand?: boolean }): number {
  const problems: string[] = [];
  let n = 0;
  // Large tool inputs are stored once, in the assistant message: put them back.
  for (const e of new StoredInputs().all(reader.events())) {
    const problem = eventProblem(e);
    if (problem) problems.push(`event ${e.sequence} cannot be read: ${problem}`);
    // Like a live or replayed session: an event with nothing to show (a message of tool
    // results only) prints nothing, so each call appears once, by its own events.
    const tree = genericRenderTree(e);
    if (!tree.root) continue;
    out.write(`${n++ > 0 ? "\n" : ""}${treeText(tree, { expand: !!opts.expand })}\n`);
  }
  out.flushNow();
  return reportDamage(io, reader.sessionId, damageOf(reader, problems));
}
