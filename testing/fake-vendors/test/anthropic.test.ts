import { afterEach, describe, expect, it } from "vitest";
import * as scenarios from "../src/scenarios.ts";
import { type FakeVendor, startAnthropicFake } from "../src/server.ts";
import { jsonOf, NO_QUIRKS, post, postSse } from "./helpers.ts";

const REQUEST = {
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  stream: true,
  messages: [{ role: "user", content: "hi" }],
};
const HEADERS = { "x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01" };

let fake: FakeVendor;
afterEach(async () => {
  await fake?.close();
});

describe("Anthropic Messages stream", () => {
  it("renders text as the documented event sequence with exact frames", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [
        {
          kind: "text",
          text: "Hello!",
          deltas: ["Hello", "!"],
          id: "msg_fixed",
          usage: { inputTokens: 25, outputTokens: 15 },
        },
      ],
    });
    const { res, text, events } = await postSse(fake, "/v1/messages?beta=true", REQUEST, HEADERS);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("request-id")).toMatch(/^req_01[0-9A-Za-z]{22}$/);
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    // event: always equals data.type
    for (const e of events) expect((e.json as { type: string }).type).toBe(e.event);
    expect(text).toContain('event: ping\ndata: {"type": "ping"}\n\n');
    expect(text.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    expect(text).not.toContain("[DONE]");
    const [start, blockStart, , d1, d2, stop, delta] = jsonOf(events);
    expect(start).toEqual({
      type: "message_start",
      message: {
        id: "msg_fixed",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: {
          input_tokens: 25,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
          output_tokens: 1,
          service_tier: "standard",
        },
      },
    });
    expect(blockStart).toEqual({
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    expect(d1).toEqual({
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "Hello" },
    });
    expect(d2).toEqual({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "!" } });
    expect(stop).toEqual({ type: "content_block_stop", index: 0 });
    expect(delta).toEqual({
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null, stop_details: null },
      usage: {
        input_tokens: 25,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 15,
      },
    });
  });

  it("streams tool arguments as input_json_delta fragments starting with an empty one", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.toolCallFragments(
          { name: "get_weather", id: "toolu_1", args: { location: "San Francisco, CA" }, fragments: 7 },
          { text: "Okay:" },
        ),
      ],
    });
    const { events } = await postSse(fake, "/v1/messages", REQUEST, HEADERS);
    const payloads = jsonOf(events);
    const toolStart = payloads.find((p) => p.type === "content_block_start" && p.index === 1);
    expect(toolStart).toEqual({
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "toolu_1", name: "get_weather", input: {} },
    });
    const partials = payloads
      .filter((p) => p.type === "content_block_delta" && p.index === 1)
      .map((p) => (p.delta as { type: string; partial_json: string }).partial_json);
    expect(partials).toHaveLength(8);
    expect(partials[0]).toBe("");
    expect(JSON.parse(partials.join(""))).toEqual({ location: "San Francisco, CA" });
    const delta = payloads.find((p) => p.type === "message_delta") as { delta: { stop_reason: string } };
    expect(delta.delta.stop_reason).toBe("tool_use");
  });

  it("renders parallel tool calls as consecutive tool_use blocks", async () => {
    fake = await startAnthropicFake({ quirks: NO_QUIRKS, script: [scenarios.parallelToolCalls()] });
    const payloads = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events);
    const starts = payloads.filter((p) => p.type === "content_block_start");
    expect(starts.map((s) => [s.index as number, (s.content_block as { name: string }).name])).toEqual([
      [0, "read_file"],
      [1, "read_file"],
      [2, "list_dir"],
    ]);
    const ids = starts.map((s) => (s.content_block as { id: string }).id);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^toolu_01[0-9A-Za-z]{22}$/);
  });

  it("sends thinking deltas then one signature_delta before the block stops", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.thinking({ thinking: "abcdef", signature: "SIG==", text: "42", chunks: 2 })],
    });
    const payloads = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events);
    const block0 = payloads.filter((p) => p.index === 0);
    expect(block0).toEqual([
      {
        type: "content_block_start",
        index: 0,
        content_block: { type: "thinking", thinking: "", signature: "" },
      },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "abc" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "def" } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "SIG==" } },
      { type: "content_block_stop", index: 0 },
    ]);
    const usage = (payloads.find((p) => p.type === "message_delta") as { usage: Record<string, unknown> })
      .usage;
    // thinking counts as output and is itemised.
    expect(usage.output_tokens_details).toEqual({ thinking_tokens: 2 });
    expect(usage.output_tokens).toBe(2 + 2);
  });

  it("sends redacted_thinking whole in content_block_start with no deltas", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.redactedThinking({ data: "OPAQUE" })],
    });
    const payloads = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events);
    expect(payloads.filter((p) => p.index === 0)).toEqual([
      { type: "content_block_start", index: 0, content_block: { type: "redacted_thinking", data: "OPAQUE" } },
      { type: "content_block_stop", index: 0 },
    ]);
  });

  it("reports cache reads and writes in message_start and the cumulative message_delta", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.cacheHit({
          inputTokens: 3,
          cacheReadTokens: 2000,
          cacheWriteTokens: 100,
          usage: undefined,
        }),
      ],
    });
    const payloads = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events);
    const start = (payloads[0]!.message as { usage: Record<string, unknown> }).usage;
    expect(start).toMatchObject({
      input_tokens: 3,
      cache_read_input_tokens: 2000,
      cache_creation_input_tokens: 100,
      cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 0 },
    });
    const final = (payloads.find((p) => p.type === "message_delta") as { usage: Record<string, unknown> })
      .usage;
    expect(final).toMatchObject({
      input_tokens: 3,
      cache_read_input_tokens: 2000,
      cache_creation_input_tokens: 100,
    });
  });

  it("maps refusal and stop_sequence stop reasons", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.refusal({ category: "cyber", explanation: "no" }), scenarios.stopSequence("###")],
    });
    const refusal = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events).find(
      (p) => p.type === "message_delta",
    );
    expect(refusal!.delta).toEqual({
      stop_reason: "refusal",
      stop_sequence: null,
      stop_details: { type: "refusal", category: "cyber", explanation: "no" },
    });
    const stop = jsonOf((await postSse(fake, "/v1/messages", REQUEST, HEADERS)).events).find(
      (p) => p.type === "message_delta",
    );
    expect(stop!.delta).toEqual({ stop_reason: "stop_sequence", stop_sequence: "###", stop_details: null });
  });

  it("pads JSON like recent recordings when quirks are on, and stays parseable", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("padded text", { chunks: 5 })] });
    const { text, events } = await postSse(fake, "/v1/messages", REQUEST, HEADERS);
    expect(text).toMatch(/ +}\n\n/);
    expect(jsonOf(events)).toHaveLength(events.length);
  });

  it("reports an in-band error event after a 200 and ends the stream", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.midStreamError({ afterFrames: 3 })],
    });
    const { res, text, events } = await postSse(fake, "/v1/messages", REQUEST, HEADERS);
    expect(res.status).toBe(200);
    expect(events.map((e) => e.event)).toEqual(["message_start", "content_block_start", "ping", "error"]);
    expect(
      text.endsWith(
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n',
      ),
    ).toBe(true);
  });
});

describe("Anthropic Messages JSON and errors", () => {
  it("answers a non-streaming request with a Message object", async () => {
    fake = await startAnthropicFake({
      script: [
        {
          kind: "turn",
          id: "msg_x",
          blocks: [
            { type: "thinking", text: "hmm", signature: "S" },
            { type: "redacted_thinking", data: "R" },
            { type: "text", text: "Hi" },
            { type: "tool_call", name: "t", id: "toolu_x", args: { a: 1 } },
          ],
          usage: { inputTokens: 5, outputTokens: 7, reasoningTokens: 2 },
        },
      ],
    });
    const res = await post(fake, "/v1/messages", { ...REQUEST, stream: false }, HEADERS);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(await res.json()).toEqual({
      model: "claude-sonnet-4-5",
      id: "msg_x",
      type: "message",
      role: "assistant",
      content: [
        { type: "thinking", thinking: "hmm", signature: "S" },
        { type: "redacted_thinking", data: "R" },
        { type: "text", text: "Hi" },
        { type: "tool_use", id: "toolu_x", name: "t", input: { a: 1 } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      stop_details: null,
      usage: {
        input_tokens: 5,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: 9,
        service_tier: "standard",
      },
    });
  });

  it("answers 429 with retry-after, exhausted budgets and the rate_limit_error body", async () => {
    fake = await startAnthropicFake({ script: [scenarios.rateLimited(7)] });
    const res = await post(fake, "/v1/messages", REQUEST, HEADERS);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(res.headers.get("anthropic-ratelimit-tokens-remaining")).toBe("0");
    expect(res.headers.get("anthropic-ratelimit-requests-limit")).toBe("1000");
    expect(res.headers.get("anthropic-ratelimit-tokens-reset")).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const body = (await res.json()) as { type: string; error: { type: string }; request_id: string };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("rate_limit_error");
    expect(body.request_id).toBe(res.headers.get("request-id"));
  });

  it("answers 529 overloaded_error and honours x-should-retry", async () => {
    fake = await startAnthropicFake({ script: [scenarios.overloaded({ shouldRetry: false })] });
    const res = await post(fake, "/v1/messages", REQUEST, HEADERS);
    expect(res.status).toBe(529);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await res.json()).toMatchObject({
      type: "error",
      error: { type: "overloaded_error", message: "Overloaded" },
    });
  });

  it("maps 5xx statuses to api_error / timeout_error", async () => {
    fake = await startAnthropicFake({ script: [scenarios.serverError(500), scenarios.serverError(504)] });
    expect(
      ((await (await post(fake, "/v1/messages", REQUEST, HEADERS)).json()) as { error: { type: string } })
        .error.type,
    ).toBe("api_error");
    const r504 = await post(fake, "/v1/messages", REQUEST, HEADERS);
    expect(r504.status).toBe(504);
    expect(((await r504.json()) as { error: { type: string } }).error.type).toBe("timeout_error");
  });

  it("answers count_tokens without consuming the script", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("x")], countTokens: () => 42 });
    const res = await post(fake, "/v1/messages/count_tokens", { model: "m", messages: [] }, HEADERS);
    expect(await res.json()).toEqual({ input_tokens: 42 });
    expect(fake.remaining).toBe(1);
    expect(fake.otherRequests[0]!.endpoint).toBe("count_tokens");
  });
});
