// Prompt-cache billing: each vendor's rules, by prefix match over the requests the fake has
// seen (README "Prompt-cache billing").
import { afterEach, describe, expect, it } from "vitest";
import { estimateTokens } from "../src/prompt-cache.ts";
import * as scenarios from "../src/scenarios.ts";
import { type FakeVendor, startFakeVendor } from "../src/server.ts";
import type { RecordedRequest } from "../src/types.ts";
import { NO_QUIRKS, post } from "./helpers.ts";

let fake: FakeVendor | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

let clock = 1_000_000;
const now = () => clock;

async function start(vendor: Parameters<typeof startFakeVendor>[0]["vendor"]) {
  clock = 1_000_000;
  fake = await startFakeVendor({
    vendor,
    quirks: NO_QUIRKS,
    promptCache: { now },
    whenExhausted: scenarios.text("ok"),
  });
  return fake;
}

const big = (label: string, tokens: number) => `${label} ${"x".repeat(tokens * 4)}`;
const ANTHROPIC_HEADERS = { "anthropic-version": "2023-06-01", "x-api-key": "k" };

async function anthropic(body: Record<string, unknown>): Promise<RecordedRequest> {
  const res = await post(
    fake!,
    "/v1/messages",
    { model: "claude-sonnet-5", max_tokens: 100, ...body },
    ANTHROPIC_HEADERS,
  );
  const json = (await res.json()) as { usage: Record<string, number> };
  const sent = fake!.requests.at(-1)!;
  // The answer's usage is what the bill says.
  expect(json.usage.cache_read_input_tokens).toBe(sent.billed!.cacheReadTokens);
  expect(json.usage.cache_creation_input_tokens).toBe(
    sent.billed!.cacheWriteTokens + sent.billed!.cacheWriteLongTokens,
  );
  expect(json.usage.input_tokens).toBe(sent.billed!.inputTokens);
  return sent;
}

const mark = { type: "ephemeral" } as const;
const user = (text: string, marked = false) => ({
  role: "user",
  content: [{ type: "text", text, ...(marked ? { cache_control: mark } : {}) }],
});
const assistant = (text: string) => ({ role: "assistant", content: [{ type: "text", text }] });

describe("Anthropic: explicit breakpoints", () => {
  it("writes at a marker, reads it back through the 20-block lookback, bills the rest as input", async () => {
    await start("anthropic");
    const system = [{ type: "text", text: big("sys", 2000), cache_control: mark }];
    const first = await anthropic({ system, messages: [user("hello", true)] });
    expect(first.billed!.cacheReadTokens).toBe(0);
    expect(first.billed!.cacheWriteTokens).toBe(first.billed!.totalTokens);
    expect(first.billed!.inputTokens).toBe(0);

    // The next step marks only its new tail: the old tail entry is found by looking back.
    const messages = [user("hello"), assistant("hi"), user("more", true)];
    const second = await anthropic({ system: [{ type: "text", text: system[0]!.text }], messages });
    expect(second.billed!.cacheReadTokens).toBe(first.billed!.totalTokens);
    expect(second.billed!.cacheWriteTokens).toBe(second.billed!.totalTokens - first.billed!.totalTokens);

    // Only the system marked: the read stops there (a marker looks back, never forward), and
    // everything after it is input.
    const third = await anthropic({
      system,
      messages: [...messages.slice(0, 2), user("more"), assistant("a"), user("b")],
    });
    const systemTokens = estimateTokens(JSON.stringify({ text: system[0]!.text, type: "text" }));
    expect(third.billed!.cacheReadTokens).toBe(systemTokens);
    expect(third.billed!.cacheWriteTokens).toBe(0);
    expect(third.billed!.inputTokens).toBe(third.billed!.totalTokens - systemTokens);
  });

  it("prefixes under the model's minimum are not cached; 1 hour markers bill long writes", async () => {
    await start("anthropic");
    const short = await anthropic({
      system: [{ type: "text", text: "tiny", cache_control: mark }],
      messages: [user("q")],
    });
    expect(short.billed!.cacheWriteTokens).toBe(0);
    expect(short.billed!.inputTokens).toBe(short.billed!.totalTokens);
    const long = await anthropic({
      system: [{ type: "text", text: big("sys", 3000), cache_control: { type: "ephemeral", ttl: "1h" } }],
      messages: [user("q", true)],
    });
    const systemTokens = estimateTokens(JSON.stringify({ text: big("sys", 3000), type: "text" }));
    expect(long.billed!.cacheWriteLongTokens).toBe(systemTokens);
    expect(long.billed!.cacheWriteTokens).toBe(long.billed!.totalTokens - systemTokens);
  });

  it("a marker more than 20 blocks past the last entry misses it", async () => {
    await start("anthropic");
    const head = [user(big("u", 1500), true)];
    await anthropic({ messages: head });
    const tail = Array.from({ length: 11 }, (_, i) => [assistant(`a${i}`), user(`u${i}`)]).flat();
    tail.at(-1)!.content[0] = { type: "text", text: "u10", cache_control: mark } as never;
    const far = await anthropic({ messages: [user(big("u", 1500)), ...tail] });
    expect(far.billed!.cacheReadTokens).toBe(0);
  });

  it("entries expire after their lifetime unless read; reads refresh them", async () => {
    await start("anthropic");
    const body = {
      system: [{ type: "text", text: big("sys", 2000), cache_control: mark }],
      messages: [user("q")],
    };
    await anthropic(body);
    clock += 4 * 60_000;
    expect((await anthropic(body)).billed!.cacheReadTokens).toBeGreaterThan(0);
    clock += 4 * 60_000; // 8 minutes after the write, 4 after the refreshing read
    expect((await anthropic(body)).billed!.cacheReadTokens).toBeGreaterThan(0);
    clock += 6 * 60_000;
    expect((await anthropic(body)).billed!.cacheReadTokens).toBe(0);
  });

  it("a change of thinking settings invalidates cached messages but not tools and system", async () => {
    await start("anthropic");
    const system = [{ type: "text", text: big("sys", 2000), cache_control: mark }];
    const messages = [user(big("u", 2000), true)];
    const thinking = { type: "enabled", budget_tokens: 2048 };
    const a = await anthropic({ system, messages, thinking, max_tokens: 4096 });
    expect((await anthropic({ system, messages, thinking, max_tokens: 4096 })).billed!.cacheReadTokens).toBe(
      a.billed!.totalTokens,
    );
    const other = await anthropic({
      system,
      messages,
      thinking: { type: "enabled", budget_tokens: 1024 },
      max_tokens: 4096,
    });
    const systemTokens = estimateTokens(JSON.stringify({ text: big("sys", 2000), type: "text" }));
    expect(other.billed!.cacheReadTokens).toBe(systemTokens);
  });

  it("max_tokens 0 pre-warms without generating: no script entry is used and no output is billed", async () => {
    await start("anthropic");
    fake!.push(scenarios.text("real answer"));
    const res = await post(
      fake!,
      "/v1/messages",
      {
        model: "claude-sonnet-5",
        max_tokens: 0,
        system: [{ type: "text", text: big("s", 2000), cache_control: mark }],
        messages: [user("q")],
      },
      ANTHROPIC_HEADERS,
    );
    const json = (await res.json()) as {
      content: unknown[];
      usage: Record<string, number>;
      stop_reason: string;
    };
    expect(json.content).toEqual([]);
    expect(json.usage.output_tokens).toBe(0);
    expect(json.usage.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(fake!.remaining).toBe(1);
  });

  it("output is capped at max_tokens, thinking first", async () => {
    await start("anthropic");
    fake!.push(scenarios.thinking({ thinking: "t".repeat(50), text: "answer" }));
    const res = await post(
      fake!,
      "/v1/messages",
      { model: "claude-sonnet-4-6", max_tokens: 1, messages: [user("q")] },
      ANTHROPIC_HEADERS,
    );
    const json = (await res.json()) as { usage: Record<string, number> };
    expect(json.usage.output_tokens).toBe(1);
  });
});

async function responses(body: Record<string, unknown>): Promise<RecordedRequest> {
  const res = await post(fake!, "/v1/responses", body, { authorization: "Bearer k" });
  const json = (await res.json()) as {
    usage: { input_tokens: number; input_tokens_details: Record<string, number> };
  };
  const sent = fake!.requests.at(-1)!;
  expect(json.usage.input_tokens).toBe(sent.billed!.totalTokens);
  expect(json.usage.input_tokens_details.cached_tokens).toBe(sent.billed!.cacheReadTokens);
  expect(json.usage.input_tokens_details.cache_write_tokens).toBe(sent.billed!.cacheWriteTokens);
  return sent;
}

const item = (role: string, text: string) => ({
  type: "message",
  role,
  content: [{ type: role === "assistant" ? "output_text" : "input_text", text }],
});

describe("OpenAI: automatic prefixes and GPT-5.6 breakpoints", () => {
  it("before GPT-5.6: the longest seen prefix of at least 1024 tokens, in 128-token steps, writes free", async () => {
    await start("openai-responses");
    const instructions = big("i", 1500);
    const first = await responses({ model: "gpt-5.5", instructions, input: [item("user", "a")] });
    expect(first.billed!.cacheReadTokens).toBe(0);
    expect(first.billed!.cacheWriteTokens).toBe(0);
    const second = await responses({
      model: "gpt-5.5",
      instructions,
      input: [item("user", "a"), item("assistant", "b"), item("user", "c")],
    });
    const read = second.billed!.cacheReadTokens;
    expect(read).toBeGreaterThanOrEqual(1024);
    expect((read - 1024) % 128).toBe(0);
    expect(read).toBeLessThanOrEqual(first.billed!.totalTokens);
    expect(first.billed!.totalTokens - read).toBeLessThan(128);
    // Another prompt_cache_key is another routing scope.
    const other = await responses({
      model: "gpt-5.5",
      instructions,
      input: [item("user", "a")],
      prompt_cache_key: "x",
    });
    expect(other.billed!.cacheReadTokens).toBe(0);
  });

  it("GPT-5.6: the implicit breakpoint after the latest user or tool input is written and billed", async () => {
    await start("openai-responses");
    const instructions = big("i", 1500);
    const input1 = [item("user", "a")];
    const first = await responses({ model: "gpt-5.6-sol", instructions, input: input1 });
    expect(first.billed!.cacheWriteTokens).toBe(first.billed!.totalTokens);
    const input2 = [
      ...input1,
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "result" },
    ];
    const second = await responses({ model: "gpt-5.6-sol", instructions, input: input2 });
    expect(second.billed!.cacheReadTokens).toBe(first.billed!.totalTokens);
    expect(second.billed!.cacheWriteTokens).toBe(second.billed!.totalTokens - first.billed!.totalTokens);
    // Explicit-only mode without explicit breakpoints caches nothing.
    const none = await responses({
      model: "gpt-5.6-sol",
      instructions: big("j", 1500),
      input: input1,
      prompt_cache_options: { mode: "explicit" },
    });
    expect(none.billed!.cacheWriteTokens).toBe(0);
  });
});

describe("xAI and Gemini", () => {
  it("xAI: automatic, but only a conversation id routes a request back to its cache", async () => {
    await start("xai");
    const body = {
      model: "grok-4",
      messages: [
        { role: "system", content: big("s", 500) },
        { role: "user", content: "q" },
      ],
    };
    const send = async (headers: Record<string, string>) => {
      await post(fake!, "/v1/chat/completions", body, { authorization: "Bearer k", ...headers });
      return fake!.requests.at(-1)!.billed!;
    };
    await send({});
    expect((await send({})).cacheReadTokens).toBe(0);
    await send({ "x-grok-conv-id": "s1" });
    const hit = await send({ "x-grok-conv-id": "s1" });
    expect(hit.cacheReadTokens).toBe(hit.totalTokens);
  });

  it("Gemini: implicit caching above the model's minimum; a named cache is read whole", async () => {
    await start("gemini");
    const path = "/v1beta/models/gemini-2.5-flash:generateContent";
    const contents = [{ role: "user", parts: [{ text: big("u", 1500) }] }];
    await post(fake!, path, { contents }, { "x-goog-api-key": "k" });
    await post(
      fake!,
      path,
      {
        contents: [
          ...contents,
          { role: "model", parts: [{ text: "a" }] },
          { role: "user", parts: [{ text: "b" }] },
        ],
      },
      { "x-goog-api-key": "k" },
    );
    const implicit = fake!.requests.at(-1)!.billed!;
    expect(implicit.cacheReadTokens).toBe(estimateTokens(JSON.stringify({ text: big("u", 1500) })));

    // A cache under the minimum is refused; one above it is read whole by the request naming it.
    const small = await post(fake!, "/v1beta/cachedContents", {
      model: "models/gemini-2.5-pro",
      contents: [{ role: "user", parts: [{ text: "tiny" }] }],
    });
    expect(small.status).toBe(400);
    const created = (await (
      await post(fake!, "/v1beta/cachedContents", {
        model: "models/gemini-2.5-pro",
        systemInstruction: { parts: [{ text: big("s", 5000) }] },
      })
    ).json()) as { name: string; usageMetadata: { totalTokenCount: number } };
    const res = await post(
      fake!,
      "/v1beta/models/gemini-2.5-pro:generateContent",
      { cachedContent: created.name, contents: [{ role: "user", parts: [{ text: "q" }] }] },
      { "x-goog-api-key": "k" },
    );
    const usage = ((await res.json()) as { usageMetadata: Record<string, number> }).usageMetadata;
    expect(usage.cachedContentTokenCount).toBe(created.usageMetadata.totalTokenCount);
    expect(usage.promptTokenCount).toBe(
      created.usageMetadata.totalTokenCount + estimateTokens(JSON.stringify({ text: "q" })),
    );
  });
});
