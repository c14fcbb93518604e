// The xAI provider as a real plugin process against the loopback xAI fake (Chat
// Completions dialect, validate: true), over the runtime host.
import { create, fromJson } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { recordUsage, validateCapabilities } from "@pluggableharness/kernel/domain";
import {
  accumulate,
  type Client,
  cases,
  collect,
  errorOf,
  type Launched,
  launch,
  only,
  type RequestInit,
  text,
  textOf,
  toolResult,
  utf8,
} from "@pluggableharness/model-provider-testing";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import {
  type ModelSpec,
  RateLimitKind,
  StopReason,
  ThinkingDisable,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CANARY = "xai-CANARY-e2c4a6b8d0f1";
const MAIN = new URL("../src/main.ts", import.meta.url);
const MODEL = "grok-4.3";

let fake: FakeVendor;
let plugin: Launched;
let client: Client;
let specs: Map<string, ModelSpec>;

const config = (extra: Record<string, unknown> = {}) => ({
  api_key: CANARY,
  base_url: `${fake.url}/v1`,
  ...extra,
});

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "xai", validate: true, apiKey: CANARY });
  plugin = await launch("xai", MAIN);
  client = plugin.client;
  expect((await client.configure({ config: config() })).result?.diagnostics).toEqual([]);
  specs = new Map((await client.getCapabilities({})).capabilities!.models.map((m) => [m.id, m]));
});

afterAll(async () => {
  await plugin?.host.shutdown();
  await fake?.close();
});

const base = (init: Partial<RequestInit> = {}): RequestInit =>
  ({
    modelId: MODEL,
    messages: [{ role: Role.USER, id: "m0", content: [text("Hello")] }],
    callContext: { sessionId: "01SESSIONXAI", turnId: "t1", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;
const complete = (init: Partial<RequestInit> = {}, signal?: AbortSignal) =>
  collect(client, base(init), signal);
const lastRequest = () => fake.requests.at(-1)!;
const lastBody = () => lastRequest().json as Record<string, unknown>;
const messagesOf = () => lastBody().messages as Array<Record<string, unknown>>;

function assistant(events: Parameters<typeof accumulate>[0], provider = "xai", modelId = MODEL): Message {
  const m = accumulate(events, specs.get(MODEL)!, provider).message;
  return create(MessageSchema, { ...m, producedByProvider: provider, producedByModelId: modelId });
}

describe("capabilities and configuration", () => {
  it("declares a catalog the kernel accepts, with per-model reasoning positions", async () => {
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(() => validateCapabilities("xai", caps)).not.toThrow();
    expect([...specs.keys()]).toEqual([
      "grok-4.3",
      "grok-4.20-0309-reasoning",
      "grok-4.20-0309-non-reasoning",
    ]);
    const g43 = specs.get("grok-4.3")!;
    expect(g43.thinking?.effort).toEqual(
      expect.objectContaining({ levels: ["none", "low", "medium", "high"], default: "high" }),
    );
    expect(g43.thinking?.disable).toBe(ThinkingDisable.ALWAYS);
    const g420 = specs.get("grok-4.20-0309-reasoning")!;
    expect(g420.thinking?.effort).toBeUndefined();
    expect(g420.thinking?.disable).toBe(ThinkingDisable.NEVER);
    expect(g420.contextWindow).toBe(2_000_000n);
    expect(specs.get("grok-4.20-0309-non-reasoning")!.thinking?.supported).toBe(false);
    expect(g43.caching).toMatchObject({ supported: true, implicitAutomatic: true, explicitMarkers: false });
    expect(g43.supportsDocuments).toBe(false);
  });

  it("rejects a missing key and a bad base URL without echoing a secret", async () => {
    const missing = await client.configure({ config: { base_url: fake.url } });
    expect(
      missing.result!.diagnostics.some(
        (d) => d.severity === DiagnosticSeverity.ERROR && d.attributePath[0] === "api_key",
      ),
    ).toBe(true);
    const bad = await client.configure({
      config: { api_key: CANARY, base_url: `https://u:${CANARY}@x.ai/v1` },
    });
    expect(bad.result!.diagnostics.some((d) => d.attributePath[0] === "base_url")).toBe(true);
    expect(JSON.stringify(bad.result)).not.toContain(CANARY);
    expect((await client.configure({ config: config() })).result!.diagnostics).toEqual([]);
  });
});

describe("streaming", () => {
  it("streams reasoning_content as thinking, text, exact usage with vendor cost ticks, and stop", async () => {
    fake.push(
      scenarios.thinking({
        thinking: "First, said hello",
        text: "Hello",
        usage: {
          inputTokens: 1,
          cacheReadTokens: 11,
          outputTokens: 1,
          reasoningTokens: 290,
          costInUsdTicks: 1466250,
        },
        rateLimits: {
          requests: { limit: 500, remaining: 499, resetSeconds: 1 },
          tokens: { limit: 500000, remaining: 499000, resetSeconds: 0.5 },
        },
      }),
    );
    const { events, error } = await complete({ params: { thinkingEffort: "low" } });
    expect(error).toBeUndefined();
    const kinds = cases(events);
    expect(kinds.slice(0, 3)).toEqual(["streamStart", "metadata", "metadata"]);
    expect(kinds.indexOf("thinkingDelta")).toBeLessThan(kinds.indexOf("textDelta"));
    expect(kinds.slice(-2)).toEqual(["usage", "stop"]);
    expect(only(events, "streamStart")[0]!.providerRequestId).toMatch(/^[0-9a-f-]{36}$/);
    const meta = only(events, "metadata");
    expect(meta[0]!.rateLimits.map((r) => [r.kind, r.limit, r.remaining])).toEqual([
      [RateLimitKind.REQUESTS, 500n, 499n],
      [RateLimitKind.TOKENS, 500000n, 499000n],
    ]);
    expect(meta[1]).toMatchObject({ actualModel: MODEL, systemFingerprint: "fp_2a885414fb" });
    expect(
      only(events, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).toBe("First, said hello");
    expect(textOf(events)).toBe("Hello");

    const usage = only(events, "usage")[0]!;
    expect([usage.inputTokens, usage.cacheReadTokens, usage.outputTokens, usage.reasoningTokens]).toEqual([
      1n,
      11n,
      1n,
      290n,
    ]);
    expect(usage.reasoningAlreadyCounted).toBeUndefined();
    // total_tokens (303) is exactly the sum of the parts, so it is not repeated.
    expect(usage.vendorTotalTokens).toBeUndefined();
    expect(usage.vendorCost).toEqual(
      expect.objectContaining({ amount: "1466250", unit: "xai_ticks_1e10", currency: "USD" }),
    );
    // The kernel's cost at receipt: grok-4.3 at $1.25 in, $2.50 out, $0.20 cached; reasoning at the output rate.
    const record = recordUsage(
      usage,
      specs.get(MODEL)!.pricing!,
      timestampFromMs(Date.parse("2026-09-01T00:00:00Z")),
    );
    expect(record.costUsd).toBeCloseTo((1 * 1.25 + 1 * 2.5 + 11 * 0.2 + 290 * 2.5) / 1e6, 15);
    expect(record.costUsd).toBe(0.00073095);

    const sent = lastRequest();
    expect(sent.json).toMatchObject({
      model: MODEL,
      stream: true,
      reasoning_effort: "low",
      messages: [{ role: "user", content: "Hello" }],
    });
    expect(sent.headers["x-grok-conv-id"]).toBe("01SESSIONXAI");
    expect(sent.headers["authorization"]).toBe(`Bearer ${CANARY}`);
  });

  it("round-trips whole tool calls; its own reasoning is not sent back", async () => {
    const inputSchema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "location", schema: { type: "SCHEMA_TYPE_STRING" } }],
    });
    const tools = [{ name: "weather", description: "Weather", inputSchema }];
    fake.push({
      kind: "turn",
      blocks: [
        { type: "thinking", text: "Need the weather." },
        { type: "tool_call", name: "weather", args: { location: "San Francisco" }, id: "call_55117580" },
      ],
    });
    const first = await complete({ tools, params: { toolChoice: { mode: ToolChoiceMode.ANY } } });
    expect(lastBody().tool_choice).toBe("required");
    expect(only(first.events, "toolCallStart")).toEqual([
      expect.objectContaining({ id: "call_55117580", name: "weather" }),
    ]);
    expect(only(first.events, "toolCallDelta").map((d) => d.argumentsFragment)).toEqual([
      '{"location":"San Francisco"}',
    ]);
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    const reply = assistant(first.events);
    expect(reply.content.map((b) => b.block.case)).toEqual(["thinking", "toolUse"]);

    fake.push(scenarios.text("It is sunny."));
    const second = await complete({
      tools,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Weather?")] },
        reply,
        { role: Role.USER, id: "m2", content: [toolResult("call_55117580", "sunny, 20C")] },
      ],
    });
    expect(errorOf(second.events)).toBeUndefined();
    expect(messagesOf()).toEqual([
      { role: "user", content: "Weather?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_55117580",
            type: "function",
            function: { name: "weather", arguments: '{"location":"San Francisco"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_55117580", content: "sunny, 20C" },
    ]);
  });

  it("streams parallel tool calls with their ids in order", async () => {
    fake.push(scenarios.parallelToolCalls());
    const { events } = await complete();
    const starts = only(events, "toolCallStart");
    expect(starts).toHaveLength(3);
    expect(only(events, "toolCallDone").map((d) => d.id)).toEqual(starts.map((s) => s.id));
  });

  it("accepts a history holding OpenAI reasoning items and Anthropic thinking, sending neither", async () => {
    const openaiItem = JSON.stringify({
      id: "rs_1",
      type: "reasoning",
      summary: [],
      encrypted_content: "gAAAA-openai",
    });
    fake.push(scenarios.text("Fine."));
    const { events } = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Q1")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "openai",
          producedByModelId: "gpt-5.6-sol",
          content: [{ block: { case: "redactedThinking", value: { data: utf8(openaiItem) } } }, text("A1")],
        },
        { role: Role.USER, id: "m2", content: [text("Q2")] },
        {
          role: Role.ASSISTANT,
          id: "m3",
          producedByProvider: "anthropic",
          content: [
            { block: { case: "thinking", value: { text: "hmm", signature: utf8("anthropic-sig") } } },
            text("A2"),
          ],
        },
        { role: Role.USER, id: "m4", content: [text("Q3")] },
      ],
    });
    expect(errorOf(events)).toBeUndefined();
    expect(lastRequest().rejected).toBeFalsy();
    expect(messagesOf()).toEqual([
      { role: "user", content: "Q1" },
      { role: "assistant", content: "A1" },
      { role: "user", content: "Q2" },
      { role: "assistant", content: "A2" },
      { role: "user", content: "Q3" },
    ]);
  });

  it("enforces stop sequences itself, never sending `stop` to a reasoning model", async () => {
    fake.push({ kind: "text", text: "one two END three", deltas: ["one tw", "o E", "ND th", "ree"] });
    const { events } = await complete({ params: { stopSequences: ["END"] } });
    expect(textOf(events)).toBe("one two ");
    expect(only(events, "stop")[0]).toMatchObject({
      reason: StopReason.STOP_SEQUENCE,
      matchedStopSequence: "END",
    });
    expect(lastBody().stop).toBeUndefined();
  });

  it("sends images inline and rejects documents, which xAI chat cannot take", async () => {
    // The validating fake checks that image/png bytes are a PNG (the signature).
    const PNG_BYTES = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    fake.push(scenarios.text("A cat."));
    const png = {
      block: {
        case: "image" as const,
        value: { mediaType: "image/png", source: { case: "data" as const, value: PNG_BYTES } },
      },
    };
    await complete({ messages: [{ role: Role.USER, id: "m0", content: [text("What is this?"), png] }] });
    expect(messagesOf()[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        {
          type: "image_url",
          image_url: { url: `data:image/png;base64,${Buffer.from(PNG_BYTES).toString("base64")}` },
        },
      ],
    });
    const before = fake.requests.length;
    const pdf = {
      block: { case: "document" as const, value: { mediaType: "application/pdf", data: utf8("%PDF") } },
    };
    const { events } = await complete({ messages: [{ role: Role.USER, id: "m0", content: [pdf] }] });
    expect(errorOf(events)).toMatchObject({ categoryName: "INVALID_REQUEST" });
    expect(fake.requests.length).toBe(before);
  });
});

describe("errors", () => {
  const failWith = async (entry: Parameters<FakeVendor["push"]>[0]) => {
    fake.push(entry);
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    return { events, err: errorOf(events)! };
  };

  it("classifies a 429 with retry-after", async () => {
    const { err } = await failWith(scenarios.rateLimited(3));
    expect(err).toMatchObject({
      categoryName: "RATE_LIMITED",
      retryable: true,
      retryAfterSeconds: 3,
      httpStatus: 429,
    });
  });

  it.each([
    [500, "OVERLOADED", true],
    [401, "AUTH_ERROR", false],
    [400, "INVALID_REQUEST", false],
  ])("classifies HTTP %i as %s", async (status, category, retryable) => {
    const { err } = await failWith(scenarios.serverError(status));
    expect(err).toMatchObject({ categoryName: category, retryable });
  });

  it("recognises xAI's prompt-length message as context_length_exceeded", async () => {
    const { err } = await failWith({
      kind: "error",
      status: 400,
      message: "This model's maximum prompt length is 1000000 but the request contains 1200000 tokens.",
    });
    expect(err.categoryName).toBe("CONTEXT_LENGTH_EXCEEDED");
  });

  it("reports mid-stream errors, dropped connections and malformed chunks", async () => {
    const mid = await failWith(scenarios.midStreamError({ afterFrames: 3 }));
    expect(mid.err).toMatchObject({ categoryName: "OVERLOADED", retryable: true, httpStatus: 200 });
    expect(mid.events.at(-1)!.event.case).toBe("error");
    const dropped = await failWith(scenarios.droppedConnection({ afterFrames: 2 }));
    expect(dropped.err).toMatchObject({ categoryName: "OVERLOADED", vendorCode: "transport_error" });
    const malformed = await failWith(scenarios.malformedFrame({ afterFrames: 2 }));
    expect(malformed.err).toMatchObject({
      categoryName: "UNKNOWN",
      retryable: false,
      vendorCode: "malformed_frame",
    });
  });

  it("keeps the key out of errors and logs", async () => {
    const { events, err } = await failWith({
      kind: "error",
      status: 401,
      message: `Incorrect API key provided: ${CANARY}`,
    });
    expect(err.categoryName).toBe("AUTH_ERROR");
    expect(JSON.stringify(events, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(CANARY);
    expect(plugin.logs.some((l) => JSON.stringify(l).includes(CANARY))).toBe(false);
  });

  it("has no token counter (UNIMPLEMENTED, so the kernel uses its fallback)", async () => {
    await expect(client.countTokens({ text: "x", modelId: MODEL })).rejects.toMatchObject({ code: 12 });
  });
});
