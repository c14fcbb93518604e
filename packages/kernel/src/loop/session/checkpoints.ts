// The session's file checkpoints (packages/state/src/checkpoints.ts): the working tree is
// scanned before a turn's resource calls run (taking in whatever changed since, without
// recording it) and after them (recording the turn's changes); when every call names the
// only files it can change, just those files are looked at. A failing scan never fails
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
  /** The files the scan before the current step looked at, when it looked at those alone. */
  #named: Set<string> | undefined;

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

  /**
   * Takes in the tree as it is before the step's calls: the files they name when they name
   * all they can change (the rest of the tree is left to the next full scan, which takes
   * in whatever else changed meanwhile without recording it), else the whole tree.
   */
  before(paths?: readonly string[]): void {
    this.#named = undefined;
    this.#guard("before", () => {
      if (paths && this.store.scanPaths(paths) !== undefined) this.#named = new Set(paths);
      else this.store.scan();
    });
  }

  after(turnId: string, paths?: readonly string[]): void {
    const named = this.#named;
    this.#named = undefined;
    this.#guard("after", () => {
      // Looked at named files only when the scan before did too; a path a human's correction
      // added is looked at as well (its state before the call is the one last taken in).
      const changes =
        (named && paths && this.store.scanPaths([...new Set([...named, ...paths])])) ?? this.store.scan();
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
