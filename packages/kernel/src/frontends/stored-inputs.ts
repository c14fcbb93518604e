// A large tool input is stored once. A call's arguments travel in three kernel-written
// events: the assistant message (its tool_use block, the conversation's source of truth),
// the tool_call event and, for a resource, the plan event's item. When they are large
// (over LARGE_INPUT_BYTES of JSON, a 10 MB write_file), the tool_call and plan events
// leave them out and say so (arguments_in_message, inputs_in_message); the message, which
// always comes first, holds them. Whatever reads events from a file (a backfill, `agent
// sessions show`, the headless printer) puts them back with StoredInputs, so a producer's
// Render and every other reader see whole events. Live renders get the whole event anyway.
import { fromBinary, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { MessageEventSchema, PlanEventSchema, ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { isLargeInput, LARGE_INPUT_BYTES } from "../loop/turn/stored-events.ts";

export {
  isLargeInput,
  LARGE_INPUT_BYTES,
  storedPlanEvent,
  storedToolCallEvent,
} from "../loop/turn/stored-events.ts";

interface EventLike {
  readonly kind: EventKind;
  readonly producer: { readonly category: PluginCategory };
  readonly schemaVersion: string;
  readonly payload: Uint8Array;
}

/** Puts large inputs back into the events of one session file, read in sequence order. */
export class StoredInputs {
  readonly #inputs = new Map<string, JsonObject>();

  /** `event` as it was before its large inputs were left out (the same object when none were). */
  restore<E extends EventLike>(event: E): E {
    if (event.producer.category !== PluginCategory.KERNEL && event.kind !== EventKind.TOOL_CALL) return event;
    if (event.schemaVersion !== "1" && event.schemaVersion !== "v1") return event;
    try {
      switch (event.kind) {
        case EventKind.MESSAGE: {
          // Only a message this large can hold a large input.
          if (event.producer.category !== PluginCategory.KERNEL || event.payload.length <= LARGE_INPUT_BYTES)
            return event;
          for (const b of fromBinary(MessageEventSchema, event.payload).message?.content ?? [])
            if (b.block.case === "toolUse" && isLargeInput(b.block.value.input))
              this.#inputs.set(b.block.value.id, b.block.value.input!);
          return event;
        }
        case EventKind.TOOL_CALL: {
          const e = fromBinary(ToolCallEventSchema, event.payload);
          const input = e.call && e.argumentsInMessage ? this.#inputs.get(e.call.id) : undefined;
          if (!input || !e.call) return event;
          e.call.arguments = input;
          e.argumentsInMessage = false;
          return { ...event, payload: toBinary(ToolCallEventSchema, e) };
        }
        case EventKind.PLAN: {
          const e = fromBinary(PlanEventSchema, event.payload);
          if (e.inputsInMessage.length === 0 || !e.plan) return event;
          for (const item of e.plan.items) {
            const input = e.inputsInMessage.includes(item.toolCallId)
              ? this.#inputs.get(item.toolCallId)
              : undefined;
            if (input) item.input = input;
          }
          e.inputsInMessage = [];
          return { ...event, payload: toBinary(PlanEventSchema, e) };
        }
        default:
          return event;
      }
    } catch {
      return event; // a payload that does not decode is reported by whoever renders it
    }
  }

  /** Restores every event of a stream read in sequence order. */
  *all<E extends EventLike>(events: Iterable<E>): Generator<E, void, undefined> {
    for (const e of events) yield this.restore(e);
  }
}
