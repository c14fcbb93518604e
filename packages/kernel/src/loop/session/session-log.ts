// The session's log as the loop writes it: the kernel is the only writer of the session
// file. Every append also queues the event's render for subscribed frontends; appends
// of one event-loop turn share one transaction (one sync to disk), in order (#hold).
import { create, toBinary } from "@bufbuild/protobuf";
import { type ContentBlock, type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { type MessageEvent, MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import {
  type AppendedEvent,
  type CostEntry,
  costEntriesFromMessage,
  eventKindText,
  type PlanItemEntry,
  type ProducerIdentity,
} from "@pluggableharness/state";
import type { AccumulatedCompletion } from "../../domain/index.ts";
import { completionEventFields } from "../turn/completion-event.ts";
import type { ResolvedCandidate } from "../turn/model-call.ts";
import { ATTEMPT_FAILED_PREFIX, COMPACTION_SUMMARY_REASON, TURN_FAILED_REASON } from "../turn/records.ts";
import type { SessionLogDeps } from "./session-log-deps.ts";

/** An event written in a batch (schema version "1"). */
export interface BatchedEvent {
  readonly kind: EventKind;
  readonly producer: ProducerIdentity;
  /** What is stored. */
  readonly payload: Uint8Array;
  /** What live subscribers render, when the stored payload leaves something out (stored-inputs.ts). */
  readonly live?: Uint8Array;
}

export class SessionLog {
  readonly #s: SessionLogDeps;
  /** A commit of the open group is scheduled for the end of this event-loop turn. */
  #commitScheduled = false;

  constructor(session: SessionLogDeps) {
    this.#s = session;
  }

  /** Appends an event and queues its render for subscribed frontends. */
  persist(
    kind: EventKind,
    producer: ProducerIdentity,
    payload: Uint8Array,
    extras: {
      costs?: readonly CostEntry[];
      planItems?: readonly PlanItemEntry[];
      schemaVersion?: string;
      /** What live subscribers render, when `payload` leaves something out. */
      live?: Uint8Array;
    } = {},
  ): AppendedEvent {
    const schemaVersion = extras.schemaVersion ?? "1";
    this.#hold();
    const appended = this.#s.writer.append({
      kind,
      producer,
      schemaVersion,
      payload,
      ...(extras.costs ? { costs: extras.costs } : {}),
      ...(extras.planItems ? { planItems: extras.planItems } : {}),
    });
    this.#s.channel.publishPersisted({
      sequence: appended.sequence,
      kind,
      kindText: eventKindText(kind),
      producer,
      schemaVersion,
      payload: extras.live ?? payload,
    });
    return appended;
  }

  /** Appends several events (all or none), in order, and queues their renders like persist() does. */
  persistBatch(events: readonly BatchedEvent[]): AppendedEvent[] {
    if (events.length === 0) return [];
    this.#hold();
    const appended = this.#s.writer.appendBatch(
      events.map((e) => ({ kind: e.kind, producer: e.producer, payload: e.payload, schemaVersion: "1" })),
    );
    events.forEach((e, i) => {
      this.#s.channel.publishPersisted({
        sequence: appended[i]!.sequence,
        kind: e.kind,
        kindText: eventKindText(e.kind),
        producer: e.producer,
        schemaVersion: "1",
        payload: e.live ?? e.payload,
      });
    });
    return appended;
  }

  /**
   * Appends an event whose write may wait for the end of this event-loop turn. Every
   * append now joins the turn's group commit (see #hold), so this is persist().
   */
  persistSoon(kind: EventKind, producer: ProducerIdentity, payload: Uint8Array): void {
    this.persist(kind, producer, payload);
  }

  /**
   * Makes everything appended so far durable now, power loss included. Called where the
   * file must be whole: before a tool runs (what it was asked and the gate's decision are
   * on disk before it acts), before a status change, a rewind's read, a shutdown.
   */
  commit(): void {
    this.#s.writer.sync();
  }

  /**
   * Group commit: a step's writes (the assistant message, its tool_call events, the plan;
   * then the tool results, the apply record and the user message carrying them) are
   * appended at once, with their sequence and renders, inside one transaction that commits
   * at the end of the event-loop turn in which they happen, or earlier at commit(). That
   * end-of-turn commit is not synced (a crash of the process keeps it; power loss keeps it
   * once the next commit() has synced the WAL), so a tool step costs one sync to disk, the
   * one before its tool runs, instead of one per event. A kernel killed inside the turn
   * loses that turn's appends, as a kill a moment earlier would have; never one a tool ran
   * after.
   */
  #hold(): void {
    const writer = this.#s.writer;
    writer.hold();
    if (this.#commitScheduled || !writer.holding) return;
    this.#commitScheduled = true;
    setImmediate(() => {
      this.#commitScheduled = false;
      try {
        if (!writer.closed) writer.commit();
      } catch (err) {
        // Nobody awaits this commit; a failure (a full disk) is logged, not thrown.
        this.#s.deps.log.error(
          "could not commit the session's events",
          { error: (err as Error).message },
          this.#s.id,
        );
      }
    });
  }

  /** Persists a message event with its ledger rows, charges its cost and reports usage. */
  persistMessage(event: MessageEvent, servedBy?: { providerName: string; modelId: string }): AppendedEvent {
    const costs = event.usage.length > 0 ? costEntriesFromMessage(event, servedBy) : [];
    let running = this.#s.writer.costUsd();
    const appended = this.persist(
      EventKind.MESSAGE,
      this.#s.deps.kernelProducer,
      toBinary(MessageEventSchema, event),
      {
        ...(costs.length > 0 ? { costs } : {}),
      },
    );
    // Context usage (the TUI's used/ceiling indicator) for the turn's own model calls.
    const ctx =
      event.syntheticReason === COMPACTION_SUMMARY_REASON ? undefined : this.#s.compaction.contextUsage;
    for (const c of costs) {
      this.#s.cost.charge(c.costUsd, { input: Number(c.inputTokens), output: Number(c.outputTokens) });
      running += c.costUsd;
      const key = `${c.providerName}/${c.modelId}`;
      const tally = this.#s.usageByModel.get(key) ?? {
        provider: c.providerName,
        modelId: c.modelId,
        input: 0,
        output: 0,
        cacheRead: 0,
        cacheWrite: 0,
        costUsd: 0,
      };
      tally.input += Number(c.inputTokens);
      tally.output += Number(c.outputTokens);
      tally.cacheRead += Number(c.cacheReadTokens ?? 0);
      tally.cacheWrite += Number(c.cacheWriteTokens ?? 0);
      tally.costUsd += c.costUsd;
      this.#s.usageByModel.set(key, tally);
      const remaining = this.#s.cost.remainingUsd();
      this.#s.channel.publish({
        event: {
          case: "usageUpdate",
          value: {
            turnId: event.turnId,
            providerName: c.providerName,
            modelId: c.modelId,
            inputTokens: BigInt(c.inputTokens),
            outputTokens: BigInt(c.outputTokens),
            cacheWriteTokens: BigInt(c.cacheWriteTokens ?? 0),
            cacheReadTokens: BigInt(c.cacheReadTokens ?? 0),
            costUsd: c.costUsd,
            sessionCostUsd: running,
            ...(Number.isFinite(remaining) ? { remainingCostBudgetUsd: remaining } : {}),
            ...(ctx ? { contextTokens: BigInt(ctx.tokens), contextCeiling: BigInt(ctx.ceiling) } : {}),
          },
        },
      });
    }
    return appended;
  }

  /** A user-role message (prompt, tool results, kernel instruction): persisted and appended to history. */
  appendUserMessage(turnId: string, content: ContentBlock[], syntheticReason = ""): Message {
    const message = create(MessageSchema, { role: Role.USER, content, id: this.#s.deps.newId() });
    this.persistMessage(create(MessageEventSchema, { message, turnId, syntheticReason }));
    this.#s.conversation.append(message);
    return message;
  }

  /**
   * A failed attempt that was billed or got a vendor request id: persisted for the ledger and
   * for support (the request id), kept out of the history.
   */
  persistFailedAttempt(
    turnId: string,
    candidate: ResolvedCandidate,
    completion: AccumulatedCompletion,
    category: string,
  ): void {
    this.persistMessage(
      create(MessageEventSchema, {
        ...completionEventFields(turnId, candidate, completion),
        syntheticReason: `${ATTEMPT_FAILED_PREFIX}${category}`,
      }),
    );
  }

  /**
   * A turn failed (its model kept failing, a hook broke the request, the kernel hit an
   * error): the reason goes to the log and into the session file, and the session stays
   * open for the next message.
   */
  recordTurnFailure(turnId: string, detail: string): void {
    this.#s.deps.log.error(`the turn failed: ${detail}`, { turn: turnId }, this.#s.id);
    const text = `The turn failed: ${detail}. The session is still open: send another message to go on.`;
    const message = create(MessageSchema, {
      role: Role.ASSISTANT,
      id: this.#s.deps.newId(),
      content: [{ block: { case: "text", value: { text } } }],
    });
    this.persistMessage(create(MessageEventSchema, { message, turnId, syntheticReason: TURN_FAILED_REASON }));
  }
}
