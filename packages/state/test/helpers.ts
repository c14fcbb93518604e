// Shared test helpers: scratch directories, producers and real event.v1 payloads.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema, ToolCallEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import type { NewEvent, ProducerIdentity, StateLogEntry } from "../src/index.ts";

export function scratchDir(prefix = "state-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export const toolProducer: ProducerIdentity = { category: PluginCategory.TOOL, name: "fs", version: "1.2.0" };
export const modelProducer: ProducerIdentity = {
  category: PluginCategory.MODEL,
  name: "anthropic",
  version: "2.0.1",
};

/** A deterministic payload for index i, so a reader can recompute what was written. */
export function payloadFor(i: number, size = 64): Uint8Array {
  const bytes = new Uint8Array(size);
  let x = (i * 2654435761) >>> 0;
  for (let k = 0; k < size; k++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[k] = x >>> 24;
  }
  return bytes;
}

export function toolCallEvent(i: number, size = 64): NewEvent {
  return {
    kind: EventKind.TOOL_CALL,
    producer: toolProducer,
    schemaVersion: "1",
    payload: payloadFor(i, size),
  };
}

export function messagePayload(text: string, turnId = "01TURN"): Uint8Array {
  return toBinary(
    MessageEventSchema,
    create(MessageEventSchema, {
      message: { role: Role.ASSISTANT, content: [{ block: { case: "text", value: { text } } }] },
      turnId,
      model: { provider: "anthropic", id: "claude-x" },
      costUsd: 0.5,
    }),
  );
}

export function toolCallPayload(name: string): Uint8Array {
  return toBinary(
    ToolCallEventSchema,
    create(ToolCallEventSchema, { turnId: "01TURN", provider: "fs", call: { id: "call-1", toolName: name } }),
  );
}

export function collectLog(): { entries: StateLogEntry[]; log: (e: StateLogEntry) => void } {
  const entries: StateLogEntry[] = [];
  return { entries, log: (e) => entries.push(e) };
}

/** Byte equality without vitest's element-by-element deep compare (slow on thousands of payloads). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}
