// A push/pull bridge between callback-style sources (child process pipes, sockets)
// and an async generator: producers push, the generator pulls in order.
export class AsyncQueue<T> {
  readonly #items: T[] = [];
  #waiter: (() => void) | undefined;
  #closed = false;

  push(item: T): void {
    if (this.#closed) return;
    this.#items.push(item);
    this.#wake();
  }

  /** No more items after those already queued. */
  close(): void {
    this.#closed = true;
    this.#wake();
  }

  get closed(): boolean {
    return this.#closed;
  }

  async *drain(): AsyncGenerator<T, void, void> {
    for (;;) {
      while (this.#items.length > 0) yield this.#items.shift()!;
      if (this.#closed) return;
      await new Promise<void>((r) => {
        this.#waiter = r;
      });
    }
  }

  #wake(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }
}
