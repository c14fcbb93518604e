// Memory changes recorded in the session they happened in: memory_write, memory_update
// and memory_delete events, produced by the kernel (which made the change), naming the
// memory provider and who asked (a tool, "/memory", "agent memory").
import { toBinary } from "@bufbuild/protobuf";
import { MemoryMutationEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { Session } from "../loop/session/session.ts";
import type { MemoryEventKind, MemoryEventSink } from "./audit.ts";

const KINDS: Record<MemoryEventKind, EventKind> = {
  memory_write: EventKind.MEMORY_WRITE,
  memory_update: EventKind.MEMORY_UPDATE,
  memory_delete: EventKind.MEMORY_DELETE,
};

export function sessionMemorySink(session: Session, origin: string): MemoryEventSink {
  return (kind, event) => {
    event.origin = origin;
    session.log.persist(KINDS[kind], session.deps.kernelProducer, toBinary(MemoryMutationEventSchema, event));
  };
}
