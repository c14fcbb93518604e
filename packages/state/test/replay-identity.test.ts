// What replay must give back unchanged: the kernel-assigned ULID of every message and the
// model attribution of each assistant message, even when consecutive assistant messages
// came from different providers (a fallback switched vendors mid-session).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Role } from "@pluggableharness/protocol/content";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSession, kernelProducer, newUlid, openSessionReader, replaySession } from "../src/index.ts";
import { scratchDir } from "./helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = scratchDir());
});
afterEach(() => cleanup());

interface Written {
  id: string;
  role: Role;
  provider?: string;
  model?: string;
}

const HISTORY: Written[] = [
  { id: newUlid(), role: Role.USER },
  { id: newUlid(), role: Role.ASSISTANT, provider: "anthropic", model: "claude-sonnet-4-6" },
  { id: newUlid(), role: Role.USER },
  // Two assistant messages in a row from different producers.
  { id: newUlid(), role: Role.ASSISTANT, provider: "openai", model: "gpt-5.4" },
  { id: newUlid(), role: Role.ASSISTANT, provider: "claude-work", model: "claude-sonnet-4-6" },
];

function write(): string {
  const w = createSession({ profile: "coder", depth: 0 }, { dir, durability: "normal" });
  for (const m of HISTORY) {
    const payload = toBinary(
      MessageEventSchema,
      create(MessageEventSchema, {
        turnId: "01TURN",
        message: {
          id: m.id,
          role: m.role,
          content: [{ block: { case: "text", value: { text: `message ${m.id}` } } }],
          ...(m.provider ? { producedByProvider: m.provider, producedByModelId: m.model } : {}),
        },
        ...(m.provider ? { model: { provider: m.provider, id: m.model } } : {}),
      }),
    );
    w.append({ kind: EventKind.MESSAGE, producer: kernelProducer("0.1.0"), schemaVersion: "1", payload });
  }
  const id = w.sessionId;
  w.close();
  return id;
}

function replayed(sessionId: string): Written[] {
  return [...replaySession(sessionId, { dir })].map((e) => {
    const m = fromBinary(MessageEventSchema, e.payload).message!;
    return {
      id: m.id,
      role: m.role,
      ...(m.producedByProvider !== undefined
        ? { provider: m.producedByProvider, model: m.producedByModelId }
        : {}),
    };
  });
}

describe("replay of messages", () => {
  it("message ids come back from replay exactly as the kernel assigned them, every time", () => {
    const sessionId = write();
    const first = replayed(sessionId);
    expect(first.map((m) => m.id)).toEqual(HISTORY.map((m) => m.id));
    for (const m of first) expect(m.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    // A second replay, through a fresh reader, gives the same ids again.
    expect(replayed(sessionId).map((m) => m.id)).toEqual(first.map((m) => m.id));
  });

  it("consecutive assistant messages from different producers keep their own attribution on replay", () => {
    const sessionId = write();
    expect(replayed(sessionId)).toEqual(HISTORY);
    const reader = openSessionReader(sessionId, { dir });
    try {
      const models = reader
        .readEvents({ afterSequence: 0 })
        .map((e) => fromBinary(MessageEventSchema, e.payload).model)
        .filter((m) => m !== undefined)
        .map((m) => `${m.provider}/${m.id}`);
      expect(models).toEqual([
        "anthropic/claude-sonnet-4-6",
        "openai/gpt-5.4",
        "claude-work/claude-sonnet-4-6",
      ]);
    } finally {
      reader.close();
    }
  });
});
