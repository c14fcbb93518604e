// The Gemini provider as a real plugin process against the loopback Gemini fake
// (validate: true), over the runtime host.
import { fromJson, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { recordUsage, validateCapabilities } from "@pluggableharness/kernel/domain";
import {
  accumulate,
  cases,
  collect,
  launch,
  only,
  type RequestInit,
  str,
  text,
  utf8,
} from "@pluggableharness/model-provider-testing";
import { type ContentBlockSchema, type MessageSchema, Role } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  type ModelSpec,
  SafetyKind,
  StopReason,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import type { PluginHost } from "@pluggableharness/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CANARY = "AIzaCANARY-91b2c3d4e5f6";
const MAIN = new URL("../src/main.ts", import.meta.url);
const FLASH = "gemini-2.5-flash-lite";
const PRO = "gemini-3.1-pro-preview";
const BLIND = "gemini-blind";

let fake: FakeVendor;
let host: PluginHost;
let client: Awaited<ReturnType<typeof launch>>["client"];
let logs: Awaited<ReturnType<typeof launch>>["logs"];
let specs: Map<string, ModelSpec>;

const config = () => ({
  api_key: CANARY,
  base_url: fake.url,
  models_json: JSON.stringify({ [BLIND]: { like: FLASH, vision: false, documents: false } }),
});

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "gemini", validate: true, apiKey: CANARY, countTokens: () => 17 });
  ({ host, client, logs } = await launch("google", MAIN));
  expect((await client.configure({ config: config() })).result?.diagnostics).toEqual([]);
  specs = new Map((await client.getCapabilities({})).capabilities!.models.map((m) => [m.id, m]));
});

afterAll(async () => {
  await host?.shutdown();
  await fake?.close();
});

const base = (init: Partial<RequestInit> = {}): RequestInit =>
  ({
    modelId: FLASH,
    messages: [{ role: Role.USER, id: "m0", content: [text("Hello")] }],
    callContext: { sessionId: "s", turnId: "t", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;

const complete = (init: Partial<RequestInit> = {}, signal?: AbortSignal) =>
  collect(client, base(init), signal);

type Body = { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> } & Record<
  string,
  unknown
>;
const lastBody = () => fake.requests.at(-1)!.json as Body;

describe("capabilities", () => {
  it("declares a catalog the kernel accepts, with long-context tiers and per-generation thinking", async () => {
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(() => validateCapabilities("google", caps)).not.toThrow();
    expect([...specs.keys()]).toEqual(
      expect.arrayContaining(["gemini-3.8-flash", PRO, "gemini-3.5-flash-lite", FLASH]),
    );
    // Ids no longer served (gemini-3-pro never was one) are not offered.
    for (const gone of ["gemini-3-pro", "gemini-3-pro-preview", "gemini-2.5-pro", "gemini-2.5-flash"])
      expect(specs.has(gone), gone).toBe(false);
    const pro3 = specs.get(PRO)!;
    expect(pro3.thinking?.effort).toMatchObject({ levels: ["low", "medium", "high"], default: "high" });
    expect(pro3.thinking?.budget).toBeUndefined();
    expect(pro3.pricing!.tiers.map((t) => [t.inputTokensFrom, t.inputTokensUntil])).toEqual([
      [undefined, 200_001n],
      [200_001n, undefined],
    ]);
    const lite = specs.get(FLASH)!;
    expect(lite.thinking?.budget?.range).toMatchObject({ min: 0n, max: 24576n });
    expect(specs.get(FLASH)!.caching).toMatchObject({
      supported: true,
      implicitAutomatic: true,
      explicitMarkers: true,
    });
  });

  it("rejects a configuration without a key", async () => {
    const r = await client.configure({ config: { base_url: fake.url } });
    expect(r.result!.diagnostics.map((d) => d.summary)).toContain('Missing required attribute "api_key"');
    expect((await client.configure({ config: config() })).result!.diagnostics).toEqual([]);
  });
});

describe("streaming", () => {
  it("streams text with the response id, model, usage and stop; no invented rate limits", async () => {
    fake.push(
      scenarios.text("Hi from Gemini", {
        chunks: 3,
        usage: { inputTokens: 9, outputTokens: 3, reasoningTokens: 4 },
      }),
    );
    const { events, error } = await complete({
      assembledContext: [{ provider: "ctx", label: "sys", content: [text("Be brief.")] }],
      params: { temperature: 0.2, maxOutputTokens: 100n },
    });
    expect(error).toBeUndefined();
    expect(cases(events).slice(0, 2)).toEqual(["streamStart", "metadata"]);
    expect(cases(events).slice(-2)).toEqual(["usage", "stop"]);
    expect(
      only(events, "textDelta")
        .map((t) => t.text)
        .join(""),
    ).toBe("Hi from Gemini");
    expect(only(events, "metadata")[0]!.actualModel).toBe(FLASH);
    const u = only(events, "usage")[0]!;
    expect([u.inputTokens, u.outputTokens, u.reasoningTokens, u.cacheReadTokens]).toEqual([
      9n,
      3n,
      4n,
      undefined,
    ]);
    expect(u.vendorTotalTokens).toBeUndefined();
    expect(u.rateLimits).toEqual([]);
    const sent = fake.requests.at(-1)!;
    expect(sent.path).toBe(`/v1beta/models/${FLASH}:streamGenerateContent`);
    expect(sent.query["alt"]).toBe("sse");
    expect(sent.headers["x-goog-api-key"]).toBe(CANARY);
    expect(sent.json).toMatchObject({
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { temperature: 0.2, maxOutputTokens: 100, thinkingConfig: { includeThoughts: true } },
    });
  });

  it("round-trips a tool call with a thought signature on the functionCall part", async () => {
    const inputSchema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "path", schema: { type: "SCHEMA_TYPE_STRING", description: "file" } }],
      required: ["path"],
    });
    const tools = [{ name: "read_file", description: "Read a file", inputSchema }];
    fake.push(
      scenarios.toolCallFragments({ name: "read_file", args: { path: "a.txt" }, signature: "gem-sig-1" }),
    );
    const first = await complete({
      tools,
      params: { toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "read_file" } },
    });
    expect(first.error).toBeUndefined();
    const seq = cases(first.events);
    expect(seq.indexOf("thinkingSignature")).toBeLessThan(seq.indexOf("toolCallStart"));
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    expect(lastBody()["toolConfig"]).toEqual({
      functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["read_file"] },
    });
    expect(lastBody()["tools"]).toEqual([
      {
        functionDeclarations: [
          {
            name: "read_file",
            description: "Read a file",
            parameters: {
              type: "OBJECT",
              properties: { path: { type: "STRING", description: "file" } },
              required: ["path"],
            },
          },
        ],
      },
    ]);
    const msg = accumulate(first.events, specs.get(FLASH)!, "google").message;
    const use = msg.content.find((b) => b.block.case === "toolUse")!.block.value as {
      id: string;
      input: unknown;
    };
    expect(use.input).toEqual({ path: "a.txt" });

    fake.push(scenarios.text("It says hi."));
    const second = await complete({
      tools,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt")] },
        { ...msg, producedByProvider: "google", producedByModelId: FLASH },
        {
          role: Role.USER,
          id: "m2",
          content: [{ block: { case: "toolResult", value: { toolUseId: use.id, content: [text("hi")] } } }],
        },
      ],
    });
    expect(second.error).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeFalsy();
    const contents = lastBody().contents;
    expect(contents[1]).toEqual({
      role: "model",
      parts: [
        { functionCall: { name: "read_file", args: { path: "a.txt" } }, thoughtSignature: "gem-sig-1" },
      ],
    });
    expect(contents[2]).toEqual({
      role: "user",
      parts: [{ functionResponse: { name: "read_file", response: { output: "hi" } } }],
    });
  });

  it("streams thought summaries and echoes the trailing signature verbatim", async () => {
    const SIG = "EqsFCqgFAb4+9vvtAF5n87lB4OGDOoTRMOqp35jW/AG37eeWcow=";
    fake.push(scenarios.thinking({ thinking: "Counting letters.", signature: SIG, text: "Three." }));
    const t = await complete({ modelId: PRO, params: { thinkingEffort: "low" } });
    expect(lastBody()["generationConfig"]).toMatchObject({
      thinkingConfig: { thinkingLevel: "LOW", includeThoughts: true },
    });
    expect(
      only(t.events, "thinkingDelta")
        .map((d) => d.text)
        .join(""),
    ).toBe("Counting letters.");
    expect(str(only(t.events, "thinkingSignature")[0]!.signature)).toBe(SIG);
    const msg = accumulate(t.events, specs.get(PRO)!, "google").message;

    fake.push(scenarios.text("ok"));
    await complete({
      modelId: PRO,
      messages: [
        { role: Role.USER, id: "m0", content: [text("q")] },
        { ...msg, producedByProvider: "google" },
        { role: Role.USER, id: "m2", content: [text("more")] },
      ],
    });
    expect(lastBody().contents[1]).toEqual({
      role: "model",
      parts: [{ text: "Three." }, { text: "", thoughtSignature: SIG }],
    });
  });

  it("accepts an Anthropic history with signed and redacted thinking by dropping the reasoning", async () => {
    fake.push(scenarios.text("Continuing."));
    const res = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          producedByModelId: "claude-sonnet-4-6",
          content: [
            {
              block: {
                case: "thinking",
                value: { text: "I should read it.", signature: utf8("EqQBCgIYAhIM-anthropic") },
              },
            },
            { block: { case: "redactedThinking", value: { data: utf8("EmwKAhgBEgy3va3p-redacted") } } },
            text("Reading."),
            {
              block: {
                case: "toolUse",
                value: { id: "toolu_01X", name: "read_file", input: { path: "a.txt" } },
              },
            },
          ],
        },
        {
          role: Role.USER,
          id: "m2",
          content: [
            { block: { case: "toolResult", value: { toolUseId: "toolu_01X", content: [text("hi")] } } },
          ],
        },
      ],
    });
    expect(res.error).toBeUndefined();
    expect(cases(res.events)).not.toContain("error");
    const sent = fake.requests.at(-1)!;
    expect(sent.rejected).toBeFalsy();
    expect(sent.bodyText).not.toContain("thoughtSignature");
    expect(sent.bodyText).not.toContain("anthropic");
    expect(lastBody().contents[1]).toEqual({
      role: "model",
      parts: [{ text: "Reading." }, { functionCall: { name: "read_file", args: { path: "a.txt" } } }],
    });
  });

  it("reports cached input apart from fresh input, and the kernel prices it by hand", async () => {
    fake.push(scenarios.cacheHit({ inputTokens: 100, cacheReadTokens: 1000, cacheWriteTokens: 0 }));
    const res = await complete();
    const u = only(res.events, "usage")[0]!;
    expect([u.inputTokens, u.cacheReadTokens, u.outputTokens]).toEqual([100n, 1000n, 5n]);
    const hand = (100 * 0.1 + 5 * 0.4 + 1000 * 0.01) / 1e6;
    const rec = recordUsage(u, specs.get(FLASH)!.pricing!, timestampFromMs(Date.now()));
    expect(rec.costUsd).toBeCloseTo(hand, 12);
  });

  it("turns the stable-prefix breakpoints into one explicit cache, reused while it lives, billed, and deleted on reconfigure", async () => {
    const inputSchema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "q", schema: { type: "SCHEMA_TYPE_STRING" } }],
    });
    const req = {
      assembledContext: [{ provider: "ctx", label: "sys", content: [text("Static project context.")] }],
      tools: [{ name: "search", description: "Search", inputSchema }],
      messages: [
        { role: Role.USER, id: "m0", content: [text("first question")] },
        { role: Role.ASSISTANT, id: "m1", producedByProvider: "google", content: [text("first answer")] },
        { role: Role.USER, id: "m2", content: [text("second question")] },
      ],
      cacheBreakpoints: [
        { position: { case: "afterTools" as const, value: {} } },
        { position: { case: "afterMessageIndex" as const, value: 1n } },
      ],
    };
    fake.push(scenarios.text("one"), scenarios.text("two"));
    const first = await complete(req);
    expect(first.error).toBeUndefined();
    expect(cases(first.events)).not.toContain("error");
    expect(fake.cachedContents.size).toBe(1);
    const [name, cache] = [...fake.cachedContents.entries()][0]!;
    // System instruction and tools only: the conversation is left to implicit caching.
    expect(cache).toMatchObject({
      model: `models/${FLASH}`,
      ttl: "300s",
      systemInstruction: { parts: [{ text: "Static project context." }] },
    });
    expect(cache["tools"]).toBeDefined();
    expect(cache["contents"]).toBeUndefined();
    const sent = fake.requests.at(-1)!;
    expect(sent.rejected).toBeFalsy();
    expect(sent.json).toMatchObject({ cachedContent: name });
    expect((sent.json as { contents: unknown[] }).contents).toHaveLength(3);
    expect(Object.keys(sent.json as object)).not.toContain("systemInstruction");
    expect(Object.keys(sent.json as object)).not.toContain("tools");

    // The creation is in the ledger: its tokens once at the input rate, and five minutes of
    // storage at $1 per million tokens per hour; then the completion's own usage.
    const usages = only(first.events, "usage");
    expect(usages).toHaveLength(2);
    const tokens = Number((cache["usageMetadata"] as { totalTokenCount: number }).totalTokenCount);
    expect(usages[0]).toMatchObject({
      inputTokens: 0n,
      cacheWriteTokens: BigInt(tokens),
      cacheStorageTokenSeconds: BigInt(tokens * 300),
    });
    const rec = recordUsage(usages[0]!, specs.get(FLASH)!.pricing!, timestampFromMs(Date.now()));
    expect(rec.costUsd).toBeCloseTo((tokens * 0.1 + (tokens * 300 * 1) / 3600) / 1e6, 15);

    const second = await complete(req);
    expect(only(second.events, "usage")).toHaveLength(1);
    const creations = fake.otherRequests.filter(
      (r) => r.method === "POST" && r.path.endsWith("/cachedContents"),
    );
    expect(creations).toHaveLength(1);
    expect(fake.requests.at(-1)!.json).toMatchObject({ cachedContent: name });
    expect(creations[0]!.headers["x-goog-api-key"]).toBe(CANARY);

    expect((await client.configure({ config: config() })).result!.diagnostics).toEqual([]);
    expect(fake.cachedContents.size).toBe(0);
  });

  it("prices a long prompt on gemini-3.1-pro-preview at the >200K rate card", async () => {
    fake.push(scenarios.text("long", { usage: { inputTokens: 250_000, outputTokens: 1000 } }));
    const res = await complete({ modelId: PRO, params: { thinkingEffort: "medium" } });
    expect(lastBody()["generationConfig"]).toMatchObject({ thinkingConfig: { thinkingLevel: "MEDIUM" } });
    const u = only(res.events, "usage")[0]!;
    const rec = recordUsage(u, specs.get(PRO)!.pricing!, timestampFromMs(Date.now()));
    expect(rec.pricingTierIndex).toBe(1);
    expect(rec.costUsd).toBeCloseTo((250_000 * 4 + 1000 * 18) / 1e6, 12);
  });

  it("picks the >200K rate card by the whole prompt, cached content included, as Gemini counts it", async () => {
    fake.push(
      scenarios.text("long", {
        usage: { inputTokens: 50_000, cacheReadTokens: 200_000, outputTokens: 1000 },
      }),
    );
    const res = await complete({ modelId: PRO, params: { thinkingEffort: "low" } });
    const u = only(res.events, "usage")[0]!;
    expect([u.inputTokens, u.cacheReadTokens]).toEqual([50_000n, 200_000n]);
    const rec = recordUsage(u, specs.get(PRO)!.pricing!, timestampFromMs(Date.now()));
    expect(rec.pricingTierIndex).toBe(1);
    expect(rec.costUsd).toBeCloseTo((50_000 * 4 + 200_000 * 0.4 + 1000 * 18) / 1e6, 12);
  });

  it("maps safety stops to content_filtered with a notice, and the output limit", async () => {
    fake.push(scenarios.refusal());
    const r = await complete();
    expect(only(r.events, "stop")[0]!.reason).toBe(StopReason.CONTENT_FILTERED);
    expect(only(r.events, "safetyNotice")[0]).toMatchObject({
      kind: SafetyKind.MODERATION,
      attrs: { finish_reason: "SAFETY" },
    });
    fake.push(scenarios.maxTokens());
    const m = await complete();
    expect(only(m.events, "stop")[0]!.reason).toBe(StopReason.MAX_TOKENS);
  });
});

describe("stop sequences", () => {
  const textOf = (events: Awaited<ReturnType<typeof complete>>["events"]) =>
    only(events, "textDelta")
      .map((t) => t.text)
      .join("");

  it("matches a stop sequence split across deltas itself, drops what follows and still reports usage", async () => {
    fake.push({
      kind: "turn",
      blocks: [
        { type: "thinking", text: "Count to three." },
        { type: "text", text: "one two END three", deltas: ["one tw", "o E", "ND th", "ree"] },
        { type: "tool_call", name: "read_file", args: { path: "after.txt" } },
      ],
      usage: { inputTokens: 12, outputTokens: 8, reasoningTokens: 5 },
    });
    const { events, error } = await complete({ params: { stopSequences: ["END", "never"] } });
    expect(error).toBeUndefined();
    // Gemini never hears of the sequences: it would cut the match out and answer a plain STOP.
    expect(lastBody()["generationConfig"]).not.toHaveProperty("stopSequences");
    expect(only(events, "thinkingDelta").map((t) => t.text)).toEqual(["Count to three."]);
    expect(textOf(events)).toBe("one two ");
    expect(only(events, "toolCallStart")).toEqual([]);
    expect(cases(events).slice(-2)).toEqual(["usage", "stop"]);
    expect(only(events, "stop")).toHaveLength(1);
    expect(only(events, "stop")[0]).toMatchObject({
      reason: StopReason.STOP_SEQUENCE,
      matchedStopSequence: "END",
    });
    // The figures of the last chunk: the body was read to its end after the match.
    const u = only(events, "usage")[0]!;
    expect([u.inputTokens, u.outputTokens, u.reasoningTokens]).toEqual([12n, 8n, 5n]);
    const acc = accumulate(events, specs.get(FLASH)!, "google");
    expect(acc.error).toBeUndefined();
    expect(acc.stop).toMatchObject({ reason: StopReason.STOP_SEQUENCE, matchedStopSequence: "END" });
    expect(acc.message.content.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : []))).toEqual(
      ["one two "],
    );
    expect(acc.usage).toHaveLength(1);
  });

  it("releases text held as a possible match when none follows, in order before a function call", async () => {
    fake.push({
      kind: "turn",
      blocks: [
        { type: "text", text: "Looking E", deltas: ["Looking E"] },
        { type: "tool_call", name: "read_file", args: { path: "a.txt" } },
      ],
    });
    const first = await complete({ params: { stopSequences: ["END"] } });
    expect(first.error).toBeUndefined();
    const kinds = cases(first.events);
    expect(kinds.lastIndexOf("textDelta")).toBeLessThan(kinds.indexOf("toolCallStart"));
    expect(textOf(first.events)).toBe("Looking E");
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    expect(only(first.events, "stop")[0]!.matchedStopSequence).toBeUndefined();

    fake.push({ kind: "text", text: "the EN", deltas: ["the E", "N"] });
    const second = await complete({ params: { stopSequences: ["END"] } });
    expect(textOf(second.events)).toBe("the EN");
    expect(only(second.events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    expect(only(second.events, "stop")[0]!.matchedStopSequence).toBeUndefined();
  });
});

describe("parallel tool calls", () => {
  it("streams several calls in one turn, each with its own id and arguments", async () => {
    fake.push(scenarios.parallelToolCalls());
    const { events } = await complete();
    const starts = only(events, "toolCallStart");
    expect(starts.map((s) => s.name)).toEqual(["read_file", "read_file", "list_dir"]);
    expect(new Set(starts.map((s) => s.id)).size).toBe(3);
    expect(only(events, "toolCallDone").map((d) => d.id)).toEqual(starts.map((s) => s.id));
    const acc = accumulate(events, specs.get(FLASH)!, "google");
    const inputs = acc.message.content.flatMap((b) =>
      b.block.case === "toolUse" ? [b.block.value.input] : [],
    );
    expect(inputs).toEqual([{ path: "a.txt" }, { path: "b.txt" }, { path: "." }]);
    expect(acc.invalidToolCalls).toEqual([]);
    expect(only(events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
  });
});

describe("errors", () => {
  const errorOf = (events: Awaited<ReturnType<typeof complete>>["events"]) => only(events, "error")[0];

  it.each([
    ["429", scenarios.rateLimited(34), ModelErrorCategory.RATE_LIMITED, true, 34, "RESOURCE_EXHAUSTED"],
    ["503", scenarios.serverError(503), ModelErrorCategory.OVERLOADED, true, undefined, "UNAVAILABLE"],
    ["500", scenarios.serverError(500), ModelErrorCategory.OVERLOADED, true, undefined, "INTERNAL"],
    [
      "400 bad key",
      { kind: "error" as const, status: 400, message: "API key not valid. Please pass a valid API key." },
      ModelErrorCategory.AUTH_ERROR,
      false,
      undefined,
      "INVALID_ARGUMENT",
    ],
    [
      "403",
      { kind: "error" as const, status: 403 },
      ModelErrorCategory.AUTH_ERROR,
      false,
      undefined,
      "PERMISSION_DENIED",
    ],
    [
      "400 context",
      {
        kind: "error" as const,
        status: 400,
        message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
      },
      ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
      false,
      undefined,
      "INVALID_ARGUMENT",
    ],
  ])("classifies HTTP %s", async (_n, entry, category, retryable, retryAfter, code) => {
    fake.push(entry);
    const { events } = await complete();
    const e = errorOf(events)!;
    expect(cases(events).at(-1)).toBe("error");
    expect([e.category, e.retryable, e.retryAfterSeconds, e.vendorCode]).toEqual([
      category,
      retryable,
      retryAfter,
      code,
    ]);
  });

  it("reports an in-band error, a dropped connection and a malformed frame", async () => {
    fake.push(scenarios.midStreamError({ afterFrames: 2 }));
    const mid = await complete();
    expect(cases(mid.events)).toContain("textDelta");
    expect(errorOf(mid.events)).toMatchObject({
      category: ModelErrorCategory.OVERLOADED,
      retryable: true,
      httpStatus: 200,
    });
    fake.push(scenarios.droppedConnection({ afterFrames: 2 }));
    expect(errorOf((await complete()).events)).toMatchObject({
      category: ModelErrorCategory.OVERLOADED,
      vendorCode: "transport_error",
    });
    fake.push(scenarios.malformedFrame({ afterFrames: 2 }));
    expect(errorOf((await complete()).events)).toMatchObject({
      category: ModelErrorCategory.UNKNOWN,
      vendorCode: "malformed_frame",
    });
  });

  it("ends quietly when a stalled stream is cancelled", async () => {
    fake.push(scenarios.stall({ afterFrames: 2 }));
    const controller = new AbortController();
    const pending = complete({}, controller.signal);
    await fake.waitForStall();
    controller.abort();
    expect(cases((await pending).events)).not.toContain("error");
    fake.push(scenarios.text("after"));
    expect(only((await complete()).events, "stop")).toHaveLength(1);
  });

  it("rejects images and documents for a model without them before any request", async () => {
    const before = fake.requests.length;
    const { events } = await complete({
      modelId: BLIND,
      messages: [
        {
          role: Role.USER,
          id: "m0",
          content: [
            {
              block: {
                case: "image",
                value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1]) } },
              },
            },
          ],
        },
      ],
    });
    expect(errorOf(events)).toMatchObject({ category: ModelErrorCategory.INVALID_REQUEST, retryable: false });
    expect(fake.requests.length).toBe(before);
  });
});

describe("token counting and secrets", () => {
  it("counts tokens with models.countTokens", async () => {
    expect((await client.countTokens({ text: "count me", modelId: FLASH })).count).toBe(17n);
    const sent = [...fake.otherRequests, ...fake.requests].find((r) => r.path.endsWith(":countTokens"));
    expect(sent?.json).toEqual({ contents: [{ role: "user", parts: [{ text: "count me" }] }] });
  });

  it("never lets the API key reach an error or a log line", async () => {
    fake.push({ kind: "error", status: 400, message: `API key not valid: ${CANARY}` });
    const { events } = await complete();
    expect(JSON.stringify(only(events, "error"))).not.toContain(CANARY);
    expect(logs.filter((l) => JSON.stringify(l).includes(CANARY))).toEqual([]);
  });
});

describe("thought signatures and call ids across fallback (Gemini 3)", () => {
  const G3 = "gemini-3.8-flash";
  type Block = MessageInitShape<typeof ContentBlockSchema>;
  const use = (id: string, name = "read_file"): Block => ({
    block: { case: "toolUse", value: { id, name, input: { path: "a.txt" } } },
  });
  const result = (id: string, out: string): Block => ({
    block: { case: "toolResult", value: { toolUseId: id, content: [text(out)] } },
  });
  const modelParts = () =>
    lastBody()
      .contents.filter((c) => c.role === "model")
      .map((c) => c.parts);

  it("puts the placeholder signature on calls Gemini 3 never signed (another vendor's, Gemini 2.5's)", async () => {
    fake.push(scenarios.text("Done."));
    const res = await complete({
      modelId: G3,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt and b.txt")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          producedByModelId: "claude-sonnet-5",
          content: [text("Reading both."), use("toolu_1"), use("toolu_2")],
        },
        { role: Role.USER, id: "m2", content: [result("toolu_1", "a"), result("toolu_2", "b")] },
        {
          role: Role.ASSISTANT,
          id: "m3",
          producedByProvider: "google",
          producedByModelId: FLASH,
          content: [use(`gemini_local_r1_0`)],
        },
        { role: Role.USER, id: "m4", content: [result("gemini_local_r1_0", "again")] },
      ],
    });
    expect(res.error).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    const [first, second] = modelParts();
    // One placeholder per step, on its first call (as Gemini signs parallel calls).
    expect(first).toEqual([
      { text: "Reading both." },
      {
        functionCall: { name: "read_file", args: { path: "a.txt" } },
        thoughtSignature: "skip_thought_signature_validator",
      },
      { functionCall: { name: "read_file", args: { path: "a.txt" } } },
    ]);
    expect(second).toEqual([
      {
        functionCall: { name: "read_file", args: { path: "a.txt" } },
        thoughtSignature: "skip_thought_signature_validator",
      },
    ]);
  });

  it("never replaces a real signature, and sends none to a model that does not require them", async () => {
    fake.push(scenarios.text("ok"));
    const signed: MessageInitShape<typeof MessageSchema> = {
      role: Role.ASSISTANT,
      id: "m1",
      producedByProvider: "google",
      content: [{ block: { case: "thinking", value: { text: "", signature: utf8("real-sig") } } }, use("c1")],
    };
    const history: MessageInitShape<typeof MessageSchema>[] = [
      { role: Role.USER, id: "m0", content: [text("go")] },
      signed,
      { role: Role.USER, id: "m2", content: [result("c1", "x")] },
    ];
    await complete({ modelId: G3, messages: history });
    expect(modelParts()[0]![0]!["thoughtSignature"]).toBe("real-sig");
    fake.push(scenarios.text("ok"));
    await complete({
      modelId: FLASH,
      messages: [history[0]!, { ...signed, content: [use("c1")] }, history[2]!],
    });
    expect(modelParts()[0]![0]!["thoughtSignature"]).toBeUndefined();
  });

  it("echoes a call id Gemini returned on the call and on its response, and only those", async () => {
    fake.push({
      kind: "tool_calls",
      calls: [{ name: "read_file", args: { path: "a.txt" }, id: "fc-7a2", signature: "s1" }],
    });
    const first = await complete({ modelId: G3 });
    const msg = accumulate(first.events, specs.get(G3)!, "google").message;
    const id = (msg.content.find((b) => b.block.case === "toolUse")!.block.value as { id: string }).id;
    expect(id).toBe("fc-7a2");
    fake.push(scenarios.text("ok"));
    await complete({
      modelId: G3,
      messages: [
        { role: Role.USER, id: "m0", content: [text("read")] },
        { ...msg, producedByProvider: "google" },
        { role: Role.USER, id: "m2", content: [result(id, "hi")] },
      ],
    });
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    const contents = lastBody().contents;
    expect(contents[1]!.parts[0]).toEqual({
      functionCall: { id: "fc-7a2", name: "read_file", args: { path: "a.txt" } },
      thoughtSignature: "s1",
    });
    expect(contents[2]!.parts[0]).toEqual({
      functionResponse: { id: "fc-7a2", name: "read_file", response: { output: "hi" } },
    });
  });

  it("the validating fake refuses an unsigned current-turn call on Gemini 3 as the real API does", async () => {
    const res = await fetch(`${fake.url}/v1beta/models/${G3}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": CANARY, "content-type": "application/json" },
      body: JSON.stringify({
        contents: [
          { role: "user", parts: [{ text: "go" }] },
          { role: "model", parts: [{ functionCall: { name: "read_file", args: {} } }] },
          { role: "user", parts: [{ functionResponse: { name: "read_file", response: { output: "x" } } }] },
        ],
      }),
    });
    expect(res.status).toBe(400);
    const err = ((await res.json()) as { error: { status: string; message: string } }).error;
    expect(err.status).toBe("INVALID_ARGUMENT");
    expect(err.message).toContain("is missing a `thought_signature`");
  });
});

describe("typed stream chunks (issue 33)", () => {
  const frame = (data: Record<string, unknown>) => `data: ${JSON.stringify(data)}\n\n`;
  const parts = (...p: unknown[]) => ({ candidates: [{ content: { role: "model", parts: p } }] });
  const warned = (type: string) =>
    logs.filter((l) => l.level === "warn" && JSON.stringify(l).includes(`"type":"${type}"`));

  it("skips and logs once an unknown kind of part and a malformed part; the turn completes intact", async () => {
    fake.push({
      kind: "raw",
      headers: { "content-type": "text/event-stream" },
      frames: [
        frame({ responseId: "resp-typed", modelVersion: FLASH, ...parts({ text: "Hello " }) }),
        frame(parts({ executableCode: { language: "PYTHON", code: "print(1)" } })),
        // A known part that breaks its schema: a function call's name must be a string.
        frame(parts({ functionCall: { name: 42, args: {} } })),
        frame(parts({ executableCode: { language: "PYTHON", code: "print(2)" } })),
        frame({
          ...parts({ text: "world" }),
          candidates: [{ content: { role: "model", parts: [{ text: "world" }] }, finishReason: "STOP" }],
          usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 },
        }),
      ],
    });
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    expect(only(events, "toolCallStart")).toEqual([]);
    expect(only(events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    const msg = accumulate(events, specs.get(FLASH)!, "google").message;
    expect(msg.content.map((b) => b.block.value)).toEqual([expect.objectContaining({ text: "Hello world" })]);
    expect(only(events, "usage")[0]!.outputTokens).toBe(2n);
    await expect.poll(() => warned("part.executableCode").length).toBe(1);
    await expect.poll(() => warned("part").length).toBe(1);
    expect(JSON.stringify(warned("part")[0])).toContain("functionCall.name: invalid_type (expected string)");
  });
});
