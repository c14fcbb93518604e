// Unit tests of the OpenAI-family pieces: error bodies and their classification, exact decimal
// text, chat usage, and the chat stream parser's dialects.
import { create } from "@bufbuild/protobuf";
import {
  OPENAI_TOOL_NAMES,
  StopSequenceMatcher,
  type StreamEventInit,
  toolNameMap,
  type WireLog,
  WireNotices,
} from "@pluggableharness/model-kit";
import { MessageSchema, Role } from "@pluggableharness/protocol/content";
import { StopReason, StreamCompletionRequestSchema } from "@pluggableharness/protocol/model";
import { describe, expect, it } from "vitest";
import {
  buildChatRequest,
  chatUsage,
  classifyHttpError,
  classifyStreamError,
  decimalText,
  errorInfoOf,
  parseChatStream,
  parseErrorBody,
  plainDecimal,
  retryHintFromMessage,
} from "../src/index.ts";

describe("error bodies", () => {
  it("reads every shape the OpenAI family sends", () => {
    expect(parseErrorBody('{"error":{"message":"m","type":"t","param":null,"code":"c"}}')).toEqual({
      code: "c",
      type: "t",
      message: "m",
      param: undefined,
    });
    expect(parseErrorBody('{"error":"model not found"}')).toEqual({ message: "model not found" });
    expect(
      parseErrorBody(
        '{"object":"error","message":"slow down","type":"rate_limited","param":null,"code":"1300"}',
      ),
    ).toMatchObject({
      code: "1300",
      type: "rate_limited",
      message: "slow down",
    });
    expect(parseErrorBody('{"detail":"Not Found"}')).toEqual({ message: "Not Found" });
    expect(parseErrorBody("<html>Bad Gateway</html>")).toEqual({ message: "<html>Bad Gateway</html>" });
    expect(parseErrorBody("")).toEqual({});
  });

  it("parses error bodies through a schema: unknown shapes keep their text, wrong types are absent", () => {
    // A detail object (FastAPI) or an error object with none of the known fields: what the
    // vendor said becomes the message instead of being dropped.
    expect(errorInfoOf({ detail: { msg: "field required", loc: ["body", "model"] } }).message).toContain(
      "field required",
    );
    expect(errorInfoOf({ error: { status: "UNAVAILABLE", reason: "backend down" } }).message).toContain(
      "backend down",
    );
    expect(errorInfoOf([{ error: { message: "listed" } }]).message).toContain("listed");
    // A numeric code is kept as text; a field of another type is absent, never "[object Object]".
    expect(errorInfoOf({ code: 429, message: "slow down", type: { nested: true } })).toEqual({
      code: "429",
      message: "slow down",
      type: undefined,
      param: undefined,
    });
    expect(errorInfoOf(null)).toEqual({});
    expect(errorInfoOf({})).toEqual({});
  });

  it("finds retry hints in messages", () => {
    expect(retryHintFromMessage("Please try again in 2s.")).toBe(2);
    expect(retryHintFromMessage("Please try again in 120ms.")).toBeCloseTo(0.12);
    expect(retryHintFromMessage("Please try again in 1m30s.")).toBe(90);
    expect(retryHintFromMessage("Rate limit reached.")).toBeUndefined();
  });

  it("classifies statuses with vendor refinements", () => {
    const h = new Headers();
    const quota = classifyHttpError(
      429,
      h,
      '{"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"q"}}',
    );
    expect([quota.category, quota.retryable, quota.vendorCode]).toEqual([
      "auth_error",
      false,
      "insufficient_quota",
    ]);
    const limited = classifyHttpError(
      429,
      h,
      '{"error":{"code":"rate_limit_exceeded","message":"try again in 3s"}}',
    );
    expect([limited.category, limited.retryable, limited.retryAfterSeconds]).toEqual([
      "rate_limited",
      true,
      3,
    ]);
    const withHeader = classifyHttpError(
      429,
      new Headers({ "retry-after": "9" }),
      '{"error":{"message":"try again in 3s"}}',
    );
    expect(withHeader.retryAfterSeconds).toBe(9);
    expect(
      classifyHttpError(400, h, '{"error":{"code":"context_length_exceeded","message":"x"}}').category,
    ).toBe("context_length_exceeded");
    expect(classifyHttpError(400, h, '{"error":"prompt is too long for the context window"}').category).toBe(
      "context_length_exceeded",
    );
    expect(
      classifyHttpError(400, h, '{"error":{"code":"content_policy_violation","message":"x"}}').category,
    ).toBe("content_filtered");
    expect(classifyHttpError(502, h, "Bad Gateway").category).toBe("overloaded");
  });

  it("classifies in-band errors by code, keeping unknown ones raw", () => {
    expect(classifyStreamError({ type: "server_error", message: "boom" }).category).toBe("overloaded");
    expect(classifyStreamError({ code: "rate_limit_exceeded", message: "try again in 1s" })).toMatchObject({
      category: "rate_limited",
      retryAfterSeconds: 1,
    });
    expect(classifyStreamError({ code: "insufficient_quota" }).retryable).toBe(false);
    const odd = classifyStreamError({ code: "weird_thing", message: "strange" }, '{"error":{}}');
    expect([odd.category, odd.retryable, odd.vendorCode, odd.httpStatus]).toEqual([
      "unknown",
      false,
      "weird_thing",
      200,
    ]);
  });
});

describe("exact amounts", () => {
  it("copies a JSON number's text without floating point", () => {
    expect(decimalText('{"usage":{"cost_in_usd_ticks":1466250}}', "cost_in_usd_ticks")).toBe("1466250");
    expect(decimalText('{"cost_in_usd_ticks": 12345678901234567890}', "cost_in_usd_ticks")).toBe(
      "12345678901234567890",
    );
    expect(decimalText('{"x":1}', "cost_in_usd_ticks")).toBeUndefined();
    expect(plainDecimal("1.5e3")).toBe("1500");
    expect(plainDecimal("12.50")).toBe("12.5");
    expect(plainDecimal("25e-3")).toBe("0.025");
    expect(plainDecimal("-0.0")).toBe("0");
  });

  it("reads chat usage through a schema: a field of the wrong type is absent, nothing throws", () => {
    // A string cached_tokens neither turns the cache split on (a claimed read of 0) nor counts.
    const u = chatUsage({
      prompt_tokens: 100,
      completion_tokens: "7",
      prompt_tokens_details: { cached_tokens: "60" },
    });
    expect(u).toMatchObject({ input: 100, output: 0 });
    expect(u.cacheRead).toBeUndefined();
    expect(u.components).toEqual([]);
    // Details that are not an object (a list) add no components named by index.
    expect(chatUsage({ prompt_tokens: 5, prompt_tokens_details: [3, 4] }).components).toEqual([]);
    // Not an object at all: zero usage, no TypeError.
    expect(chatUsage(null)).toMatchObject({ input: 0, output: 0, components: [] });
    // Unknown numeric detail fields are kept as components.
    expect(
      chatUsage({ prompt_tokens: 5, completion_tokens_details: { accepted_prediction_tokens: 2 } })
        .components,
    ).toEqual([{ name: "completion_tokens_details.accepted_prediction_tokens", value: 2 }]);
  });

  it("maps chat usage without overlapping counters", () => {
    const u = chatUsage({
      prompt_tokens: 100,
      completion_tokens: 40,
      total_tokens: 140,
      prompt_tokens_details: { cached_tokens: 60, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 30 },
    });
    expect(u).toMatchObject({ input: 40, output: 40, cacheRead: 60, vendorTotal: 140 });
    expect(u.reasoning).toBeUndefined();
    expect(u.components).toEqual([{ name: "completion_tokens_details.reasoning_tokens", value: 30 }]);
    expect(
      chatUsage({ prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 60 } }, { caching: false }),
    ).toMatchObject({
      input: 100,
      components: [{ name: "prompt_tokens_details.cached_tokens", value: 60 }],
    });
  });
});

function sse(...frames: string[]): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(frames.map((f) => `data: ${f}\n\n`).join(""));
  return new ReadableStream({
    start(c) {
      c.enqueue(bytes);
      c.close();
    },
  });
}

async function parse(body: ReadableStream<Uint8Array>, stop: string[] = [], log?: WireLog) {
  const out: StreamEventInit[] = [];
  for await (const e of parseChatStream(body, {
    names: toolNameMap(["get.weather"], OPENAI_TOOL_NAMES),
    stop: new StopSequenceMatcher(stop),
    rateLimits: [],
    usage: (u) => chatUsage(u),
    thinking: true,
    signal: new AbortController().signal,
    notices: new WireNotices("test", log),
  }))
    out.push(e);
  return out;
}
const kinds = (events: StreamEventInit[]) => events.map((e) => e.event?.case);

describe("chat stream dialects", () => {
  it("assembles index-keyed fragments and accepts object arguments", async () => {
    const events = await parse(
      sse(
        '{"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":"}}]}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"Oslo\\"}"}}]}}]}',
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"get_weather","arguments":{"city":"Rome"}}}]}}]}',
        '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}',
        "[DONE]",
      ),
    );
    expect(kinds(events)).toEqual([
      "metadata",
      "toolCallStart",
      "toolCallDelta",
      "toolCallDelta",
      "toolCallStart",
      "toolCallDelta",
      "toolCallDone",
      "toolCallDone",
      "stop",
    ]);
    expect(events[1]!.event).toMatchObject({ value: { id: "c1", name: "get.weather" } });
    expect(events[5]!.event).toMatchObject({ value: { argumentsFragment: '{"city":"Rome"}' } });
    // Calls were made, so a plain "stop" finish still means tool_use.
    expect(events.at(-1)!.event).toMatchObject({ value: { reason: StopReason.TOOL_USE } });
  });

  it("treats each index-less call as a new call and gives argument-less calls {}", async () => {
    const events = await parse(
      sse(
        '{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"id":"a","function":{"name":"x","arguments":""}},{"id":"b","function":{"name":"y","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}',
        "[DONE]",
      ),
    );
    const deltas = events.filter((e) => e.event?.case === "toolCallDelta").map((e) => e.event?.value);
    expect(deltas).toEqual([
      expect.objectContaining({ id: "b", argumentsFragment: "{}" }),
      expect.objectContaining({ id: "a", argumentsFragment: "{}" }),
    ]);
    expect(kinds(events).slice(-2)).toEqual(["usage", "stop"]);
  });

  it("ends a stream without [DONE] or a finish reason as a retryable transport failure", async () => {
    await expect(parse(sse('{"choices":[{"index":0,"delta":{"content":"hi"}}]}'))).rejects.toMatchObject({
      category: "overloaded",
      retryable: true,
    });
  });

  it("reports a content filter as a stop plus a moderation notice", async () => {
    const events = await parse(
      sse('{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}', "[DONE]"),
    );
    expect(kinds(events)).toEqual(["safetyNotice", "stop"]);
    expect(events[1]!.event).toMatchObject({ value: { reason: StopReason.CONTENT_FILTERED } });
  });
});

describe("chat request", () => {
  it("puts tool results first and moves their images into a following user message", () => {
    const req = create(StreamCompletionRequestSchema, {
      modelId: "m",
      assembledContext: [
        { provider: "p", label: "l", content: [{ block: { case: "text", value: { text: "sys" } } }] },
      ],
      messages: [
        create(MessageSchema, {
          role: Role.ASSISTANT,
          producedByProvider: "x",
          content: [{ block: { case: "toolUse", value: { id: "c1", name: "shot", input: {} } } }],
        }),
        create(MessageSchema, {
          role: Role.USER,
          content: [
            { block: { case: "text", value: { text: "look" } } },
            {
              block: {
                case: "toolResult",
                value: {
                  toolUseId: "c1",
                  content: [
                    { block: { case: "text", value: { text: "done" } } },
                    {
                      block: {
                        case: "image",
                        value: { mediaType: "image/png", source: { case: "url", value: "https://i/x.png" } },
                      },
                    },
                  ],
                },
              },
            },
          ],
        }),
      ],
    });
    const model = {
      id: "m",
      contextWindow: 1,
      maxOutputTokens: 1,
      toolUse: true,
      vision: true,
      documents: false,
      streaming: true,
      parallelToolCalls: false,
      caching: { explicitMarkers: false, implicitAutomatic: false },
      toolChoiceModes: [],
      pricing: { free: true, tiers: [] },
      sources: {},
    };
    const { body } = buildChatRequest(
      req,
      model,
      { name: "x", ownsModel: () => true },
      {
        maxTokensField: "max_tokens",
        streamUsage: false,
        passThrough: [],
      },
    );
    expect(body["messages"]).toEqual([
      { role: "system", content: "sys" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "shot", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "done" },
      {
        role: "user",
        content: [
          { type: "text", text: "Attachments of tool result c1:" },
          { type: "image_url", image_url: { url: "https://i/x.png" } },
          { type: "text", text: "look" },
        ],
      },
    ]);
    expect(body["stream_options"]).toBeUndefined();
  });
});

describe("typed chat chunks (issue 33)", () => {
  it("skips and logs once an unknown content part and a malformed chunk piece; the stream completes intact", async () => {
    const warnings: Array<{ message: string; attrs?: Record<string, unknown> }> = [];
    const log: WireLog = { warn: (message, attrs) => warnings.push({ message, attrs }) };
    const events = await parse(
      sse(
        '{"model":"m","choices":[{"index":0,"delta":{"content":"Hello "}}]}',
        // A part type no dialect here defines (twice), beside a text part that must survive.
        '{"choices":[{"index":0,"delta":{"content":[{"type":"reference","ids":[1]},{"type":"text","text":"big "}]}}]}',
        '{"choices":[{"index":0,"delta":{"content":[{"type":"reference","ids":[2]}]}}]}',
        // A known piece that breaks its schema: a tool call's name must be text.
        '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":7,"arguments":"{}"}}]}}]}',
        '{"choices":[{"index":0,"delta":{"content":"world"},"finish_reason":"stop"}]}',
        "[DONE]",
      ),
      [],
      log,
    );
    expect(kinds(events)).not.toContain("toolCallStart");
    const text = events.map((e) => (e.event?.case === "textDelta" ? e.event.value.text : "")).join("");
    expect(text).toBe("Hello big world");
    expect(events.at(-1)?.event).toMatchObject({ case: "stop", value: { reason: StopReason.END_TURN } });
    const of = (type: string) => warnings.filter((w) => w.attrs?.["type"] === type);
    expect(of("reference")).toHaveLength(1);
    expect(of("reference")[0]!.message).toContain("unknown type");
    expect(of("tool_call")).toHaveLength(1);
    expect(String(of("tool_call")[0]!.attrs?.["issues"])).toContain(
      "function.name: invalid_type (expected string)",
    );
    expect(warnings).toHaveLength(2);
  });
});
