// Synthetic reasons of kernel-written message events that are records, not conversation.

/** Billed attempts that failed: persisted for the ledger, never sent to a model. */
export const ATTEMPT_FAILED_PREFIX = "attempt_failed:";

/**
 * The synthetic reason of the kernel's record of a failed turn: why it failed, in the
 * session file for `sessions show` and for whoever resumes it; never sent to a model.
 */
export const TURN_FAILED_REASON = "turn_failed";

/**
 * A compactor's summary call (compaction.ts): persisted for the cost ledger and the
 * transcript; the conversation gets the summary through the compaction event instead.
 */
export const COMPACTION_SUMMARY_REASON = "compaction_summary";

/** Kernel-written messages that are records, not conversation. */
export function outsideConversation(syntheticReason: string): boolean {
  return (
    syntheticReason.startsWith(ATTEMPT_FAILED_PREFIX) ||
    syntheticReason === TURN_FAILED_REASON ||
    syntheticReason === COMPACTION_SUMMARY_REASON
  );
}
