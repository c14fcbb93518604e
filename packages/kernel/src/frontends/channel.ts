// One session's outgoing ServerEvents, in one order for every subscriber. Everything a
// session sends (stream deltas, renders of persisted events, plan-ready, permission
// and interactive requests, usage and status updates) goes through one serial queue,
// so a subscriber never sees a permission request before the plan it belongs to, and
// an attaching frontend's backfill (replayed renders up to the last event queued before
// it attached) is followed exactly by the live events after it. A render with nothing to
// show (an empty tree, e.g. a message of tool results only) is not sent, live or in a
// backfill alike, so both read the same.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type ServerEvent, ServerEventSchema } from "@pluggableharness/protocol/frontend";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { PlacedContent } from "@pluggableharness/protocol/render";
import type { KernelLogger } from "../log.ts";
import type { RenderPreference } from "../loop/frontend-port.ts";
import { ActionLedger } from "./action-ledger.ts";
import { genericRenderTree, hasContent, placed, type RenderableEvent } from "./generic-render.ts";

export type ServerEventInit = MessageInitShape<typeof ServerEventSchema>;

/** How many backfill renders may be in flight at once. */
export const BACKFILL_WINDOW = 64;

/** The part of a frontend connection a channel writes to. */
export interface Subscriber {
  readonly interactive: boolean;
  /** How it wants persisted events rendered (default "producer"; see ConnectOptions). */
  readonly renders?: RenderPreference;
  /** Also sent the renders a compact transcript leaves out (see ConnectOptions.verbose). */
  readonly verbose?: boolean;
  deliver(event: ServerEvent): void;
}

const RICHNESS: Record<RenderPreference, number> = { none: 0, generic: 1, producer: 2 };
/**
 * How `s` wants `event` rendered. A context contribution precedes every model call, one
 * per provider: only a verbose subscriber is sent it (the session file keeps it anyway).
 */
const wants = (s: Subscriber, event?: RenderableEvent): RenderPreference =>
  event?.kind === EventKind.CONTEXT_CONTRIBUTION && !s.verbose ? "none" : (s.renders ?? "producer");

export interface BackfillSource {
  /** Persisted events with sequence <= through, in sequence order. */
  events(through: number): Iterable<RenderableEvent>;
}

export interface AttachPlan {
  /** Sent first (session_attached). */
  readonly opening: ServerEventInit;
  readonly backfill: BackfillSource;
  readonly requestId?: string;
  /** Sent after backfill_complete, once the subscriber is live (e.g. pending requests). */
  readonly live?: () => ServerEventInit[];
}

export class SessionChannel {
  readonly sessionId: string;
  /** The ActionNodes delivered on this channel: what an action_trigger may echo. */
  readonly actions = new ActionLedger();
  readonly #subscribers = new Set<Subscriber>();
  readonly #render: (event: RenderableEvent) => Promise<PlacedContent>;
  readonly #log: KernelLogger;
  #tail: Promise<void> = Promise.resolve();
  #lastQueued = 0;
  #attaching = 0;
  /** Called whenever the subscriber set changes. */
  onSubscribersChanged: (() => void) | undefined;

  constructor(
    sessionId: string,
    render: (event: RenderableEvent) => Promise<PlacedContent>,
    log: KernelLogger,
  ) {
    this.sessionId = sessionId;
    this.#render = render;
    this.#log = log;
  }

  /** The sequence of the last persisted event queued for delivery. */
  get lastQueuedSequence(): number {
    return this.#lastQueued;
  }

  /** Starts the channel after an existing history (a session loaded from its file). */
  resumeAfter(sequence: number): void {
    this.#lastQueued = Math.max(this.#lastQueued, sequence);
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** True when a subscriber can answer permission and interactive requests. */
  hasInteractiveSubscriber(): boolean {
    for (const s of this.#subscribers) if (s.interactive) return true;
    return false;
  }

  isSubscribed(s: Subscriber): boolean {
    return this.#subscribers.has(s);
  }

  /** Queues a live event for every subscriber. */
  publish(init: ServerEventInit): void {
    const event = create(ServerEventSchema, { ...init, sessionId: this.sessionId });
    this.#enqueue(async () => this.#broadcast(event));
  }

  /** Queues the render of a persisted event (call in the same tick as the append). */
  publishPersisted(event: RenderableEvent): void {
    this.#lastQueued = Math.max(this.#lastQueued, event.sequence);
    // Nobody to render for: a later attach backfills it. An attach already queued will
    // subscribe before this task runs, so it must be rendered.
    if (this.#subscribers.size === 0 && this.#attaching === 0) return;
    this.#enqueue(async () => {
      // Rendered once, the richest way any subscriber wants it; nobody wanting a render
      // (a headless run printing only its answer) means no Render RPC at all.
      let mode: RenderPreference = "none";
      for (const s of this.#subscribers)
        if (RICHNESS[wants(s, event)] > RICHNESS[mode]) mode = wants(s, event);
      if (mode === "none") return;
      const content = await this.#renderAs(mode, event);
      if (!hasContent(content.content)) return;
      const rendered = create(ServerEventSchema, {
        sessionId: this.sessionId,
        event: { case: "render", value: { content } },
      });
      this.actions.note(rendered);
      for (const s of this.#subscribers) if (wants(s, event) !== "none") s.deliver(rendered);
    });
  }

  #renderAs(mode: RenderPreference, event: RenderableEvent): Promise<PlacedContent> {
    return mode === "producer" ? this.#render(event) : Promise.resolve(placed(genericRenderTree(event)));
  }

  /** Queues a backfill for `subscriber` and subscribes it afterwards. */
  attach(subscriber: Subscriber, plan: AttachPlan): Promise<void> {
    // Everything queued before this call is backfilled; everything after it arrives live.
    const through = this.#lastQueued;
    this.#attaching++;
    return this.#enqueue(async () => {
      try {
        await this.#backfill(subscriber, plan, through);
      } finally {
        this.#attaching--;
      }
    });
  }

  async #backfill(subscriber: Subscriber, plan: AttachPlan, through: number): Promise<void> {
    const send = (init: ServerEventInit) => {
      const event = create(ServerEventSchema, { ...init, sessionId: this.sessionId });
      this.actions.note(event);
      subscriber.deliver(event);
    };
    send({ ...plan.opening, ...(plan.requestId !== undefined ? { requestId: plan.requestId } : {}) });
    // Renders run ahead of delivery (up to BACKFILL_WINDOW at once: a producer's Render
    // RPCs overlap instead of waiting for each other) and are sent in sequence order.
    const inFlight: Promise<PlacedContent>[] = [];
    const sendNext = async () => {
      const content = await inFlight.shift()!;
      if (hasContent(content.content)) send({ event: { case: "render", value: { content } } });
    };
    const mode = wants(subscriber);
    for (const e of mode === "none" ? [] : plan.backfill.events(through)) {
      if (wants(subscriber, e) === "none") continue;
      const rendering = this.#renderAs(mode, e);
      // A failure surfaces when its turn comes; until then it must not count as unhandled.
      rendering.catch(() => {});
      inFlight.push(rendering);
      if (inFlight.length >= BACKFILL_WINDOW) await sendNext();
    }
    while (inFlight.length > 0) await sendNext();
    send({
      ...(plan.requestId !== undefined ? { requestId: plan.requestId } : {}),
      event: { case: "backfillComplete", value: { lastSequence: BigInt(through) } },
    });
    this.#subscribers.add(subscriber);
    this.onSubscribersChanged?.();
    for (const init of plan.live?.() ?? []) send(init);
  }

  /** Subscribes without a backfill (the creator of a new session). */
  subscribe(subscriber: Subscriber): void {
    this.#subscribers.add(subscriber);
    this.onSubscribersChanged?.();
  }

  unsubscribe(subscriber: Subscriber): void {
    if (this.#subscribers.delete(subscriber)) this.onSubscribersChanged?.();
  }

  /** Resolves once everything queued so far has been delivered. */
  flush(): Promise<void> {
    return this.#enqueue(async () => {});
  }

  #enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.#tail.then(task).catch((err: unknown) => {
      this.#log.error("frontend delivery failed", { error: (err as Error).message }, this.sessionId);
    });
    this.#tail = run;
    return run;
  }

  #broadcast(event: ServerEvent): void {
    if (this.#subscribers.size > 0) this.actions.note(event);
    for (const s of this.#subscribers) s.deliver(event);
  }
}
