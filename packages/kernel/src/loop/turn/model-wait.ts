// The total a model call may wait for an answer to begin (settings.max_model_wait_ms):
// the silence of each attempt before its first event and the waits between attempts,
// summed. Without it a silent vendor was waited on once per retry, five minutes each; an
// answer that is streaming is not waiting, and is bounded by the idle timeout alone.

export class ModelWait {
  readonly limitMs: number;
  #waitedMs = 0;

  constructor(limitMs: number) {
    this.limitMs = limitMs;
  }

  get waitedMs(): number {
    return this.#waitedMs;
  }

  leftMs(): number {
    return Math.max(0, this.limitMs - this.#waitedMs);
  }

  add(ms: number): void {
    this.#waitedMs += Math.max(0, ms);
  }

  /** Why the call was given up, naming the model and the setting. */
  exhausted(model: string): string {
    return `${model} did not begin answering within ${seconds(this.limitMs)} s of waiting in all (settings.max_model_wait_ms); the call was given up`;
  }

  /** The status-line text while an attempt waits for its first event. */
  notice(model: string, silentMs: number): string {
    return `waiting for ${model} to begin answering: ${seconds(silentMs)} s so far, gives up after ${seconds(this.limitMs)} s in all (Esc or Ctrl-C cancels)`;
  }
}

/** When to say an attempt is still waiting: after 10 s (or half the idle timeout), then at doubling intervals. */
export function firstNoticeMs(idleMs: number): number {
  return Math.max(1, Math.min(10_000, Math.floor(idleMs / 2)));
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
