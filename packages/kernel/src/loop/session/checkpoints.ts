// The session's file checkpoints (packages/state/src/checkpoints.ts): the working tree is
// scanned before a turn's resource calls run (taking in whatever changed since, without
// recording it) and after them (recording the turn's changes). A failing scan never fails
// the turn: it is logged, and the turn simply has no checkpoint.
import { CheckpointStore, checkpointsDir } from "@pluggableharness/state";
import type { Session } from "./session.ts";

export class SessionCheckpoints {
  readonly #session: Session;
  #store: CheckpointStore | undefined;

  constructor(session: Session) {
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
        this.#session.deps.log.debug(
          `checkpoint: ${cp.changes.length} file(s) changed`,
          { turn_id: turnId, seq: cp.seq },
          this.#session.id,
        );
    });
  }

  #guard(when: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#session.deps.log.warn(
        `checkpoint scan ${when} the tool calls failed; this turn cannot be rewound`,
        { error: String(err) },
        this.#session.id,
      );
    }
  }
}
