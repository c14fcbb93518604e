import { create, equals, type MessageInitShape } from "@bufbuild/protobuf";
import { ContentBlockSchema, Role } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  type ModelSpec,
  SafetyKind,
  StopReason,
  type StreamEvent,
  StreamEventSchema,
  StreamMetadataSchema,
} from "@pluggableharness/protocol/model";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import fc from "fast-check";
import { decodeTime } from "ulid";
import { describe, expect, it } from "vitest";
import { mergeMetadata, StreamAccumulator, StreamRule } from "../../src/domain/accumulator.ts";
import { ProtocolViolationError } from "../../src/domain/errors.ts";
import { ulidGenerator } from "../../src/domain/ids.ts";
import { at, model, plainModel } from "./fixtures.ts";

type EventInit = MessageInitShape<typeof StreamEventSchema>["event"];
const ev = (event: EventInit): StreamEvent => create(StreamEventSchema, { event } as never);
const text = (t: string) => ev({ case: "textDelta", value: { text: t } });
const think = (t: string) => ev({ case: "thinkingDelta", value: { text: t } });
const sig = (bytes: number[]) =>
  ev({ case: "thinkingSignature", value: { signature: new Uint8Array(bytes) } });
const start = (id: string, name: string) => ev({ case: "toolCallStart", value: { id, name } });
const delta = (id: string, f: string) => ev({ case: "toolCallDelta", value: { id, argumentsFragment: f } });
const done = (id: string) => ev({ case: "toolCallDone", value: { id } });
const stop = (reason: StopReason, matched?: string) =>
  ev({ case: "stop", value: { reason, ...(matched !== undefined ? { matchedStopSequence: matched } : {}) } });
const meta = (init: object) => ev({ case: "metadata", value: init });
const notice = (kind: number) => ev({ case: "safetyNotice", value: { kind, message: "held for review" } });
const usage = (input: bigint, output: bigint) =>
  ev({ case: "usage", value: { inputTokens: input, outputTokens: output } });

let counter = 0;
function accumulate(events: StreamEvent[], spec: ModelSpec = model({ id: "claude-x" })) {
  const ids = ulidGenerator(
    () => 1_767_225_600_000,
    () => 0.5,
  );
  const acc = new StreamAccumulator({
    provider: "anthropic",
    model: spec,
    clock: () => at("2026-01-01T00:00:00Z"),
    newMessageId: () => {
      counter++;
      return ids();
    },
  });
  for (const e of events) acc.push(e);
  return acc.finish();
}

function violation(events: StreamEvent[], spec?: ModelSpec): ProtocolViolationError {
  try {
    accumulate(events, spec);
  } catch (e) {
    if (e instanceof ProtocolViolationError) return e;
    throw e;
  }
  throw new Error("expected a protocol violation");
}

describe("stream accumulation into the canonical message", () => {
  it("the worked StreamCompletion sequence becomes text plus one tool call with parsed arguments", () => {
    const r = accumulate([
      text("Let me check "),
      text("that file."),
      start("tc_1", "read_file"),
      delta("tc_1", '{"path":'),
      delta("tc_1", '"main.go"}'),
      done("tc_1"),
      usage(412n, 28n),
      stop(StopReason.TOOL_USE),
    ]);
    expect(r.message.role).toBe(Role.ASSISTANT);
    expect(r.message.content.map((b) => b.block.case)).toEqual(["text", "toolUse"]);
    expect(r.message.content[0]!.block.value).toMatchObject({ text: "Let me check that file." });
    expect(r.message.content[1]!.block.value).toMatchObject({
      id: "tc_1",
      name: "read_file",
      input: { path: "main.go" },
    });
    expect(r.stop?.reason).toBe(StopReason.TOOL_USE);
    expect(r.complete).toBe(true);
    expect(r.costUsd).toBe(0.001656);
  });

  it("thinking keeps its signature bytes verbatim", () => {
    const bytes = [0, 255, 7, 128, 1];
    const r = accumulate([
      think("step 1, "),
      think("step 2"),
      sig(bytes),
      text("answer"),
      stop(StopReason.END_TURN),
    ]);
    expect(r.message.content.map((b) => b.block.case)).toEqual(["thinking", "text"]);
    const t = r.message.content[0]!.block.value as { text: string; signature: Uint8Array };
    expect(t.text).toBe("step 1, step 2");
    expect([...t.signature]).toEqual(bytes);
  });

  it("a signature with no open thinking block is kept on its own thinking block", () => {
    const r = accumulate([sig([9]), text("x")]);
    expect(r.message.content[0]!.block).toMatchObject({ case: "thinking", value: { text: "" } });
  });

  it("redacted_thinking is stored whole and verbatim", () => {
    const data = new Uint8Array([1, 2, 3, 250]);
    const r = accumulate([
      think("a"),
      ev({ case: "redactedThinking", value: { data } }),
      ev({ case: "redactedThinking", value: { data: new Uint8Array([4]) } }),
      text("b"),
    ]);
    expect(r.message.content.map((b) => b.block.case)).toEqual([
      "thinking",
      "redactedThinking",
      "redactedThinking",
      "text",
    ]);
    expect([...(r.message.content[1]!.block.value as { data: Uint8Array }).data]).toEqual([1, 2, 3, 250]);
  });

  it("parallel tool calls are assembled per id from interleaved fragments", () => {
    const r = accumulate([
      start("a", "read_file"),
      start("b", "grep"),
      delta("b", '{"pattern"'),
      delta("a", '{"path":"x"'),
      delta("b", ':"TODO"}'),
      delta("a", "}"),
      done("a"),
      done("b"),
    ]);
    expect(r.message.content.map((b) => (b.block.value as { input: unknown }).input)).toEqual([
      { path: "x" },
      { pattern: "TODO" },
    ]);
  });

  it("tool calls get kernel-assigned ids, the vendor's kept as vendor_id, invalid ones reported by the kernel id", () => {
    const ids = ["k1", "k2"];
    const acc = new StreamAccumulator({
      provider: "anthropic",
      model: model({ id: "claude-x" }),
      clock: () => at("2026-01-01T00:00:00Z"),
      newMessageId: () => "m",
      newToolCallId: () => ids.shift()!,
    });
    for (const e of [
      start("toolu_a", "read_file"),
      start("toolu_b", "grep"),
      delta("toolu_a", "{"),
      done("toolu_a"),
      done("toolu_b"),
    ])
      acc.push(e);
    const r = acc.finish();
    expect(
      r.message.content.map((b) => b.block.case === "toolUse" && [b.block.value.id, b.block.value.vendorId]),
    ).toEqual([
      ["k1", "toolu_a"],
      ["k2", "toolu_b"],
    ]);
    expect(r.invalidToolCalls.map((c) => c.id)).toEqual(["k1"]);
    expect(r.invalidToolCalls[0]!.error.message).toContain("(call k1)");
  });

  it("a tool call without arguments gets an empty object", () => {
    const r = accumulate([start("a", "list"), done("a")]);
    expect(r.message.content[0]!.block.value).toMatchObject({ input: {} });
    expect(r.invalidToolCalls).toEqual([]);
  });

  it("malformed tool-call JSON is a classified invalid_arguments error, and the block is kept", () => {
    const r = accumulate([
      start("a", "bash"),
      delta("a", '{"cmd": "ls'),
      done("a"),
      start("b", "bash"),
      delta("b", "[1]"),
      done("b"),
    ]);
    expect(r.message.content).toHaveLength(2);
    expect(r.invalidToolCalls.map((c) => [c.id, c.error.category])).toEqual([
      ["a", ToolErrorCategory.INVALID_ARGUMENTS],
      ["b", ToolErrorCategory.INVALID_ARGUMENTS],
    ]);
    expect(r.invalidToolCalls[0]!.error.message).toContain("not valid JSON");
    expect(r.invalidToolCalls[0]!.error.details).toEqual({ raw: '{"cmd": "ls' });
    expect(r.invalidToolCalls[1]!.error.message).toContain("not a JSON object");
  });

  it("a tool call still open when the stream ends is parsed from what arrived", () => {
    const r = accumulate([start("a", "bash"), delta("a", '{"cmd":"ls"}'), stop(StopReason.MAX_TOKENS)]);
    expect(r.message.content[0]!.block.value).toMatchObject({ input: { cmd: "ls" } });
    expect(r.warnings).toEqual(['tool call "a" never received tool_call_done']);
  });

  it("tool-call fragments for an unknown or finished call are protocol violations", () => {
    expect(violation([delta("zz", "{}")]).rule).toBe(StreamRule.toolCallKnown);
    expect(violation([start("a", "x"), done("a"), delta("a", "{}")]).rule).toBe(StreamRule.toolCallOpen);
    expect(violation([start("a", "x"), start("a", "y")]).rule).toBe(StreamRule.toolCallIdUnique);
  });

  it("metadata is merged field by field, a later event superseding and an absent field meaning no news", () => {
    const r = accumulate([
      meta({ actualModel: "grok-4.3", serviceTier: "default", attrs: { region: "us" } }),
      text("hi"),
      meta({ serviceTier: "priority", systemFingerprint: "fp1", attrs: { shard: "7" } }),
      meta({ rateLimits: [] }),
    ]);
    expect(r.metadata).toMatchObject({
      actualModel: "grok-4.3",
      serviceTier: "priority",
      systemFingerprint: "fp1",
      attrs: { region: "us", shard: "7" },
    });
  });

  it("metadata rate limits replace earlier ones only when reported", () => {
    const first = mergeMetadata(
      undefined,
      create(StreamMetadataSchema, { rateLimits: [{ kind: 1, remaining: 5n }] }),
    );
    const merged = mergeMetadata(first, create(StreamMetadataSchema, { actualModel: "m" }));
    expect(merged.rateLimits).toHaveLength(1);
    expect(merged.rateLimits[0]!.remaining).toBe(5n);
    expect(merged.rateLimits[0]!.limit).toBeUndefined();
    const replaced = mergeMetadata(
      merged,
      create(StreamMetadataSchema, { rateLimits: [{ kind: 2, usedPercent: 50 }] }),
    );
    expect(replaced.rateLimits.map((r) => [r.kind, r.remaining, r.usedPercent])).toEqual([
      [2, undefined, 50],
    ]);
  });

  it("neither metadata nor safety_notice closes an open text or thinking block", () => {
    const r = accumulate([
      think("a"),
      meta({ actualModel: "m" }),
      think("b"),
      text("c"),
      notice(SafetyKind.BUFFERING),
      text("d"),
      meta({ serviceTier: "x" }),
      text("e"),
    ]);
    expect(r.message.content.map((b) => (b.block.value as { text: string }).text)).toEqual(["ab", "cde"]);
    expect(r.safetyNotices).toHaveLength(1);
  });

  it("safety notices of an unknown kind are ignored, never failing the turn", () => {
    const r = accumulate([
      text("a"),
      notice(99),
      notice(SafetyKind.UNSPECIFIED),
      notice(SafetyKind.MODERATION),
      text("b"),
    ]);
    expect(r.safetyNotices.map((n) => n.kind)).toEqual([SafetyKind.MODERATION]);
    expect(r.message.content).toHaveLength(1);
  });

  it("matched_stop_sequence is set iff the stop reason is stop_sequence", () => {
    expect(
      accumulate([text("42"), stop(StopReason.STOP_SEQUENCE, "</answer>")]).stop?.matchedStopSequence,
    ).toBe("</answer>");
    expect(violation([stop(StopReason.STOP_SEQUENCE)]).rule).toBe(StreamRule.matchedStopSequenceIff);
    expect(violation([stop(StopReason.END_TURN, "</answer>")]).rule).toBe(StreamRule.matchedStopSequenceIff);
  });

  it("a stop needs a reason and comes once", () => {
    expect(violation([stop(StopReason.UNSPECIFIED)]).rule).toBe(StreamRule.stopReasonSet);
    expect(violation([stop(StopReason.END_TURN), stop(StopReason.END_TURN)]).rule).toBe(
      StreamRule.singleStop,
    );
  });

  it("no content may follow the stop or an error", () => {
    expect(violation([stop(StopReason.END_TURN), text("late")]).rule).toBe(StreamRule.contentAfterTerminal);
    const err = ev({
      case: "error",
      value: { category: ModelErrorCategory.OVERLOADED, message: "busy", retryable: true },
    });
    expect(violation([err, text("late")]).rule).toBe(StreamRule.contentAfterTerminal);
  });

  it("usage and metadata may follow the stop", () => {
    const r = accumulate([text("a"), stop(StopReason.END_TURN), usage(10n, 2n), meta({ actualModel: "m" })]);
    expect(r.usage).toHaveLength(1);
    expect(r.metadata?.actualModel).toBe("m");
  });

  it("an in-band error is classified", () => {
    const r = accumulate([
      text("partial"),
      ev({
        case: "error",
        value: {
          category: ModelErrorCategory.RATE_LIMITED,
          message: "slow down",
          retryable: true,
          retryAfterSeconds: 3,
        },
      }),
    ]);
    expect(r.error?.category).toBe("rate_limited");
    expect(r.error?.retryAfterSeconds).toBe(3);
    expect(r.complete).toBe(true);
    expect(r.message.content).toHaveLength(1);
  });

  it("an in-band process_crashed from the plugin is classified as a protocol violation", () => {
    const r = accumulate([
      ev({ case: "error", value: { category: ModelErrorCategory.PROCESS_CRASHED, message: "x" } }),
    ]);
    expect(r.error?.category).toBe("unknown");
    expect(r.error?.message).toContain("protocol violation");
  });

  it("a failure before any event may be reported as just an error", () => {
    const r = accumulate([
      ev({ case: "error", value: { category: ModelErrorCategory.AUTH_ERROR, message: "bad key" } }),
    ]);
    expect(r.error?.category).toBe("auth_error");
    expect(r.message.content).toEqual([]);
  });

  it("stream_start's vendor request id is kept", () => {
    const r = accumulate([ev({ case: "streamStart", value: { providerRequestId: "req_011" } }), text("x")]);
    expect(r.providerRequestId).toBe("req_011");
    expect(accumulate([text("x")]).providerRequestId).toBeUndefined();
  });

  it("the producing model and provider are recorded on the assistant message", () => {
    const r = accumulate([text("x")], model({ id: "claude-opus-5" }));
    expect(r.message.producedByModelId).toBe("claude-opus-5");
    expect(r.message.producedByProvider).toBe("anthropic");
  });

  it("message ids are kernel-assigned ULIDs, assigned once", () => {
    const before = counter;
    const r = accumulate([text("x")]);
    expect(counter - before).toBe(1);
    expect(r.message.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(r.message.id)).toBe(1_767_225_600_000);
  });

  it("usage events are collected with a per-event cost at receipt time", () => {
    const times = [at("2026-08-31T23:00:00Z"), at("2026-09-01T01:00:00Z")];
    const spec = plainModel({
      pricing: {
        currency: "USD",
        tiers: [
          { inputPerMtok: 1, outputPerMtok: 1, effectiveUntil: at("2026-09-01T00:00:00Z") },
          { inputPerMtok: 3, outputPerMtok: 15, effectiveFrom: at("2026-09-01T00:00:00Z") },
        ],
      },
    });
    const acc = new StreamAccumulator({
      provider: "p",
      model: spec,
      clock: () => times.shift()!,
      newMessageId: () => "id",
    });
    acc.push(usage(412n, 28n));
    acc.push(usage(412n, 28n));
    const r = acc.finish();
    expect(r.usage.map((u) => [u.pricingTierIndex, u.costUsd])).toEqual([
      [0, 0.00044],
      [1, 0.001656],
    ]);
    expect(r.costUsd).toBe(0.002096);
  });

  it("thinking from a model without thinking support is kept verbatim with a warning", () => {
    const r = accumulate([think("hmm")], plainModel());
    expect(r.message.content).toHaveLength(1);
    expect(r.warnings[0]).toContain("no thinking support");
  });

  it("a stream torn down without stop or error is marked incomplete", () => {
    expect(accumulate([text("a")]).complete).toBe(false);
  });
});

// ---- property: interleaving metadata / safety_notice never changes content ----

const contentEvent = fc.oneof(
  fc.string({ maxLength: 4 }).map((t) => text(t)),
  fc.string({ maxLength: 4 }).map((t) => think(t)),
  fc.array(fc.nat({ max: 255 }), { maxLength: 3 }).map((b) => sig(b)),
  fc
    .array(fc.nat({ max: 255 }), { maxLength: 3 })
    .map((b) => ev({ case: "redactedThinking", value: { data: new Uint8Array(b) } })),
);
const noise = fc.oneof(
  fc
    .constantFrom(SafetyKind.BUFFERING, SafetyKind.MODERATION, SafetyKind.VERIFICATION_REQUIRED, 42)
    .map((k) => notice(k)),
  fc.record({ actualModel: fc.string({ maxLength: 3 }) }).map((m) => meta(m)),
  fc.record({ serviceTier: fc.string({ maxLength: 3 }) }).map((m) => meta(m)),
);

describe("accumulator properties", () => {
  it("any interleaving of metadata / safety_notice events into a stream yields the same message content", () => {
    fc.assert(
      fc.property(
        fc.array(contentEvent, { maxLength: 12 }),
        fc.array(fc.tuple(fc.nat(), noise), { maxLength: 10 }),
        (content, inserts) => {
          const mixed = [...content];
          for (const [pos, e] of inserts) mixed.splice(pos % (mixed.length + 1), 0, e);
          const plain = accumulate(content).message.content;
          const noisy = accumulate(mixed).message.content;
          expect(noisy.length).toBe(plain.length);
          for (const [i, b] of noisy.entries()) expect(equals(ContentBlockSchema, b, plain[i]!)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("text blocks the vendor delimits (TextDelta.starts_block)", () => {
  const block = (t: string, state?: string) =>
    ev({
      case: "textDelta",
      value: {
        text: t,
        startsBlock: true,
        ...(state ? { vendorState: new TextEncoder().encode(state) } : {}),
      },
    });
  const texts = (events: StreamEvent[]) =>
    accumulate(events).message.content.flatMap((b) =>
      b.block.case === "text"
        ? [
            [
              b.block.value.text,
              b.block.value.vendorState && new TextDecoder().decode(b.block.value.vendorState),
            ],
          ]
        : [],
    );

  it("a block start closes the open text block even after text, and keeps its vendor state", () => {
    expect(
      texts([
        block("", '{"phase":"commentary"}'),
        text("Got it"),
        block("", '{"phase":"final_answer"}'),
        text("Here are"),
        text(" the files"),
        stop(StopReason.END_TURN),
      ]),
    ).toEqual([
      ["Got it", '{"phase":"commentary"}'],
      ["Here are the files", '{"phase":"final_answer"}'],
    ]);
  });

  it("without block starts consecutive text still forms one block; an unused start leaves nothing", () => {
    expect(texts([text("a"), text("b"), stop(StopReason.END_TURN)])).toEqual([["ab", undefined]]);
    expect(
      texts([block("", "s1"), start("c1", "ls"), done("c1"), block("x"), stop(StopReason.TOOL_USE)]),
    ).toEqual([["x", undefined]]);
    // metadata and usage between a start and its text do not lose the start.
    expect(
      texts([
        text("a"),
        block("", "s2"),
        meta({ serviceTier: "default" }),
        text("b"),
        stop(StopReason.END_TURN),
      ]),
    ).toEqual([
      ["a", undefined],
      ["b", "s2"],
    ]);
  });
});
