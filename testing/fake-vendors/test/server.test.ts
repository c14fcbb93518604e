import { inspect } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { describeRequest, maskedHeaders } from "../src/recording.ts";
import * as scenarios from "../src/scenarios.ts";
import {
  type FakeVendor,
  startAnthropicFake,
  startCombinedFake,
  startOpenAIChatFake,
} from "../src/server.ts";
import { parseSse, readSse } from "../src/sse-client.ts";
import { jsonOf, NO_QUIRKS, post, postSse, readUntilError } from "./helpers.ts";

const ANTHROPIC = {
  model: "claude-sonnet-4-5",
  max_tokens: 64,
  stream: true,
  messages: [{ role: "user", content: "hi" }],
};
const KEY = "sk-ant-canary-0123456789";
const HEADERS = { "x-api-key": KEY, "anthropic-version": "2023-06-01" };

let fake: FakeVendor;
afterEach(async () => {
  await fake?.close();
});

function textOf(events: ReturnType<typeof parseSse>): string {
  return jsonOf(events)
    .map((p) => (p.delta as { text?: string } | undefined)?.text ?? "")
    .join("");
}

describe("script queue", () => {
  it("consumes one entry per model request, in order, and then answers a clear 500", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.text("one"), scenarios.text("two")],
    });
    expect(fake.remaining).toBe(2);
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("one");
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("two");
    expect(fake.remaining).toBe(0);
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(res.status).toBe(500);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      "no response left",
    );
    expect(fake.requests.map((r) => r.exhausted)).toEqual([undefined, undefined, true]);
  });

  it("lets a function entry decide from the recorded request, and push() extends the queue", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [(req) => scenarios.text(`model=${req.model}`)],
    });
    expect(textOf((await postSse(fake, "/v1/messages", { ...ANTHROPIC, model: "m1" }, HEADERS)).events)).toBe(
      "model=m1",
    );
    fake.push(scenarios.text("pushed"));
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("pushed");
  });

  it("accepts a whole-script function that never runs out", async () => {
    fake = await startAnthropicFake({ quirks: NO_QUIRKS, script: (_req, n) => scenarios.text(`#${n}`) });
    expect(fake.remaining).toBe(Number.POSITIVE_INFINITY);
    for (const n of [0, 1, 2])
      expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe(`#${n}`);
  });

  it("repeats the last response when whenExhausted is repeat-last", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      whenExhausted: "repeat-last",
      script: [scenarios.text("again")],
    });
    for (let i = 0; i < 3; i++)
      expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("again");
  });

  it("does not consume the queue for other paths, and answers HEAD / and unknown paths with 200", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("x")] });
    const head = await fetch(`${fake.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    const models = await fetch(`${fake.url}/v1/models`);
    expect(await models.json()).toEqual({});
    const other = await post(fake, "/api/event_logging/batch", { a: 1 });
    expect(other.status).toBe(200);
    expect(fake.remaining).toBe(1);
    expect(fake.requests).toHaveLength(0);
    expect(fake.otherRequests.map((r) => `${r.method} ${r.path}`)).toEqual([
      "HEAD /",
      "GET /v1/models",
      "POST /api/event_logging/batch",
    ]);
  });
});

describe("request recording", () => {
  it("records method, path, query, headers, body, model, stream flag and first-byte timestamps", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("x")] });
    const before = process.hrtime.bigint();
    await postSse(fake, "/v1/messages?beta=true", ANTHROPIC, HEADERS);
    const r = fake.requests[0]!;
    expect(r.method).toBe("POST");
    expect(r.path).toBe("/v1/messages");
    expect(r.url).toBe("/v1/messages?beta=true");
    expect(r.query).toEqual({ beta: "true" });
    expect(r.vendor).toBe("anthropic");
    expect(r.endpoint).toBe("messages");
    expect(r.headers["anthropic-version"]).toBe("2023-06-01");
    expect(r.json).toEqual(ANTHROPIC);
    expect(r.bodyText).toBe(JSON.stringify(ANTHROPIC));
    expect(r.rawBody.equals(Buffer.from(JSON.stringify(ANTHROPIC)))).toBe(true);
    expect(r.model).toBe("claude-sonnet-4-5");
    expect(r.stream).toBe(true);
    expect(r.receivedAt.hrtime).toBeGreaterThanOrEqual(before);
    expect(r.bodyCompleteAt.hrtime).toBeGreaterThanOrEqual(r.receivedAt.hrtime);
    expect(Math.abs(r.receivedAt.wallMs - Date.now())).toBeLessThan(10_000);
  });

  it("keeps the raw key for assertions but masks it whenever the request is printed", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("x")] });
    await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    const r = fake.requests[0]!;
    expect(r.apiKey).toBe(KEY);
    expect(r.headers["x-api-key"]).toBe(KEY);
    expect(JSON.stringify(r)).not.toContain(KEY);
    expect(inspect(r)).not.toContain(KEY);
    expect(JSON.stringify(describeRequest(r))).not.toContain(KEY);
    expect(maskedHeaders(r)["x-api-key"]).toBe(`[masked ${KEY.length} chars]`);
    expect(maskedHeaders({ headers: { authorization: "Bearer sk-xyz" } }).authorization).toBe(
      "Bearer [masked 6 chars]",
    );
  });

  it("masks ?key= in printed URLs and extracts Bearer and Gemini keys", async () => {
    fake = await startCombinedFake({ script: [scenarios.text("a"), scenarios.text("b")] });
    await post(fake, "/v1beta/models/g:generateContent?key=AIzaSECRET", {
      contents: [{ parts: [{ text: "x" }] }],
    });
    await post(
      fake,
      "/v1/chat/completions",
      { model: "m", messages: [] },
      { authorization: "Bearer sk-BEARER" },
    );
    expect(fake.requests[0]!.apiKey).toBe("AIzaSECRET");
    expect(JSON.stringify(fake.requests[0])).not.toContain("AIzaSECRET");
    expect(fake.requests[1]!.apiKey).toBe("sk-BEARER");
    expect(JSON.stringify(fake.requests[1])).not.toContain("sk-BEARER");
  });

  it("waitForRequests resolves once enough model requests arrived", async () => {
    fake = await startAnthropicFake({ script: [scenarios.text("a"), scenarios.text("b")] });
    const waiting = fake.waitForRequests(2);
    await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect((await waiting).length).toBe(2);
  });

  it("passes the log callback only credential-free lines", async () => {
    const lines: string[] = [];
    fake = await startAnthropicFake({ script: [scenarios.text("a")], log: (l) => lines.push(l) });
    await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("/v1/messages");
    expect(lines.join()).not.toContain(KEY);
  });
});

describe("auth and validation", () => {
  it("rejects a wrong or missing key with the vendor's auth error, without consuming the script", async () => {
    fake = await startCombinedFake({ apiKey: KEY, script: [scenarios.text("ok")] });
    const wrong = await post(fake, "/v1/messages", ANTHROPIC, { ...HEADERS, "x-api-key": "nope" });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({
      type: "error",
      error: { type: "authentication_error", message: "invalid x-api-key" },
    });
    const missing = await post(fake, "/v1/chat/completions", { model: "m", messages: [] });
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toContain(
      "didn't provide an API key",
    );
    const gemini = await post(
      fake,
      "/v1beta/models/g:generateContent",
      { contents: [] },
      { "x-goog-api-key": "bad" },
    );
    expect(gemini.status).toBe(400);
    expect(await gemini.json()).toMatchObject({
      error: {
        code: 400,
        status: "INVALID_ARGUMENT",
        message: "API key not valid. Please pass a valid API key.",
      },
    });
    expect(fake.remaining).toBe(1);
    expect(fake.requests.every((r) => r.rejected !== undefined)).toBe(true);
    expect((await post(fake, "/v1/messages", { ...ANTHROPIC, stream: false }, HEADERS)).status).toBe(200);
  });

  it("refuses invalid requests with a 400 in the vendor's shape when validate is on", async () => {
    fake = await startAnthropicFake({ validate: true, script: [scenarios.text("ok")] });
    const { max_tokens: _omit, ...noMax } = ANTHROPIC;
    const res = await post(fake, "/v1/messages", noMax, HEADERS);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      type: "error",
      error: { type: "invalid_request_error", message: "max_tokens: Field required" },
    });
    expect(fake.requests[0]!.rejected?.message).toBe("max_tokens: Field required");
    expect(fake.remaining).toBe(1);
  });

  it("accepts a custom validator", async () => {
    fake = await startOpenAIChatFake({
      validate: (req) =>
        (req.json as { user?: string }).user ? undefined : { message: "user is required", param: "user" },
      script: [scenarios.text("ok")],
    });
    const res = await post(fake, "/v1/chat/completions", { model: "m", messages: [] });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { message: "user is required", type: "invalid_request_error", param: "user", code: null },
    });
  });
});

describe("combined server", () => {
  it("routes by path and by /<vendor> prefix, sharing one queue", async () => {
    fake = await startCombinedFake({
      quirks: NO_QUIRKS,
      script: (req) => scenarios.text(`hello ${req.vendor}`),
    });
    const a = await postSse(fake, "/v1/messages?beta=true", ANTHROPIC, HEADERS);
    expect(a.events[0]!.event).toBe("message_start");
    const r = await postSse(fake, "/v1/responses", { model: "gpt-5-codex", stream: true, input: "hi" });
    expect(r.events[0]!.event).toBe("response.created");
    const c = await postSse(fake, "/v1/chat/completions", { model: "m", stream: true, messages: [] });
    expect(c.events.at(-1)!.data).toBe("[DONE]");
    const x = await postSse(fake, "/xai/v1/chat/completions", { model: "grok", stream: true, messages: [] });
    expect(x.res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const g = await postSse(fake, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", {
      contents: [],
    });
    expect((g.events[0]!.json as { candidates: unknown[] }).candidates).toHaveLength(1);
    expect(fake.requests.map((q) => q.vendor)).toEqual([
      "anthropic",
      "openai-responses",
      "openai-chat",
      "xai",
      "gemini",
    ]);
    expect(fake.requests[3]!.path).toBe("/v1/chat/completions");
  });

  it("gives per-vendor queues priority and reports base URLs vendor SDKs expect", async () => {
    fake = await startCombinedFake({
      quirks: NO_QUIRKS,
      script: [scenarios.text("shared")],
      scripts: { anthropic: [scenarios.text("for anthropic")] },
    });
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("for anthropic");
    const chat = jsonOf(
      (await postSse(fake, "/v1/chat/completions", { model: "m", stream: true, messages: [] })).events,
    );
    expect(
      chat.map((c) => (c.choices as Array<{ delta: { content?: string } }>)[0]?.delta.content ?? "").join(""),
    ).toBe("shared");
    // The anthropic queue is empty now, so the shared script would answer next.
    fake.push(scenarios.text("shared again"));
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("shared again");
    fake.pushFor("anthropic", scenarios.text("pushed for anthropic"));
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe(
      "pushed for anthropic",
    );
    expect(fake.baseUrl("anthropic")).toBe(fake.url);
    expect(fake.baseUrl("openai-responses")).toBe(`${fake.url}/v1`);
    expect(fake.baseUrl("xai")).toBe(`${fake.url}/xai/v1`);
    expect(fake.baseUrl("gemini")).toBe(fake.url);
  });
});

describe("faults", () => {
  it("drops the connection mid-stream after delivering the earlier frames", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.droppedConnection({ afterFrames: 4 })],
    });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(res.status).toBe(200);
    const { text, error } = await readUntilError(res);
    expect(error).toBeInstanceOf(Error);
    expect(parseSse(text).map((e) => e.event)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
    ]);
  });

  it("hangs up before any status line", async () => {
    fake = await startAnthropicFake({ script: [scenarios.hangup()] });
    await expect(post(fake, "/v1/messages", ANTHROPIC, HEADERS)).rejects.toThrow();
    expect(fake.requests).toHaveLength(1);
  });

  it("inserts a malformed frame and continues the stream", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.malformedFrame({ afterFrames: 3 })],
    });
    const { text, events } = await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    const bad = events.filter((e) => e.json === undefined);
    expect(bad).toHaveLength(1);
    expect(() => JSON.parse(bad[0]!.data)).toThrow();
    expect(events.indexOf(bad[0]!)).toBe(3);
    expect(text.endsWith('data: {"type":"message_stop"}\n\n')).toBe(true);
  });

  it("stalls without closing until released, then resumes", async () => {
    fake = await startAnthropicFake({ quirks: NO_QUIRKS, script: [scenarios.stall({ afterFrames: 3 })] });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    await fake.waitForStall();
    // Everything before the stall has been written; read until the third frame is complete.
    while (parseSse(text).length < 3) text += decoder.decode((await reader.read()).value, { stream: true });
    expect(parseSse(text).map((e) => e.event)).toEqual(["message_start", "content_block_start", "ping"]);
    fake.releaseStalls();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(parseSse(text).at(-1)!.event).toBe("message_stop");
  });

  it("stalls until the client gives up, and the server notices the abort", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.stall({ afterFrames: 1 }), scenarios.text("next")],
    });
    const controller = new AbortController();
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS, { signal: controller.signal });
    await fake.waitForStall();
    controller.abort();
    await expect(res.text()).rejects.toThrow();
    // The server is still healthy for the next request.
    expect(textOf((await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS)).events)).toBe("next");
  });

  it("a stalled stream released with onRelease: end closes cleanly without the rest", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.stall({ afterFrames: 2, onRelease: "end" })],
    });
    const pending = post(fake, "/v1/messages", ANTHROPIC, HEADERS).then((r) => r.text());
    await fake.waitForStall();
    fake.releaseStalls();
    expect(parseSse(await pending).map((e) => e.event)).toEqual(["message_start", "content_block_start"]);
  });

  it("close() ends stalled connections", async () => {
    fake = await startAnthropicFake({ script: [scenarios.stall({ afterFrames: 1 })] });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    await fake.waitForStall();
    await fake.close();
    const { error } = await readUntilError(res);
    expect(error).toBeDefined();
  });

  it("splits writes at arbitrary byte offsets, including inside UTF-8 sequences", async () => {
    const emoji = "héllo wörld 🚀🚀";
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.text(emoji, { chunks: 3, splitBytes: 3 })],
    });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    const events = await readSse(res);
    expect(textOf(events)).toBe(emoji);
  });

  it("paces frames by chunkDelayMs", async () => {
    fake = await startAnthropicFake({
      quirks: NO_QUIRKS,
      script: [scenarios.text("abcd", { chunks: 4, chunkDelayMs: 15 })],
    });
    const started = performance.now();
    const { events } = await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    // 10 frames, each followed by a 15 ms pause.
    expect(events).toHaveLength(10);
    expect(performance.now() - started).toBeGreaterThanOrEqual(135);
  });

  it("sends exact bytes, status and headers from a raw entry", async () => {
    const frames = ["data: one\n\n", "data: two\n\n"];
    fake = await startAnthropicFake({
      script: [
        scenarios.raw({ status: 202, headers: { "content-type": "text/plain", "x-custom": "1" }, frames }),
      ],
    });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(res.status).toBe(202);
    expect(res.headers.get("x-custom")).toBe("1");
    expect(res.headers.get("request-id")).toBeNull();
    expect(await res.text()).toBe(frames.join(""));
  });

  it("merges per-response headers and can turn rate-limit headers off", async () => {
    fake = await startAnthropicFake({
      script: [scenarios.text("a", { headers: { "x-extra": "yes" }, rateLimits: false })],
    });
    const res = await post(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(res.headers.get("x-extra")).toBe("yes");
    expect(res.headers.get("anthropic-ratelimit-requests-limit")).toBeNull();
    await res.text();
  });
});

describe("long streams", () => {
  it("renders 20,000 deltas quickly for every wire format", async () => {
    fake = await startCombinedFake({ script: (_req) => scenarios.longStream(20_000) });
    const started = performance.now();
    const anthropic = await postSse(fake, "/v1/messages", ANTHROPIC, HEADERS);
    expect(anthropic.events.filter((e) => e.event === "content_block_delta")).toHaveLength(20_000);
    const responses = await postSse(fake, "/v1/responses", { model: "m", stream: true, input: "x" });
    expect(responses.events.filter((e) => e.event === "response.output_text.delta")).toHaveLength(20_000);
    const chat = await postSse(fake, "/v1/chat/completions", { model: "m", stream: true, messages: [] });
    expect(chat.events).toHaveLength(20_000 + 3);
    const gemini = await postSse(fake, "/v1beta/models/g:streamGenerateContent?alt=sse", { contents: [] });
    expect(gemini.events).toHaveLength(20_000 + 1);
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe("compressed request bodies", () => {
  it("decodes zstd and gzip bodies for json/bodyText and keeps rawBody as sent", async () => {
    const { gzipSync, zstdCompressSync } = await import("node:zlib");
    fake = await startOpenAIChatFake({ script: [scenarios.text("a"), scenarios.text("b")] });
    const body = JSON.stringify({ model: "zstd-model", messages: [] });
    for (const [encoding, data] of [
      ["zstd", zstdCompressSync(body)],
      ["gzip", gzipSync(body)],
    ] as const) {
      const res = await fetch(`${fake.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": encoding },
        body: data,
      });
      expect(res.status).toBe(200);
      await res.text();
    }
    expect(fake.requests.map((r) => r.model)).toEqual(["zstd-model", "zstd-model"]);
    expect(fake.requests[0]!.rawBody.equals(zstdCompressSync(body))).toBe(true);
  });
});

describe("first-byte timestamps", () => {
  it("stamps receivedAt when the first byte arrives, not when the headers are complete", async () => {
    const { connect } = await import("node:net");
    const { setTimeout: wait } = await import("node:timers/promises");
    fake = await startAnthropicFake({ script: [scenarios.text("a")] });
    const body = JSON.stringify({ ...ANTHROPIC, stream: false });
    const socket = connect(fake.port, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    const sentFirst = process.hrtime.bigint();
    socket.write("POST /v1/messages HTTP/1.1\r\nHost: fake\r\n");
    // A deliberate gap inside the request head; receivedAt must fall before it. The fake
    // runs in this process, so its socket handler sees the first bytes while we wait.
    await wait(50);
    const sentRest = process.hrtime.bigint();
    socket.write(
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    const [r] = await fake.waitForRequests(1);
    socket.destroy();
    expect(r!.receivedAt.hrtime).toBeGreaterThanOrEqual(sentFirst);
    // Compared with our own clock rather than a fixed gap, which a loaded machine stretches.
    expect(r!.receivedAt.hrtime).toBeLessThan(sentRest);
    expect(r!.bodyCompleteAt.hrtime).toBeGreaterThanOrEqual(sentRest);
  });
});
