// The session's file checkpoints (packages/state/src/checkpoints.ts): the working tree is
// scanned before a turn's resource calls run (taking in whatever changed since, without
// recording it) and after them (recording the turn's changes). A failing scan never fails
// the turn: it is logged, and the turn simply has no checkpoint.
import { CheckpointStore, checkpointsDir, type SessionWriter } from "@pluggableharness/state";
import type { LoopDeps } from "../deps.ts";

/** What the checkpoints read of their session. */
export interface CheckpointsDeps {
  readonly sessionId: string;
  readonly workingDirectory: string;
  /** Where the session file is (the checkpoints sit beside it) and its last sequence number. */
  readonly writer: Pick<SessionWriter, "path" | "lastSequence">;
  readonly log: Pick<LoopDeps["log"], "debug" | "warn">;
}

export class SessionCheckpoints {
  readonly #session: CheckpointsDeps;
  #store: CheckpointStore | undefined;

  constructor(session: CheckpointsDeps) {
    this.#session = session;
  }

  get store(): CheckpointStore {
    this.#store ??= new CheckpointStore(
      checkpointsDir(this.#session.writer.path),
      this.#session.workingDirectory,
    );
    return this.#store;
  }

  before(): void {
    this.#guard("before", () => void this.store.scan());
  }

  after(turnId: string): void {
    this.#guard("after", () => {
      const changes = this.store.scan();
      const cp = this.store.record(this.#session.writer.lastSequence(), turnId, changes);
      if (cp)
        this.#session.log.debug(
          `checkpoint: ${cp.changes.length} file(s) changed`,
          { turn_id: turnId, seq: cp.seq },
          this.#session.sessionId,
        );
    });
  }

  #guard(when: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#session.log.warn(
        `checkpoint scan ${when} the tool calls failed; this turn cannot be rewound`,
        { error: String(err) },
        this.#session.sessionId,
      );
    }
  }
}
