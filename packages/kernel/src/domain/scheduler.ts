// Turn-level tool-call concurrency (ConcurrencySpec). Every call claims locks:
// - provider_lock: the provider exclusively (no other call to it runs meanwhile);
// - keyed / per_call: the provider shared, plus the key (provider, tool, canonical
//   key_fields values) exclusively; per_call keys are unique, so they never collide;
// - interactive: the interactive lane exclusively (one question at a time) and its
//   provider exclusively (a ConcurrencySpec there is ignored, and absent means unsafe);
// - serialize-all mode (models without supports_parallel_tool_calls): everything.
// A call starts as soon as every earlier-submitted call it conflicts with has settled,
// so conflicting calls run in submission order and nothing else ever waits.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type { ModelSpec } from "@pluggableharness/protocol/model";
import { canonicalJson } from "./canonical-json.ts";
import { type ConcurrencyMode, concurrencyModeOf, type ValidatedTool } from "./tool-schema.ts";

export interface SchedulableCall {
  /** The kernel-assigned call id (unique within the turn). */
  readonly id: string;
  readonly tool: ValidatedTool;
  readonly arguments: JsonObject;
}

/** The locks a call holds while it runs. */
export interface LockClaim {
  readonly provider: string;
  readonly providerExclusive: boolean;
  /** Exclusive key, absent under a provider-wide lock. */
  readonly key?: string;
  readonly interactive: boolean;
}

/** Marks a key field absent from the arguments, distinct from an explicit JSON null. */
const ABSENT = { $absent: true } as const;

/** The serialization key of a keyed call: provider, tool and the canonical key values. */
export function concurrencyKey(
  provider: string,
  tool: string,
  keyFields: readonly string[],
  args: JsonObject,
): string {
  const values: JsonValue[] = keyFields.map((f) => (f in args ? (args[f] as JsonValue) : ABSENT));
  return canonicalJson([provider, tool, values]);
}

export function lockClaim(call: SchedulableCall): LockClaim {
  const provider = call.tool.provider;
  const mode: ConcurrencyMode = call.tool.concurrency ?? concurrencyModeOf(call.tool.schema);
  switch (mode.kind) {
    case "interactive":
      return { provider, providerExclusive: true, interactive: true };
    case "provider_lock":
      return { provider, providerExclusive: true, interactive: false };
    case "per_call":
      return {
        provider,
        providerExclusive: false,
        key: canonicalJson([provider, call.tool.schema.name, call.id]),
        interactive: false,
      };
    case "keyed":
      return {
        provider,
        providerExclusive: false,
        key: concurrencyKey(provider, call.tool.schema.name, mode.keyFields, call.arguments),
        interactive: false,
      };
  }
}

/** Two claims may not be held at the same time. */
export function claimsConflict(a: LockClaim, b: LockClaim): boolean {
  if (a.interactive && b.interactive) return true;
  if (a.provider !== b.provider) return false;
  if (a.providerExclusive || b.providerExclusive) return true;
  return a.key !== undefined && a.key === b.key;
}

export interface SchedulerOptions {
  /** Run every call alone, in submission order (model without parallel tool calls). */
  readonly serializeAll?: boolean;
}

/** Parallel tool calls only for models that declare supports_parallel_tool_calls: true. */
export function serializeAllFor(model: ModelSpec): boolean {
  return model.supportsParallelToolCalls !== true;
}

interface Entry {
  readonly claim: LockClaim;
  readonly settled: Promise<void>;
}

export type Settled<T> =
  | { readonly call: SchedulableCall; readonly status: "fulfilled"; readonly value: T }
  | { readonly call: SchedulableCall; readonly status: "rejected"; readonly reason: unknown };

/**
 * Per-key queues for one turn (or longer). `submit` order is the order conflicting calls
 * run in; submit calls in tool_use declaration order.
 */
export class ConcurrencyScheduler {
  readonly #serializeAll: boolean;
  #pending: Entry[] = [];

  constructor(options: SchedulerOptions = {}) {
    this.#serializeAll = options.serializeAll === true;
  }

  /** Runs `run(call)` once every earlier conflicting call has settled. */
  submit<T>(call: SchedulableCall, run: (call: SchedulableCall) => Promise<T>): Promise<T> {
    const claim = lockClaim(call);
    const waitFor = this.#pending
      .filter((e) => this.#serializeAll || claimsConflict(e.claim, claim))
      .map((e) => e.settled);
    const result = (waitFor.length === 0 ? Promise.resolve() : Promise.all(waitFor)).then(() => run(call));
    const entry: Entry = {
      claim,
      settled: result.then(
        () => undefined,
        () => undefined,
      ),
    };
    this.#pending.push(entry);
    void entry.settled.then(() => {
      this.#pending = this.#pending.filter((e) => e !== entry);
    });
    return result;
  }
}

/** Schedules a batch of calls (declaration order) and waits for all of them. */
export async function schedule<T>(
  calls: readonly SchedulableCall[],
  run: (call: SchedulableCall) => Promise<T>,
  options: SchedulerOptions = {},
): Promise<Settled<T>[]> {
  const scheduler = new ConcurrencyScheduler(options);
  const promises = calls.map((c) => scheduler.submit(c, run));
  const settled = await Promise.allSettled(promises);
  return settled.map((s, i) =>
    s.status === "fulfilled"
      ? { call: calls[i]!, status: "fulfilled", value: s.value }
      : { call: calls[i]!, status: "rejected", reason: s.reason },
  );
}

/** Who holds or wants a lock: a session and its ancestors (nearest first). */
export interface LockOwner {
  readonly session: string;
  readonly ancestors: readonly string[];
}

interface Held {
  readonly claim: LockClaim;
  readonly owner: LockOwner;
}

interface Waiter extends Held {
  readonly grant: () => void;
}

/**
 * The kernel-wide tool locks: one instance serves every session of a kernel, so a
 * `safe: false` provider never sees two Invokes at once, whichever sessions they come
 * from, and equal keys of a keyed operation never run together anywhere. Locks are taken
 * right before Invoke and released when it ends (never held while a human decides).
 *
 * Two rules keep the session tree free of deadlocks:
 * - a claim held by an ancestor session does not block its descendants: that call is
 *   waiting for them (a spawn tool whose Invoke runs a child session);
 * - earlier waiters of other sessions go first (FIFO), except for a sub-agent's
 *   request, which may be what an earlier waiter's blocker is itself waiting for.
 * Within one session, conflicting calls keep their submission order.
 */
export class ToolLocks {
  readonly #held = new Set<Held>();
  #waiting: Waiter[] = [];

  /** Held claims (for diagnostics and tests). */
  get heldCount(): number {
    return this.#held.size;
  }

  get waitingCount(): number {
    return this.#waiting.length;
  }

  /**
   * Resolves with the release function once the claim is granted; `onWait` is told when
   * it must wait. An abort while waiting rejects with the signal's reason.
   */
  acquire(
    claim: LockClaim,
    owner: LockOwner,
    options: { readonly signal?: AbortSignal; readonly onWait?: () => void } = {},
  ): Promise<() => void> {
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const held: Held = { claim, owner };
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.#held.delete(held);
        this.#pump();
      };
      const onAbort = () => {
        this.#waiting = this.#waiting.filter((w) => w !== waiter);
        this.#pump();
        reject(signal!.reason);
      };
      const waiter: Waiter = {
        claim,
        owner,
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#held.add(held);
          resolve(release);
        },
      };
      if (this.#grantable(waiter, this.#waiting)) {
        waiter.grant();
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
      options.onWait?.();
    });
  }

  #blocks(holder: LockOwner, requester: LockOwner): boolean {
    return !requester.ancestors.includes(holder.session);
  }

  #grantable(w: Held, earlier: readonly Held[]): boolean {
    for (const h of this.#held) {
      if (claimsConflict(h.claim, w.claim) && this.#blocks(h.owner, w.owner)) return false;
    }
    for (const e of earlier) {
      if (!claimsConflict(e.claim, w.claim) || !this.#blocks(e.owner, w.owner)) continue;
      if (e.owner.session === w.owner.session || w.owner.ancestors.length === 0) return false;
    }
    return true;
  }

  /** Grants, in arrival order, every waiter that may run now. */
  #pump(): void {
    const still: Waiter[] = [];
    for (const w of this.#waiting) {
      if (this.#grantable(w, still)) w.grant();
      else still.push(w);
    }
    this.#waiting = still;
  }
}
