import { afterEach, describe, expect, it } from "vitest";
import * as scenarios from "../src/scenarios.ts";
import { type FakeVendor, startGeminiFake } from "../src/server.ts";
import { jsonOf, post, postSse } from "./helpers.ts";

const PATH = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse";
const REQUEST = { contents: [{ role: "user", parts: [{ text: "hi" }] }] };
const AUTH = { "x-goog-api-key": "AIza-test" };

type Chunk = {
  candidates: Array<{
    content: { parts: Array<Record<string, unknown>>; role: string };
    finishReason?: string;
    index: number;
  }>;
  usageMetadata: Record<string, unknown>;
  modelVersion: string;
  responseId: string;
};

let fake: FakeVendor;
afterEach(async () => {
  await fake?.close();
});

describe("Gemini streamGenerateContent (alt=sse)", () => {
  it("frames with CRLF, no [DONE], cumulative usage and the finish chunk carrying the signature", async () => {
    fake = await startGeminiFake({
      script: [
        {
          kind: "turn",
          blocks: [
            { type: "thinking", text: "", deltas: [], signature: "SIG" },
            { type: "text", text: "There are 3", deltas: ["There are ", "3"] },
          ],
          id: "resp-1",
          usage: { inputTokens: 9, outputTokens: 23, reasoningTokens: 185 },
        },
      ],
    });
    const { res, text, events } = await postSse(fake, PATH, REQUEST, AUTH);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(
      text
        .split("\r\n\r\n")
        .filter(Boolean)
        .every((f) => f.startsWith("data: {")),
    ).toBe(true);
    expect(text.endsWith("}\r\n\r\n")).toBe(true);
    expect(text).not.toContain("[DONE]");
    const chunks = jsonOf(events) as Chunk[];
    expect(chunks.map((c) => c.candidates[0]!.content.parts)).toEqual([
      [{ text: "There are " }],
      [{ text: "3" }],
      [{ text: "", thoughtSignature: "SIG" }],
    ]);
    expect(chunks.map((c) => c.candidates[0]!.finishReason)).toEqual([undefined, undefined, "STOP"]);
    expect(
      chunks.every(
        (c) =>
          c.candidates[0]!.content.role === "model" &&
          c.modelVersion === "gemini-3-pro-preview" &&
          c.responseId === "resp-1",
      ),
    ).toBe(true);
    expect(chunks.map((c) => c.usageMetadata.candidatesTokenCount)).toEqual([8, 15, 23]);
    expect(chunks.at(-1)!.usageMetadata).toEqual({
      promptTokenCount: 9,
      candidatesTokenCount: 23,
      totalTokenCount: 217,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: 9 }],
      thoughtsTokenCount: 185,
    });
  });

  it("uses LF framing when asked", async () => {
    fake = await startGeminiFake({ quirks: { geminiLineEnding: "lf" }, script: [scenarios.text("a")] });
    const { text } = await postSse(fake, PATH, REQUEST, AUTH);
    expect(text).not.toContain("\r");
    expect(text.endsWith("}\n\n")).toBe(true);
  });

  it("streams thought parts and puts the signature on the functionCall part; parallel calls share a chunk", async () => {
    fake = await startGeminiFake({
      script: [
        {
          kind: "turn",
          blocks: [
            { type: "thinking", text: "**Weather**", signature: "TS" },
            { type: "tool_call", name: "weather", args: { location: "San Francisco" }, fragments: 5 },
            { type: "tool_call", name: "time", args: { tz: "PST" } },
          ],
        },
      ],
    });
    const chunks = jsonOf((await postSse(fake, PATH, REQUEST, AUTH)).events) as Chunk[];
    expect(chunks.map((c) => c.candidates[0]!.content.parts)).toEqual([
      [{ text: "**Weather**", thought: true }],
      [
        { functionCall: { name: "weather", args: { location: "San Francisco" } }, thoughtSignature: "TS" },
        { functionCall: { name: "time", args: { tz: "PST" } } },
      ],
      [{ text: "" }],
    ]);
    // Function calls still finish with STOP.
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe("STOP");
  });

  it("reports cached content and maps max_tokens / refusal finish reasons", async () => {
    fake = await startGeminiFake({
      script: [
        scenarios.cacheHit({ inputTokens: 8, cacheReadTokens: 4, cacheWriteTokens: 0 }),
        scenarios.maxTokens(),
        scenarios.refusal(),
      ],
    });
    const cached = (jsonOf((await postSse(fake, PATH, REQUEST, AUTH)).events) as Chunk[]).at(-1)!;
    expect(cached.usageMetadata).toMatchObject({
      promptTokenCount: 12,
      cachedContentTokenCount: 4,
      cacheTokensDetails: [{ modality: "TEXT", tokenCount: 4 }],
    });
    const cut = (jsonOf((await postSse(fake, PATH, REQUEST, AUTH)).events) as Chunk[]).at(-1)!;
    expect(cut.candidates[0]!.finishReason).toBe("MAX_TOKENS");
    const refused = (jsonOf((await postSse(fake, PATH, REQUEST, AUTH)).events) as Chunk[]).at(-1)!;
    expect(refused.candidates[0]!.finishReason).toBe("SAFETY");
  });

  it("reports a mid-stream error as a data event carrying a Google RPC error", async () => {
    fake = await startGeminiFake({ script: [scenarios.midStreamError({ afterFrames: 2 })] });
    const { res, events } = await postSse(fake, PATH, REQUEST, AUTH);
    expect(res.status).toBe(200);
    expect(events).toHaveLength(3);
    expect(events[2]!.json).toMatchObject({ error: { code: 500, status: "INTERNAL" } });
  });
});

describe("Gemini other forms and errors", () => {
  it("streams a JSON array when alt=sse is absent", async () => {
    fake = await startGeminiFake({ script: [scenarios.text("ab", { chunks: 2 })] });
    const res = await post(fake, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", REQUEST, AUTH);
    expect(res.headers.get("content-type")).toBe("application/json; charset=UTF-8");
    const body = (await res.json()) as Chunk[];
    expect(body.map((c) => c.candidates[0]!.content.parts[0]!.text)).toEqual(["a", "b", ""]);
  });

  it("answers generateContent with one response holding merged parts", async () => {
    fake = await startGeminiFake({
      script: [scenarios.thinking({ thinking: "t", signature: "S", text: "answer", chunks: 3 })],
    });
    const res = await post(fake, "/v1beta/models/gemini-2.5-flash:generateContent", REQUEST, AUTH);
    const body = (await res.json()) as Chunk;
    expect(body.candidates[0]!.content.parts).toEqual([
      { text: "t", thought: true },
      { text: "answer", thoughtSignature: "S" },
    ]);
    expect(body.modelVersion).toBe("gemini-2.5-flash");
    expect(fake.requests[0]!.model).toBe("gemini-2.5-flash");
    expect(fake.requests[0]!.stream).toBe(false);
  });

  it("answers 429 RESOURCE_EXHAUSTED with RetryInfo in the body and no retry-after header", async () => {
    fake = await startGeminiFake({ script: [scenarios.rateLimited(34.4)] });
    const res = await post(fake, PATH, REQUEST, AUTH);
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBeNull();
    const body = (await res.json()) as {
      error: { code: number; status: string; details: Array<Record<string, unknown>> };
    };
    expect(body.error.code).toBe(429);
    expect(body.error.status).toBe("RESOURCE_EXHAUSTED");
    expect(body.error.details).toContainEqual({
      "@type": "type.googleapis.com/google.rpc.RetryInfo",
      retryDelay: "34.4s",
    });
  });

  it("answers 503 UNAVAILABLE and countTokens", async () => {
    fake = await startGeminiFake({ script: [scenarios.serverError(503)], countTokens: () => 31 });
    const res = await post(fake, PATH, REQUEST, AUTH);
    expect(await res.json()).toMatchObject({ error: { code: 503, status: "UNAVAILABLE" } });
    const count = await post(fake, "/v1beta/models/gemini-2.5-flash:countTokens", REQUEST, AUTH);
    expect(await count.json()).toEqual({
      totalTokens: 31,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: 31 }],
    });
  });

  it("creates and deletes explicit caches, and refuses a request repeating what a cache holds", async () => {
    fake = await startGeminiFake({ script: [scenarios.text("cached")], validate: true });
    const created = await post(
      fake,
      "/v1beta/cachedContents",
      { model: "models/gemini-2.5-flash", systemInstruction: { parts: [{ text: "sys" }] }, ttl: "300s" },
      AUTH,
    );
    const entry = (await created.json()) as { name: string; expireTime: string };
    expect(entry.name).toMatch(/^cachedContents\/[A-Za-z0-9]+$/);
    expect(Date.parse(entry.expireTime) - Date.now()).toBeGreaterThan(290_000);
    expect(fake.cachedContents.get(entry.name)).toMatchObject({
      systemInstruction: { parts: [{ text: "sys" }] },
    });
    const both = await post(
      fake,
      PATH,
      { ...REQUEST, cachedContent: entry.name, systemInstruction: { parts: [{ text: "x" }] } },
      AUTH,
    );
    expect(both.status).toBe(400);
    const ok = await post(fake, PATH, { ...REQUEST, cachedContent: entry.name }, AUTH);
    expect(ok.status).toBe(200);
    await ok.text();
    const res = await fetch(`${fake.url}/v1beta/${entry.name}`, { method: "DELETE", headers: AUTH });
    expect(res.status).toBe(200);
    expect(fake.cachedContents.size).toBe(0);
  });
});
