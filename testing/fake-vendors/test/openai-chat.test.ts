import { afterEach, describe, expect, it } from "vitest";
import * as scenarios from "../src/scenarios.ts";
import {
  type FakeVendor,
  startOpenAIChatFake,
  startOpenAICompatibleFake,
  startXaiFake,
} from "../src/server.ts";
import { jsonOf, NO_QUIRKS, post, postSse } from "./helpers.ts";

const REQUEST = { model: "gpt-4.1-nano", stream: true, messages: [{ role: "user", content: "hi" }] };
const WITH_USAGE = { ...REQUEST, stream_options: { include_usage: true } };
const AUTH = { authorization: "Bearer sk-test" };

type Chunk = {
  choices: Array<{ delta: Record<string, unknown>; finish_reason?: string | null }>;
  usage?: unknown;
};

let fake: FakeVendor;
afterEach(async () => {
  await fake?.close();
});

describe("OpenAI Chat Completions stream", () => {
  it("renders text chunks, a finish chunk, the usage chunk and [DONE]", async () => {
    fake = await startOpenAIChatFake({
      quirks: NO_QUIRKS,
      script: [
        {
          kind: "text",
          text: "Hi there",
          deltas: ["Hi", " there"],
          id: "chatcmpl-1",
          usage: { inputTokens: 16, outputTokens: 2 },
        },
      ],
    });
    const { res, text, events } = await postSse(fake, "/v1/chat/completions", WITH_USAGE, AUTH);
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBe("1000");
    expect(events.every((e) => e.event === undefined)).toBe(true);
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const chunks = jsonOf(events) as Array<Chunk & Record<string, unknown>>;
    expect(chunks).toHaveLength(5);
    const base = {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      model: "gpt-4.1-nano",
      service_tier: "default",
      system_fingerprint: "fp_de604bd877",
    };
    expect(chunks[0]).toEqual({
      ...base,
      created: chunks[0]!.created,
      choices: [
        {
          index: 0,
          delta: { role: "assistant", content: "", refusal: null },
          logprobs: null,
          finish_reason: null,
        },
      ],
      usage: null,
    });
    expect(chunks[1]!.choices[0]!.delta).toEqual({ content: "Hi" });
    expect(chunks[2]!.choices[0]!.delta).toEqual({ content: " there" });
    expect(chunks[3]!.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }]);
    expect(chunks[4]).toMatchObject({ choices: [] });
    expect(chunks[4]!.usage).toEqual({
      prompt_tokens: 16,
      completion_tokens: 2,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    });
  });

  it("sends no usage chunk unless stream_options.include_usage is set", async () => {
    fake = await startOpenAIChatFake({ quirks: NO_QUIRKS, script: [scenarios.text("a")] });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", REQUEST, AUTH)).events) as Chunk[];
    expect(chunks.every((c) => c.choices.length === 1 && !("usage" in c))).toBe(true);
  });

  it("streams tool-call fragments keyed by index, id and name on the first only", async () => {
    fake = await startOpenAIChatFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.parallelToolCalls([
          { name: "a", id: "call_a", args: { value: "Sparkle Day" }, fragments: 5 },
          { name: "b", id: "call_b", args: {}, fragments: 1 },
        ]),
      ],
    });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", REQUEST, AUTH)).events) as Chunk[];
    const calls = chunks.flatMap(
      (c) => (c.choices[0]?.delta.tool_calls as Array<Record<string, unknown>>) ?? [],
    );
    // A turn that opens with tool calls carries the role on the first tool-call chunk.
    expect(Object.keys(chunks[0]!.choices[0]!.delta)).toEqual(["role", "content", "refusal", "tool_calls"]);
    expect(chunks[0]!.choices[0]!.delta).toMatchObject({ role: "assistant", content: null, refusal: null });
    expect(calls[0]).toEqual({
      index: 0,
      id: "call_a",
      type: "function",
      function: { name: "a", arguments: "" },
    });
    expect(calls.slice(1, 6).every((c) => Object.keys(c).join() === "index,function" && c.index === 0)).toBe(
      true,
    );
    const argsOf = (i: number) =>
      calls
        .filter((c) => c.index === i)
        .map((c) => (c.function as { arguments: string }).arguments)
        .join("");
    expect(JSON.parse(argsOf(0))).toEqual({ value: "Sparkle Day" });
    expect(JSON.parse(argsOf(1))).toEqual({});
    expect(calls.find((c) => c.index === 1 && c.id)).toMatchObject({ id: "call_b", function: { name: "b" } });
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("tool_calls");
  });

  it("streams a refusal in delta.refusal", async () => {
    fake = await startOpenAIChatFake({
      quirks: NO_QUIRKS,
      script: [scenarios.refusal({ explanation: "Can't." })],
    });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", REQUEST, AUTH)).events) as Chunk[];
    expect(chunks.map((c) => c.choices[0]?.delta.refusal).filter((r) => typeof r === "string")).toEqual([
      "Can't.",
    ]);
  });

  it("maps max_tokens to finish_reason length and counts reasoning inside completion_tokens", async () => {
    fake = await startOpenAIChatFake({
      quirks: NO_QUIRKS,
      script: [scenarios.maxTokens({ usage: { outputTokens: 5, reasoningTokens: 7 } })],
    });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", WITH_USAGE, AUTH)).events) as Chunk[];
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("length");
    expect(chunks.at(-1)!.usage).toMatchObject({
      completion_tokens: 12,
      completion_tokens_details: { reasoning_tokens: 7 },
    });
  });

  it("drops thinking, since OpenAI's chat API does not stream reasoning", async () => {
    fake = await startOpenAIChatFake({ quirks: NO_QUIRKS, script: [scenarios.thinking({ text: "ans" })] });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", REQUEST, AUTH)).events) as Chunk[];
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(content).toBe("ans");
  });

  it("reports a mid-stream error as a data frame without choices, then [DONE]", async () => {
    fake = await startOpenAIChatFake({
      quirks: NO_QUIRKS,
      script: [scenarios.midStreamError({ afterFrames: 2 })],
    });
    const { events } = await postSse(fake, "/v1/chat/completions", REQUEST, AUTH);
    expect(events).toHaveLength(4);
    expect(events[2]!.json).toMatchObject({ error: { type: "server_error", param: null, code: null } });
    expect(events[3]!.data).toBe("[DONE]");
  });

  it("answers a non-streaming request with a chat.completion", async () => {
    fake = await startOpenAIChatFake({
      script: [
        scenarios.toolCallFragments({ name: "f", args: { q: 1 }, id: "call_1" }, { text: "Let me check." }),
      ],
    });
    const body = (await (
      await post(fake, "/v1/chat/completions", { ...REQUEST, stream: false }, AUTH)
    ).json()) as Record<string, unknown>;
    expect(body).toMatchObject({ object: "chat.completion", model: "gpt-4.1-nano" });
    expect((body.choices as unknown[])[0]).toEqual({
      index: 0,
      message: {
        role: "assistant",
        content: "Let me check.",
        refusal: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"q":1}' } }],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    });
  });

  it("answers 500 and 503 with server_error bodies", async () => {
    fake = await startOpenAIChatFake({ script: [scenarios.serverError(500), scenarios.serverError(503)] });
    const r500 = await post(fake, "/v1/chat/completions", REQUEST, AUTH);
    expect(r500.status).toBe(500);
    expect(await r500.json()).toMatchObject({ error: { type: "server_error", code: null } });
    expect((await post(fake, "/v1/chat/completions", REQUEST, AUTH)).status).toBe(503);
  });
});

describe("xAI chat dialect", () => {
  it("streams reasoning_content with the role merged, whole tool calls, and cost ticks in a usage chunk", async () => {
    fake = await startXaiFake({
      quirks: NO_QUIRKS,
      script: [
        {
          kind: "turn",
          blocks: [
            { type: "thinking", text: "First, said", deltas: ["First", ",", " said"] },
            {
              type: "tool_call",
              name: "weather",
              id: "call_55117580",
              args: { location: "San Francisco" },
              fragments: 4,
            },
          ],
          usage: {
            inputTokens: 1,
            cacheReadTokens: 290,
            outputTokens: 26,
            reasoningTokens: 196,
            costInUsdTicks: 1330500,
          },
        },
      ],
    });
    const { res, events } = await postSse(
      fake,
      "/v1/chat/completions",
      { ...REQUEST, model: "grok-3-mini" },
      AUTH,
    );
    expect(res.headers.get("x-ratelimit-remaining-requests")).toBe("999");
    const chunks = jsonOf(events) as Array<Chunk & Record<string, unknown>>;
    expect(chunks[0]!.choices[0]!.delta).toEqual({ reasoning_content: "First", role: "assistant" });
    expect(chunks[1]!.choices[0]).toEqual({ index: 0, delta: { reasoning_content: "," } });
    expect(Object.keys(chunks[0]!)).toEqual([
      "id",
      "object",
      "created",
      "model",
      "choices",
      "system_fingerprint",
    ]);
    expect(chunks[3]!.choices[0]!.delta.tool_calls).toEqual([
      {
        id: "call_55117580",
        function: { name: "weather", arguments: '{"location":"San Francisco"}' },
        index: 0,
        type: "function",
      },
    ]);
    expect(chunks[4]!.choices[0]).toEqual({ index: 0, delta: {}, finish_reason: "tool_calls" });
    expect(chunks[5]!.usage).toEqual({
      prompt_tokens: 291,
      completion_tokens: 26,
      total_tokens: 513,
      prompt_tokens_details: { text_tokens: 291, audio_tokens: 0, image_tokens: 0, cached_tokens: 290 },
      completion_tokens_details: {
        reasoning_tokens: 196,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
      num_sources_used: 0,
      cost_in_usd_ticks: 1330500,
    });
    expect(events.at(-1)!.data).toBe("[DONE]");
  });
});

describe("OpenAI-compatible dialects", () => {
  it("mistral: whole tool calls without index/type, finishing with usage on the same chunk", async () => {
    fake = await startOpenAICompatibleFake("mistral", {
      quirks: NO_QUIRKS,
      script: [
        scenarios.toolCallFragments({
          name: "weather",
          args: { location: "San Francisco" },
          id: "gSIMJiOkT",
        }),
      ],
    });
    const { res, events } = await postSse(
      fake,
      "/v1/chat/completions",
      { ...REQUEST, model: "mistral-small-latest" },
      AUTH,
    );
    expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
    const chunks = jsonOf(events) as Chunk[];
    expect(chunks).toHaveLength(2);
    expect(chunks[0]!.choices[0]).toEqual({
      index: 0,
      delta: { role: "assistant", content: "" },
      logprobs: null,
      finish_reason: null,
    });
    expect(chunks[1]!.choices[0]).toEqual({
      index: 0,
      delta: {
        content: null,
        tool_calls: [
          { id: "gSIMJiOkT", function: { name: "weather", arguments: '{"location":"San Francisco"}' } },
        ],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    });
    // Default output tokens: one per delta or argument fragment (12 here).
    expect(chunks[1]!.usage).toEqual({ prompt_tokens: 10, total_tokens: 22, completion_tokens: 12 });
  });

  it("mistral: the error body is the flat object shape", async () => {
    fake = await startOpenAICompatibleFake("mistral", { script: [scenarios.rateLimited(1)] });
    const res = await post(fake, "/v1/chat/completions", REQUEST, AUTH);
    expect(await res.json()).toMatchObject({
      object: "error",
      type: "rate_limited",
      param: null,
      code: null,
    });
  });

  it("ollama: role on every delta, reasoning in delta.reasoning, fp_ollama, basic usage", async () => {
    fake = await startOpenAICompatibleFake("ollama", {
      quirks: NO_QUIRKS,
      script: [scenarios.thinking({ thinking: "t", text: "x", chunks: 1 })],
    });
    const chunks = jsonOf((await postSse(fake, "/v1/chat/completions", WITH_USAGE, AUTH)).events) as Array<
      Chunk & Record<string, unknown>
    >;
    for (const c of chunks.filter((c) => c.choices.length > 0))
      expect(c.choices[0]!.delta.role).toBe("assistant");
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning).filter(Boolean)).toEqual(["t"]);
    expect(chunks[0]!.system_fingerprint).toBe("fp_ollama");
    expect(Object.keys(chunks.at(-1)!.usage as object)).toEqual([
      "prompt_tokens",
      "completion_tokens",
      "total_tokens",
    ]);
  });

  it("vllm: fragments like OpenAI, reasoning_content, no vendor headers", async () => {
    fake = await startOpenAICompatibleFake("vllm", {
      quirks: NO_QUIRKS,
      script: [scenarios.thinking({ thinking: "t", text: "x", chunks: 1 })],
    });
    const { res, events } = await postSse(fake, "/v1/chat/completions", REQUEST, AUTH);
    expect(res.headers.get("x-request-id")).toBeNull();
    const chunks = jsonOf(events) as Chunk[];
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning_content).filter(Boolean)).toEqual(["t"]);
  });
});
