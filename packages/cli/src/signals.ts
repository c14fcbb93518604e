// Ctrl-C / SIGTERM for a headless run, from the moment the command starts: the first one
// cancels (during start-up the prompt is then never sent, and the run still ends with its
// `result` record and exit 4), a second one exits at once with 130.

/** What bin/start.mjs counted before the CLI loaded (and the handler it installed). */
interface EarlySignals {
  count: number;
  dispose(): void;
}

/** Takes over bin/start.mjs's early handler: its count, once. */
export function takeEarlySignals(): number {
  const key = Symbol.for("pluggableharness.earlySignals");
  const g = globalThis as { [k: symbol]: EarlySignals | undefined };
  const early = g[key];
  if (!early) return 0;
  g[key] = undefined;
  early.dispose();
  return early.count;
}

export class RunSignals {
  #count = 0;
  #onInterrupt: (() => void) | undefined;
  readonly #handler = () => {
    if (++this.#count > 1) process.exit(130);
    this.#onInterrupt?.();
  };

  constructor() {
    process.on("SIGINT", this.#handler);
    process.on("SIGTERM", this.#handler);
    this.#count = takeEarlySignals();
  }

  /** A signal arrived already. */
  get interrupted(): boolean {
    return this.#count > 0;
  }

  /** What the first signal does once the run can be cancelled (not called for one already received). */
  onInterrupt(fn: () => void): void {
    this.#onInterrupt = fn;
  }

  dispose(): void {
    process.off("SIGINT", this.#handler);
    process.off("SIGTERM", this.#handler);
  }
}
