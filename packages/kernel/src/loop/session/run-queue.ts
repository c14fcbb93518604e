// A session's runs: one at a time; input arriving meanwhile (a user message, an
// operator's direct call) queues for the next run. Idle waiters resolve once no run is
// active and nothing is queued.

import type { ContentBlock } from "@pluggableharness/protocol/content";
import { FrontendErrorCategory } from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { REOPENABLE_STATUSES } from "@pluggableharness/state";
import type { SessionChannel } from "../../frontends/channel.ts";
import type { LoopDeps } from "../deps.ts";
import type { SessionInput } from "./session-input.ts";
import type { SessionLog } from "./session-log.ts";

/** Starts one run of the queue's session (the driver, bound to the session by session.ts). */
export type QueuedRunStarter = (input: SessionInput, signal: AbortSignal) => Promise<void>;

/** What the run queue reads and moves of its session. */
export interface RunQueueDeps {
  readonly id: string;
  readonly deps: Pick<LoopDeps, "log" | "newId">;
  readonly channel: Pick<SessionChannel, "publish">;
  readonly log: Pick<SessionLog, "recordTurnFailure">;
  /** Its live sub-agents, interrupted with it. */
  readonly children: ReadonlySet<{ interrupt(): void }>;
  status(): SessionStatus;
  setStatus(status: SessionStatus, detail?: string): void;
}

export class RunQueue {
  readonly #s: RunQueueDeps;
  readonly #startRun: QueuedRunStarter;
  readonly #inputs: SessionInput[] = [];
  #run: { controller: AbortController; done: Promise<void> } | undefined;
  #idleWaiters: Array<(s: SessionStatus) => void> = [];
  #stopped = false;
  /** The current run's wall-clock deadline (clock ms), which bounds its sub-agents too (driver.ts sets it). */
  deadline: number | undefined;

  constructor(session: RunQueueDeps, startRun: QueuedRunStarter) {
    this.#s = session;
    this.#startRun = startRun;
  }

  get running(): boolean {
    return this.#run !== undefined;
  }

  /** Queues a user message and starts a run if none is active. */
  enqueue(content: ContentBlock[]): void {
    this.#inputs.push({ kind: "message", content });
    this.#kick();
  }

  /** Resolves with the status once no run is active and no input is queued. */
  idle(): Promise<SessionStatus> {
    if (!this.#run && this.#inputs.length === 0) return Promise.resolve(this.#s.status());
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops for good: cancels the current run and drops queued input (kernel shutdown). */
  stop(): void {
    this.#stopped = true;
    this.#inputs.length = 0;
    this.interrupt();
  }

  #kick(): void {
    if (this.#run) return;
    if (this.#stopped) this.#inputs.length = 0;
    const input = this.#inputs.shift();
    if (!input) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const w of waiters) w(this.#s.status());
      return;
    }
    if (this.#s.status() !== SessionStatus.RUNNING && !REOPENABLE_STATUSES.has(this.#s.status())) {
      this.#s.deps.log.warn(
        "queued message dropped: the session ended and cannot be re-opened",
        {
          status: SessionStatus[this.#s.status()],
        },
        this.#s.id,
      );
      this.#s.channel.publish({
        event: {
          case: "error",
          value: {
            error: {
              category: FrontendErrorCategory.SESSION_REPLAY_ONLY,
              message: `a queued message was not run: the session ended with status ${SessionStatus[this.#s.status()]?.toLowerCase()}`,
            },
          },
        },
      });
      this.#kick();
      return;
    }
    const controller = new AbortController();
    const done = this.#startRun(input, controller.signal)
      .catch((err: unknown) => {
        this.#s.deps.log.error(
          "session run failed unexpectedly",
          { error: (err as Error).stack ?? String(err) },
          this.#s.id,
        );
        if (this.#s.status() === SessionStatus.RUNNING) {
          try {
            this.#s.log.recordTurnFailure(this.#s.deps.newId(), `kernel error: ${(err as Error).message}`);
            this.#s.setStatus(SessionStatus.FAILED, `kernel error: ${(err as Error).message}`);
          } catch {
            // the file may be gone (shutdown)
          }
        }
      })
      .finally(() => {
        this.#run = undefined;
        this.#kick();
      });
    this.#run = { controller, done };
  }

  /** Waits for the current run (if any) to finish. */
  async waitRun(): Promise<void> {
    await this.#run?.done;
  }

  /** Queues an operator's direct call and starts a run if none is active. */
  enqueueInvocation(input: Extract<SessionInput, { kind: "invoke" | "compact" }>): void {
    this.#inputs.push(input);
    this.#kick();
  }

  /** Cancels the current run, if any. */
  interrupt(): void {
    this.#run?.controller.abort(new Error("interrupted"));
    // Live sub-agents go with it, recursively (kernel memory, not the state backend).
    for (const child of this.#s.children) child.interrupt();
  }
}
