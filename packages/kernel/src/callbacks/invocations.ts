// Which sessions each plugin is currently working for. The kernel registers every call
// it makes into a plugin on behalf of a session (Invoke, StreamCompletion, Contribute,
// DispatchHook, Preview, Render); Emit is accepted only for a session the calling
// plugin has such a call in flight for, and is attributed to that call's category.

interface Active {
  readonly category: string;
  count: number;
}

export class InvocationTracker {
  readonly #active = new Map<string, Map<string, Active[]>>();
  /** plugin -> session -> how many operator-initiated calls (slash command, action) it serves. */
  readonly #operator = new Map<string, Map<string, number>>();

  /**
   * Marks a call the operator made directly (not a model's) as served by `plugin` for
   * `sessionId`, until the returned function runs. ControlSession is accepted only then.
   */
  beginOperator(plugin: string, sessionId: string): () => void {
    let sessions = this.#operator.get(plugin);
    if (!sessions) {
      sessions = new Map();
      this.#operator.set(plugin, sessions);
    }
    sessions.set(sessionId, (sessions.get(sessionId) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      const n = (sessions.get(sessionId) ?? 1) - 1;
      if (n > 0) sessions.set(sessionId, n);
      else sessions.delete(sessionId);
      if (sessions.size === 0) this.#operator.delete(plugin);
    };
  }

  /** Whether `plugin` is serving an operator's direct call for `sessionId` right now. */
  servesOperator(plugin: string, sessionId: string): boolean {
    return (
      (this.#operator.get(plugin)?.get(sessionId) ?? 0) > 0 &&
      this.categoryFor(plugin, sessionId) !== undefined
    );
  }

  /** Registers a call; returns the function that ends it. */
  begin(plugin: string, sessionId: string, category: string): () => void {
    let sessions = this.#active.get(plugin);
    if (!sessions) {
      sessions = new Map();
      this.#active.set(plugin, sessions);
    }
    let list = sessions.get(sessionId);
    if (!list) {
      list = [];
      sessions.set(sessionId, list);
    }
    let entry = list.find((a) => a.category === category);
    if (!entry) {
      entry = { category, count: 0 };
      list.push(entry);
    }
    entry.count++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      entry.count--;
      if (entry.count === 0) list.splice(list.indexOf(entry), 1);
      if (list.length === 0) sessions.delete(sessionId);
      if (sessions.size === 0) this.#active.delete(plugin);
    };
  }

  /** Runs `fn` as a registered call. */
  async run<T>(plugin: string, sessionId: string, category: string, fn: () => Promise<T>): Promise<T> {
    const end = this.begin(plugin, sessionId, category);
    try {
      return await fn();
    } finally {
      end();
    }
  }

  /** The category of the (earliest) call `plugin` has in flight for `sessionId`, if any. */
  categoryFor(plugin: string, sessionId: string): string | undefined {
    return this.#active.get(plugin)?.get(sessionId)?.[0]?.category;
  }
}
