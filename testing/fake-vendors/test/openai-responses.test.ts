import { afterEach, describe, expect, it } from "vitest";
import * as scenarios from "../src/scenarios.ts";
import { type FakeVendor, startOpenAIResponsesFake, startXaiFake } from "../src/server.ts";
import { jsonOf, NO_QUIRKS, post, postSse } from "./helpers.ts";

const REQUEST = { model: "gpt-5-codex", stream: true, input: [{ role: "user", content: "hi" }] };
const AUTH = { authorization: "Bearer sk-openai-test" };

let fake: FakeVendor;
afterEach(async () => {
  await fake?.close();
});

describe("OpenAI Responses stream", () => {
  it("renders a text message as the recorded event sequence with increasing sequence numbers", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [{ kind: "text", text: "OK", usage: { inputTokens: 12, outputTokens: 2 }, id: "resp_1" }],
    });
    const { res, text, events } = await postSse(fake, "/v1/responses", REQUEST, AUTH);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(res.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.headers.get("openai-version")).toBe("2020-10-01");
    expect(res.headers.get("x-ratelimit-reset-requests")).toBe("1s");
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(text).not.toContain("[DONE]");
    const payloads = jsonOf(events);
    expect(payloads.map((p) => p.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    for (const e of events) expect((e.json as { type: string }).type).toBe(e.event);
    const created = payloads[0]!.response as Record<string, unknown>;
    expect(created).toMatchObject({
      id: "resp_1",
      object: "response",
      status: "in_progress",
      model: "gpt-5-codex",
      output: [],
      usage: null,
    });
    const itemId = (payloads[2]!.item as { id: string }).id;
    expect(itemId).toMatch(/^msg_/);
    expect(payloads[4]).toEqual({
      type: "response.output_text.delta",
      content_index: 0,
      delta: "OK",
      item_id: itemId,
      logprobs: [],
      output_index: 0,
      sequence_number: 4,
    });
    expect(payloads[5]).toMatchObject({ type: "response.output_text.done", text: "OK" });
    const completed = payloads[8]!.response as Record<string, unknown>;
    expect(completed.status).toBe("completed");
    expect(completed.output).toEqual([
      {
        id: itemId,
        type: "message",
        status: "completed",
        content: [{ type: "output_text", annotations: [], logprobs: [], text: "OK" }],
        role: "assistant",
      },
    ]);
    expect(completed.usage).toEqual({
      input_tokens: 12,
      input_tokens_details: { cache_write_tokens: 0, cached_tokens: 0 },
      output_tokens: 2,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 14,
    });
  });

  it("streams function-call arguments in fragments and completes the item", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.toolCallFragments({
          name: "get_weather",
          args: { city: "Beijing" },
          id: "call_A",
          fragments: 6,
        }),
      ],
    });
    const payloads = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events);
    const added = payloads.find((p) => p.type === "response.output_item.added")!;
    expect(added.item).toMatchObject({
      type: "function_call",
      status: "in_progress",
      arguments: "",
      call_id: "call_A",
      name: "get_weather",
    });
    const deltas = payloads
      .filter((p) => p.type === "response.function_call_arguments.delta")
      .map((p) => p.delta as string);
    expect(deltas).toHaveLength(6);
    expect(deltas.join("")).toBe('{"city":"Beijing"}');
    expect(payloads.find((p) => p.type === "response.function_call_arguments.done")!.arguments).toBe(
      '{"city":"Beijing"}',
    );
    expect(payloads.find((p) => p.type === "response.output_item.done")!.item).toMatchObject({
      status: "completed",
      arguments: '{"city":"Beijing"}',
      call_id: "call_A",
    });
  });

  it("adds obfuscation to deltas when quirks are on", async () => {
    fake = await startOpenAIResponsesFake({ script: [scenarios.text("abc def", { chunks: 3 })] });
    const payloads = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events);
    const deltas = payloads.filter((p) => p.type === "response.output_text.delta");
    expect(deltas).toHaveLength(3);
    for (const d of deltas) expect(d.obfuscation).toMatch(/^[0-9A-Za-z]{2,15}$/);
  });

  it("renders thinking as a reasoning item whose encrypted_content is the signature, only when asked", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.thinking({ thinking: "step", signature: "gAAAA-final", text: "ans", chunks: 1 }),
        scenarios.thinking({ thinking: "step", signature: "gAAAA-final", text: "ans", chunks: 1 }),
      ],
    });
    const asked = jsonOf(
      (
        await postSse(
          fake,
          "/v1/responses",
          { ...REQUEST, include: ["reasoning.encrypted_content"], store: false },
          AUTH,
        )
      ).events,
    );
    expect(asked.map((p) => p.type).slice(2, 9)).toEqual([
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
    ]);
    const added = asked[2]!.item as Record<string, unknown>;
    const done = asked[7]!.item as Record<string, unknown>;
    expect(added.encrypted_content).not.toBe("gAAAA-final");
    expect(done).toEqual({
      id: added.id,
      type: "reasoning",
      summary: [{ type: "summary_text", text: "step" }],
      encrypted_content: "gAAAA-final",
    });
    const completed = asked.at(-1)!.response as {
      usage: { output_tokens_details: { reasoning_tokens: number } };
    };
    expect(completed.usage.output_tokens_details.reasoning_tokens).toBe(1);

    const notAsked = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events);
    const item = notAsked.find((p) => p.type === "response.output_item.done")!.item as Record<
      string,
      unknown
    >;
    expect(item.type).toBe("reasoning");
    expect("encrypted_content" in item).toBe(false);
  });

  it("renders redacted thinking as a reasoning item with only encrypted content", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [scenarios.redactedThinking({ data: "BLOB" })],
    });
    const payloads = jsonOf(
      (await postSse(fake, "/v1/responses", { ...REQUEST, include: ["reasoning.encrypted_content"] }, AUTH))
        .events,
    );
    expect(payloads[3]).toMatchObject({
      type: "response.output_item.done",
      item: { type: "reasoning", summary: [], encrypted_content: "BLOB" },
    });
  });

  it("reports cached tokens inside input_tokens", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [scenarios.cacheHit({ inputTokens: 10, cacheReadTokens: 1024, cacheWriteTokens: 0 })],
    });
    const payloads = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events);
    const usage = (payloads.at(-1)!.response as { usage: Record<string, unknown> }).usage;
    expect(usage).toMatchObject({ input_tokens: 1034, input_tokens_details: { cached_tokens: 1024 } });
  });

  it("ends with response.incomplete for max_tokens and renders refusals as refusal parts", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [scenarios.maxTokens(), scenarios.refusal({ explanation: "No." })],
    });
    const cut = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events).at(-1)!;
    expect(cut.type).toBe("response.incomplete");
    expect(cut.response).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
    });
    const refused = jsonOf((await postSse(fake, "/v1/responses", REQUEST, AUTH)).events);
    expect(refused.find((p) => p.type === "response.refusal.done")).toMatchObject({ refusal: "No." });
  });

  it("reports a mid-stream failure as error then response.failed, continuing the sequence", async () => {
    fake = await startOpenAIResponsesFake({
      quirks: NO_QUIRKS,
      script: [scenarios.midStreamError({ afterFrames: 4, errorType: "server_error", message: "boom" })],
    });
    const { res, events } = await postSse(fake, "/v1/responses", REQUEST, AUTH);
    expect(res.status).toBe(200);
    const payloads = jsonOf(events);
    expect(payloads.map((p) => p.type).slice(-2)).toEqual(["error", "response.failed"]);
    expect(payloads.map((p) => p.sequence_number)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(payloads[4]).toEqual({
      type: "error",
      error: { type: "server_error", code: "server_error", message: "boom", param: null },
      sequence_number: 4,
    });
    expect(payloads[5]!.response).toMatchObject({
      status: "failed",
      error: { code: "server_error", message: "boom" },
    });
  });
});

describe("OpenAI Responses JSON and errors", () => {
  it("answers a non-streaming request with the completed response object", async () => {
    fake = await startOpenAIResponsesFake({
      script: [scenarios.toolCallFragments({ name: "f", args: { x: 1 }, id: "call_1" })],
    });
    const res = await post(fake, "/v1/responses", { ...REQUEST, stream: false }, AUTH);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ object: "response", status: "completed", model: "gpt-5-codex" });
    expect(body.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: "call_1", arguments: '{"x":1}', name: "f" }),
    ]);
  });

  it("answers 429 with retry-after, Go-duration resets and the OpenAI error body", async () => {
    fake = await startOpenAIResponsesFake({
      script: [scenarios.rateLimited(2, { retryAfterMs: 2000 })],
      rateLimits: { tokens: { limit: 30000, remaining: 100, resetSeconds: 360 } },
    });
    const res = await post(fake, "/v1/responses", REQUEST, AUTH);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.headers.get("retry-after-ms")).toBe("2000");
    expect(res.headers.get("x-ratelimit-remaining-tokens")).toBe("0");
    expect(res.headers.get("x-ratelimit-reset-tokens")).toBe("6m0s");
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "tokens", code: "rate_limit_exceeded", param: null });
    expect(body.error.message).toContain("Please try again in 2s.");
  });

  it("answers insufficient_quota when scripted so (a 429 that must not be retried)", async () => {
    fake = await startOpenAIResponsesFake({ script: [scenarios.insufficientQuota({ message: "quota" })] });
    const res = await post(fake, "/v1/responses", REQUEST, AUTH);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(await res.json()).toEqual({
      error: { message: "quota", type: "insufficient_quota", param: null, code: "insufficient_quota" },
    });
  });

  it("answers input_tokens counting without consuming the script", async () => {
    fake = await startOpenAIResponsesFake({ countTokens: () => 9 });
    const res = await post(fake, "/v1/responses/input_tokens", { model: "m", input: "hi" }, AUTH);
    expect(await res.json()).toEqual({ object: "response.input_tokens", input_tokens: 9 });
  });
});

describe("xAI Responses dialect", () => {
  it("uses UUID ids, puts sequence_number first and adds cost ticks to usage", async () => {
    fake = await startXaiFake({
      quirks: NO_QUIRKS,
      script: [
        scenarios.thinking({
          usage: { inputTokens: 10, outputTokens: 3, reasoningTokens: 20, costInUsdTicks: 1466250 },
        }),
      ],
    });
    const { text, events, res } = await postSse(fake, "/v1/responses", { ...REQUEST, model: "grok-4" }, AUTH);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(text).toContain('data: {"sequence_number":0,"type":"response.created"');
    const payloads = jsonOf(events);
    expect((payloads[0]!.response as { id: string }).id).toMatch(/^[0-9a-f-]{36}$/);
    expect((payloads[2]!.item as { id: string }).id).toMatch(/^rs_[0-9a-f-]{36}$/);
    const usage = (payloads.at(-1)!.response as { usage: Record<string, unknown> }).usage;
    expect(usage).toMatchObject({
      cost_in_usd_ticks: 1466250,
      num_sources_used: 0,
      num_server_side_tools_used: 0,
    });
  });
});
