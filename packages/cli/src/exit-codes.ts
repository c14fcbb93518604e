// The agent command's exit statuses. They are distinct so scripts can tell a finished
// run from one stopped by a bound, one that was denied or cancelled, and a failure.
import { SessionStatus } from "@pluggableharness/protocol/session";

export const EXIT = {
  /** The session completed (or the command did what it was asked). */
  OK: 0,
  /** An error: bad configuration, no vendor key, a plugin failure, a FAILED session, an invalid agent.hcl. */
  ERROR: 1,
  /** The command line itself was wrong (unknown flag, bad value). */
  USAGE: 2,
  /** A bound ended the session: max turns, max budget or max wall clock. */
  BOUND: 3,
  /** The run was cancelled (interrupt, SIGINT/SIGTERM), or a tool call it made was denied. */
  DENIED_OR_CANCELLED: 4,
} as const;

export const EXIT_CODE_HELP = `Exit status:
  0  the session completed
  1  error (configuration, missing vendor key, plugin failure, failed session)
  2  invalid command line
  3  a bound was reached (--max-turns, --max-budget-usd, --max-wall-clock)
  4  cancelled (Esc, Ctrl-C, SIGINT/SIGTERM) or a tool call was denied`;

/**
 * The exit status for a finished run. A failure is an error (1) unless the denial
 * breaker stopped it; otherwise any denied call makes it 4 (README: "a tool call was
 * denied"), even when a bound stopped the run afterwards; then bounds (3).
 */
export function exitCodeFor(status: SessionStatus, deniedCalls: number): number {
  switch (status) {
    case SessionStatus.COMPLETED:
      return deniedCalls > 0 ? EXIT.DENIED_OR_CANCELLED : EXIT.OK;
    case SessionStatus.ERROR_MAX_TURNS:
    case SessionStatus.ERROR_MAX_BUDGET_USD:
    case SessionStatus.ERROR_MAX_WALL_CLOCK:
      return deniedCalls > 0 ? EXIT.DENIED_OR_CANCELLED : EXIT.BOUND;
    case SessionStatus.CANCELLED:
      return EXIT.DENIED_OR_CANCELLED;
    default:
      return EXIT.ERROR;
  }
}
