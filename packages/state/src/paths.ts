// Where session files live and how they are named.

import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { monotonicFactory } from "ulid";
import { InvalidArgumentError } from "./errors.ts";

export const SESSION_FILE_SUFFIX = ".sqlite";
/** Suffix of a damaged original kept beside its salvaged replacement. */
export const CORRUPT_SUFFIX = ".corrupt";
/** Sidecar that flags a file which failed its integrity check and could not be salvaged. */
export const UNREADABLE_SUFFIX = ".unreadable";

/**
 * `$XDG_STATE_HOME/agent/sessions`, or `~/.local/state/agent/sessions` when the variable
 * is unset, empty or relative (the XDG base directory rules say to ignore a relative one).
 */
export function defaultSessionsDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const xdg = env.XDG_STATE_HOME;
  const base = xdg && isAbsolute(xdg) ? xdg : join(home, ".local", "state");
  return join(base, "agent", "sessions");
}

export function resolveSessionsDir(dir: string | undefined): string {
  return dir ?? defaultSessionsDir();
}

// Monotonic within this process: ids minted in the same millisecond still sort in order.
const nextUlid = monotonicFactory();

/** A fresh ULID: session ids and event ids. Lexical order is creation order. */
export function newUlid(): string {
  return nextUlid();
}

// Canonical ULID text: 26 upper-case Crockford base32 characters, first one 0-7 (48-bit time).
const ULID_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

export function isSessionId(id: string): boolean {
  return typeof id === "string" && ULID_PATTERN.test(id);
}

/** Rejects anything that is not a ULID, which also keeps ids from escaping the sessions directory. */
export function assertSessionId(id: string): void {
  if (!isSessionId(id)) {
    throw new InvalidArgumentError(`session id ${JSON.stringify(id)} is not a canonical (upper-case) ULID`);
  }
}

export function sessionFilePath(dir: string, sessionId: string): string {
  assertSessionId(sessionId);
  return join(dir, `${sessionId}${SESSION_FILE_SUFFIX}`);
}
