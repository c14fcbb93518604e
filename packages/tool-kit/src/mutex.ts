// Per-key serialisation inside one plugin process: calls sharing a key run one after
// another in arrival order, calls with different keys run freely.
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Number of keys with a holder or waiters (for tests). */
  get size(): number {
    return this.#tails.size;
  }

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => {
      release = r;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
