// The few EventEmitter methods grpc-js call objects offer and the typed client and server
// code uses (on, once, off, emit), without EventEmitter's per-instance bookkeeping.
type Listener = (...args: never[]) => void;

export class MiniEmitter {
  #listeners: Map<string, Listener[]> | undefined;

  on(event: string, listener: Listener): this {
    this.#listeners ??= new Map();
    const list = this.#listeners.get(event);
    if (list) list.push(listener);
    else this.#listeners.set(event, [listener]);
    return this;
  }

  once(event: string, listener: Listener): this {
    const wrapped = ((...args: never[]) => {
      this.off(event, wrapped);
      listener(...args);
    }) as Listener & { original?: Listener };
    wrapped.original = listener;
    return this.on(event, wrapped);
  }

  off(event: string, listener: Listener): this {
    const list = this.#listeners?.get(event);
    if (!list) return this;
    const i = list.findIndex((l) => l === listener || (l as { original?: Listener }).original === listener);
    if (i >= 0) list.splice(i, 1);
    return this;
  }

  removeListener(event: string, listener: Listener): this {
    return this.off(event, listener);
  }

  emit(event: string, ...args: unknown[]): boolean {
    const list = this.#listeners?.get(event);
    if (!list || list.length === 0) return false;
    for (const l of list.length === 1 ? list : [...list]) (l as (...a: unknown[]) => void)(...args);
    return true;
  }
}
