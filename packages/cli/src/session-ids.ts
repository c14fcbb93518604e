// Session ids as people type them, and whether a RUNNING session is really running.
// A unique prefix names a session (ids are 26-character ULIDs nobody types whole);
// a session file marked RUNNING whose writer lock nobody holds belongs to a kernel
// that was killed: it is "interrupted", and `agent run --resume` picks it up.
import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { type SessionInfo, SessionStatus } from "@pluggableharness/protocol/session";
import { formatUsd, statusName } from "@pluggableharness/provider-tui/describe";
import { assertNoOtherWriter, isSessionId, listSessions, SessionLockedError } from "@pluggableharness/state";
import { EXIT } from "./exit-codes.ts";
import { CliError } from "./io.ts";

/** The full id a typed id or unique prefix (any case) names; a usage error otherwise. */
export function resolveSessionId(typed: string): string {
  const text = typed.trim().toUpperCase();
  if (text === "") throw new CliError("agent: the session id is empty", EXIT.USAGE);
  const ids = listSessions({ log: () => {} }).sessions.map((s) => s.sessionId);
  if (isSessionId(text) && ids.includes(text)) return text;
  const matches = ids.filter((id) => id.startsWith(text));
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new CliError(
      `agent: "${typed}" is the start of ${matches.length} sessions (${matches.slice(0, 5).join(", ")}${matches.length > 5 ? ", …" : ""}); type more of the id`,
      EXIT.USAGE,
    );
  }
  // A well-formed id nobody has: the caller's own "no session" message applies.
  if (isSessionId(text)) return text;
  throw new CliError(
    `agent: no session id starts with "${typed}" (agent sessions list shows them)`,
    EXIT.ERROR,
  );
}

/** True when a process holds the session's writer lock (its kernel is alive). */
export function isLive(sessionId: string): boolean {
  try {
    assertNoOtherWriter(sessionId);
    return false;
  } catch (err) {
    if (err instanceof SessionLockedError) return true;
    return false;
  }
}

function canonical(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir;
  }
}

/**
 * Root sessions started in `cwd` (compared after resolving symlinks), newest first.
 * Sessions recorded before the working directory was (schema 3) belong to no directory.
 */
export function sessionsOfDirectory(cwd: string): SessionInfo[] {
  const here = canonical(cwd);
  return listSessions({ rootsOnly: true, log: () => {} }).sessions.filter(
    (s) => s.workingDirectory !== "" && canonical(s.workingDirectory) === here,
  );
}

/** `--continue`: the newest session of this directory that no live kernel is running. */
export function latestSessionOf(cwd: string): string {
  const candidates = sessionsOfDirectory(cwd).filter((s) => !isLive(s.sessionId));
  const first = candidates[0];
  if (!first) {
    throw new CliError(
      `agent: --continue: no session to continue in ${cwd} (agent sessions list shows every directory's)`,
      EXIT.ERROR,
    );
  }
  return first.sessionId;
}

/** A directory as lists show it: under the home directory as ~/… */
export function shortDirectory(dir: string, home = homedir()): string {
  if (dir === "") return "-";
  if (home && (dir === home || dir.startsWith(`${home}/`))) return `~${dir.slice(home.length)}`;
  return dir;
}

/** When a session started, as lists show it (UTC, to the second). */
export function startedText(info: SessionInfo): string {
  const ts = info.startedAt;
  if (!ts) return "-";
  const d = new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6));
  return d.toISOString().replace("T", " ").slice(0, 19);
}

/** A status as lists show it: RUNNING without a live kernel is "interrupted". */
export function shownStatus(info: SessionInfo): string {
  if (info.status === SessionStatus.RUNNING && !isLive(info.sessionId)) return "interrupted";
  return statusName(info.status);
}

/** One line naming a session for a picker or a list of candidates. */
export function sessionLine(info: SessionInfo, withDirectory: boolean): string {
  return [
    info.sessionId.slice(0, 10),
    startedText(info).slice(0, 16),
    shownStatus(info),
    formatUsd(info.costUsd),
    ...(withDirectory ? [shortDirectory(info.workingDirectory)] : []),
    info.title || "(no prompt yet)",
  ].join("  ");
}

/** Sessions `--resume` without an id offers: this directory's, else every directory's. */
export function resumeCandidates(cwd: string): { sessions: SessionInfo[]; here: boolean } {
  const resumable = (s: SessionInfo) =>
    !isLive(s.sessionId) &&
    s.status !== SessionStatus.ERROR_MAX_TURNS &&
    s.status !== SessionStatus.ERROR_MAX_BUDGET_USD &&
    s.status !== SessionStatus.ERROR_MAX_WALL_CLOCK;
  const here = sessionsOfDirectory(cwd).filter(resumable);
  if (here.length > 0) return { sessions: here, here: true };
  return {
    sessions: listSessions({ rootsOnly: true, log: () => {} }).sessions.filter(resumable),
    here: false,
  };
}
