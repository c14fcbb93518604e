// Session ids as people type them, and whether a RUNNING session is really running.
// A unique prefix names a session (ids are 26-character ULIDs nobody types whole);
// a session file marked RUNNING whose writer lock nobody holds belongs to a kernel
// that was killed: it is "interrupted", and `agent run --resume` picks it up.
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
