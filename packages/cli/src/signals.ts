// Ctrl-C / SIGTERM for a headless run, from the moment the command starts: the first one
// cancels (during start-up the prompt is then never sent, and the run still ends with its
// `result` record and exit 4), a second one exits at once with 130.

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
