// The OpenAI provider as a real plugin process against the loopback Responses fake
// (validate: true), over the runtime host. One launched plugin serves every test.
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
  str,
  text,
  textOf,
  toolResult,
  utf8,
} from "@pluggableharness/model-provider-testing";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  type ModelSpec,
  RateLimitKind,
  SafetyKind,
  StopReason,
  ThinkingDisable,
  ToolChoiceMode,
  type Usage,
  UsageSchema,
} from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { summaryText } from "../src/reasoning.ts";

const CANARY = "sk-proj-CANARY-5d1e9b7a3c";
const MAIN = new URL("../src/main.ts", import.meta.url);
const MODEL = "gpt-5.4";
const TEXT_ONLY = "gpt-text-only";

let fake: FakeVendor;
let plugin: Launched;
let client: Client;
let specs: Map<string, ModelSpec>;
let capsBeforeConfigure: ModelSpec[];

const config = (extra: Record<string, unknown> = {}) => ({
  api_key: CANARY,
  base_url: `${fake.url}/v1`,
  organization: "org-test",
  models_json: JSON.stringify({
    [TEXT_ONLY]: { like: "gpt-5.4", vision: false, documents: false },
    "gpt-6-sol": { like: "gpt-5.6-sol", context_window: 2000000 },
  }),
  ...extra,
});

beforeAll(async () => {
  fake = await startFakeVendor({
    vendor: "openai-responses",
    validate: true,
    apiKey: CANARY,
    countTokens: () => 42,
  });
  plugin = await launch("openai", MAIN);
  client = plugin.client;
  capsBeforeConfigure = (await client.getCapabilities({})).capabilities!.models;
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
    callContext: { sessionId: "s1", turnId: "t1", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;

const complete = (init: Partial<RequestInit> = {}, signal?: AbortSignal) =>
  collect(client, base(init), signal);
const lastBody = () => fake.requests.at(-1)!.json as Record<string, unknown>;
const inputOf = (body: Record<string, unknown>) => body.input as Array<Record<string, unknown>>;

/** The assistant message the kernel would persist for a completion. */
function assistant(events: Parameters<typeof accumulate>[0], modelId = MODEL): Message {
  const m = accumulate(events, specs.get(modelId)!, "openai").message;
  return create(MessageSchema, { ...m, producedByProvider: "openai", producedByModelId: modelId });
}

describe("capabilities and configuration", () => {
  it("serves the built-in catalog before Configure, and the kernel accepts it", async () => {
    const ids = capsBeforeConfigure.map((m) => m.id);
    expect(ids).toEqual([
      "gpt-5.6-sol",
      "gpt-5.6-terra",
      "gpt-5.6-luna",
      "gpt-5.5",
      "gpt-5.4",
      "gpt-5.4-mini",
      "gpt-5.3-codex",
      "gpt-5.1-codex-max",
    ]);
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(() => validateCapabilities("openai", caps)).not.toThrow();
    const sol = specs.get("gpt-5.6-sol")!;
    expect(sol.contextWindow).toBe(1_050_000n);
    expect(sol.thinking?.effort?.levels).toEqual(["none", "low", "medium", "high", "xhigh", "max"]);
    expect(sol.thinking?.disable).toBe(ThinkingDisable.ALWAYS);
    expect(specs.get("gpt-5.6-terra")!.thinking?.effort?.levels).not.toContain("max");
    expect(specs.get("gpt-5.1-codex-max")!.thinking?.disable).toBe(ThinkingDisable.NEVER);
    expect(specs.get("gpt-5.4")!.thinking?.effort?.default).toBe("none");
    expect(sol.caching).toMatchObject({ supported: true, implicitAutomatic: true, explicitMarkers: false });
    // Long-context tiers from 272,001 input tokens, and a dated price change.
    const tiers = sol.pricing!.tiers;
    expect(tiers.some((t) => t.inputTokensFrom === 272_001n && t.inputPerMtok === 10)).toBe(true);
    expect(tiers.filter((t) => t.effectiveFrom !== undefined).length).toBe(2);
    expect(tiers[0]!.batchInputPerMtok).toBe(2.5);
    // User-declared models: inherit, override, and keep declared capabilities.
    expect(specs.get("gpt-6-sol")!.contextWindow).toBe(2_000_000n);
    expect(specs.get(TEXT_ONLY)!.supportsVision).toBe(false);
    const key = caps.configSchema!.attributes.find((a) => a.name === "api_key")!;
    expect(key).toMatchObject({ required: true, sensitive: true });
  });

  it("rejects a missing key and a bad base URL without echoing a secret", async () => {
    const missing = await client.configure({ config: { base_url: fake.url } });
    const errs = missing.result!.diagnostics.filter((d) => d.severity === DiagnosticSeverity.ERROR);
    expect(errs.map((d) => d.attributePath[0])).toContain("api_key");
    const bad = await client.configure({ config: { api_key: CANARY, base_url: `ftp://${CANARY}.example` } });
    expect(bad.result!.diagnostics.some((d) => d.attributePath[0] === "base_url")).toBe(true);
    expect(JSON.stringify(bad.result)).not.toContain(CANARY);
    const plain = await client.configure({
      config: { api_key: CANARY, base_url: "http://proxy.example/v1" },
    });
    expect(plain.result!.diagnostics).toEqual([
      expect.objectContaining({ severity: DiagnosticSeverity.WARNING, attributePath: ["base_url"] }),
    ]);
    expect((await client.configure({ config: config() })).result!.diagnostics).toEqual([]);
  });
});

describe("streaming", () => {
  it("streams text with the request id, metadata, rate limits exactly as sent, usage and stop", async () => {
    fake.push(
      scenarios.text("Hello there, friend", {
        chunks: 3,
        usage: { inputTokens: 21, outputTokens: 3 },
        rateLimits: {
          requests: { limit: 500, remaining: 499, resetSeconds: 0.12 },
          tokens: { limit: 30000, remaining: 29000, resetSeconds: 360 },
        },
      }),
    );
    const before = Date.now();
    const { events, error } = await complete({
      assembledContext: [
        { provider: "ctx", label: "A", content: [text("Be brief.")] },
        { provider: "ctx", label: "B", content: [text("Use British spelling.")] },
      ],
    });
    const after = Date.now();
    expect(error).toBeUndefined();
    // Deltas that reach the provider in one read travel as one event (model-kit merge.ts).
    expect(cases(events).filter((c, i, all) => c !== "textDelta" || all[i - 1] !== "textDelta")).toEqual([
      "streamStart",
      "metadata",
      "metadata",
      "textDelta",
      "usage",
      "stop",
    ]);
    expect(only(events, "streamStart")[0]!.providerRequestId).toMatch(/^req_[0-9a-f]{32}$/);
    const [limits, served] = only(events, "metadata");
    expect(served!.actualModel).toBe(MODEL);
    expect(served!.serviceTier).toBe("default");
    const [req, tok] = limits!.rateLimits;
    expect([req!.kind, req!.limit, req!.remaining, req!.usedPercent]).toEqual([
      RateLimitKind.REQUESTS,
      500n,
      499n,
      undefined,
    ]);
    expect([tok!.kind, tok!.limit, tok!.remaining]).toEqual([RateLimitKind.TOKENS, 30000n, 29000n]);
    const resetMs = Number(tok!.resetsAt!.seconds) * 1000 + tok!.resetsAt!.nanos / 1e6;
    expect(resetMs).toBeGreaterThanOrEqual(before + 360_000 - 1);
    expect(resetMs).toBeLessThanOrEqual(after + 360_000 + 1);
    const usage = only(events, "usage")[0]!;
    expect([usage.inputTokens, usage.outputTokens, usage.reasoningTokens]).toEqual([21n, 3n, undefined]);
    expect(usage.rateLimits).toHaveLength(2);
    expect(only(events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    expect(textOf(events)).toBe("Hello there, friend");
    const sent = fake.requests.at(-1)!;
    expect(sent.json).toMatchObject({
      model: MODEL,
      stream: true,
      store: false,
      include: ["reasoning.encrypted_content"],
      instructions: "Be brief.\n\nUse British spelling.",
      input: [{ type: "message", role: "user", content: [{ type: "input_text", text: "Hello" }] }],
    });
    expect(sent.headers["authorization"]).toBe(`Bearer ${CANARY}`);
    expect(sent.headers["openai-organization"]).toBe("org-test");
  });

  it("round-trips a tool call with a renamed tool name and string arguments", async () => {
    const inputSchema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "path", schema: { type: "SCHEMA_TYPE_STRING", description: "File" } }],
      required: ["path"],
    });
    const tools = [{ name: "fs.read_file", description: "Read a file", inputSchema }];
    fake.push(scenarios.toolCallFragments({ name: "fs_read_file", args: { path: "a.txt" }, id: "call_A1" }));
    const first = await complete({
      tools,
      params: { toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "fs.read_file" } },
    });
    expect(only(first.events, "toolCallStart")[0]).toEqual(
      expect.objectContaining({ id: "call_A1", name: "fs.read_file" }),
    );
    // Fragments that reach the provider in one read travel merged (model-kit merge.ts).
    expect(only(first.events, "toolCallDelta").length).toBeGreaterThan(0);
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    const sentFirst = lastBody();
    expect(sentFirst.tools).toEqual([
      {
        type: "function",
        name: "fs_read_file",
        description: "Read a file",
        parameters: {
          type: "object",
          properties: { path: { type: "string", description: "File" } },
          required: ["path"],
        },
        strict: false,
      },
    ]);
    expect(sentFirst.tool_choice).toEqual({ type: "function", name: "fs_read_file" });

    const reply = assistant(first.events);
    const use = reply.content.find((b) => b.block.case === "toolUse")!.block.value as { input: unknown };
    expect(use.input).toEqual({ path: "a.txt" });

    fake.push(scenarios.text("The file says hi."));
    const second = await complete({
      tools,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt")] },
        reply,
        { role: Role.USER, id: "m2", content: [toolResult("call_A1", "hi")] },
      ],
    });
    expect(errorOf(second.events)).toBeUndefined();
    expect(textOf(second.events)).toBe("The file says hi.");
    const input = inputOf(lastBody());
    expect(input.map((i) => i.type)).toEqual(["message", "function_call", "function_call_output"]);
    expect(input[1]).toEqual({
      type: "function_call",
      call_id: "call_A1",
      name: "fs_read_file",
      arguments: '{"path":"a.txt"}',
    });
    expect(input[2]).toEqual({ type: "function_call_output", call_id: "call_A1", output: "hi" });
  });

  it("marks a failed tool result and carries its image as an input part", async () => {
    fake.push(scenarios.text("Noted."));
    // The validating fake checks that image/png bytes are a PNG (the signature).
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    const { events } = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Go")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "openai",
          content: [{ block: { case: "toolUse", value: { id: "call_B", name: "shot", input: {} } } }],
        },
        {
          role: Role.USER,
          id: "m2",
          content: [
            {
              block: {
                case: "toolResult",
                value: {
                  toolUseId: "call_B",
                  isError: true,
                  content: [
                    text("screen locked"),
                    {
                      block: {
                        case: "image",
                        value: { mediaType: "image/png", source: { case: "data", value: png } },
                      },
                    },
                  ],
                },
              },
            },
          ],
        },
      ],
    });
    expect(errorOf(events)).toBeUndefined();
    const out = inputOf(lastBody())[2]!;
    expect(out.output).toEqual([
      { type: "input_text", text: "Error: screen locked" },
      {
        type: "input_image",
        image_url: `data:image/png;base64,${Buffer.from(png).toString("base64")}`,
        detail: "auto",
      },
    ]);
  });
});

describe("reasoning summaries", () => {
  it("reads the summary parts through a schema: empty or non-text parts add nothing", () => {
    expect(
      summaryText({ summary: [{ type: "summary_text", text: "a" }, { text: 5 }, "b", { text: "c" }] }),
    ).toBe("a\n\nc");
    // All parts empty: no readable summary, so the item is kept as redacted thinking.
    expect(summaryText({ summary: [{ text: "" }, { text: "" }] })).toBe("");
    expect(summaryText({ summary: "not a list" })).toBe("");
    expect(summaryText(null)).toBe("");
  });
});

describe("reasoning items", () => {
  it("streams a summary as thinking and replays the item with encrypted_content verbatim", async () => {
    const blob = "gAAAAABfake-encrypted-Reasoning_0123456789+/=";
    fake.push(scenarios.thinking({ thinking: "Let me think about it.", signature: blob, text: "42" }));
    const first = await complete({ params: { thinkingEffort: "high" } });
    expect(lastBody().reasoning).toEqual({ effort: "high", summary: "auto" });
    expect(cases(first.events).filter((c) => c.startsWith("thinking"))).toContain("thinkingSignature");
    const reply = assistant(first.events);
    const thinking = reply.content[0]!.block;
    expect(thinking.case).toBe("thinking");
    const value = thinking.value as { text: string; signature?: Uint8Array };
    expect(value.text).toBe("Let me think about it.");
    const item = JSON.parse(str(value.signature)) as Record<string, unknown>;
    expect(item).toMatchObject({ type: "reasoning", encrypted_content: blob });
    expect(String(item.id)).toMatch(/^rs_/);

    fake.push(scenarios.text("Sure."));
    await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Q")] },
        reply,
        { role: Role.USER, id: "m2", content: [text("And?")] },
      ],
    });
    const input = inputOf(lastBody());
    expect(input[1]).toEqual(item);
    expect(input[1]!.encrypted_content).toBe(blob);
    expect(input[2]).toEqual({
      type: "message",
      role: "assistant",
      content: "42",
    });
  });

  it("turns a summary-less encrypted item into redacted_thinking and echoes it back", async () => {
    const data = "gAAAAABredacted-opaque-state==";
    fake.push(scenarios.redactedThinking({ data, text: "Done." }));
    const first = await complete();
    const redacted = only(first.events, "redactedThinking");
    expect(redacted).toHaveLength(1);
    expect(JSON.parse(str(redacted[0]!.data))).toMatchObject({
      type: "reasoning",
      summary: [],
      encrypted_content: data,
    });
    const reply = assistant(first.events);
    fake.push(scenarios.text("ok"));
    await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Q")] },
        reply,
        { role: Role.USER, id: "m2", content: [text("More")] },
      ],
    });
    expect(inputOf(lastBody())[1]).toMatchObject({ type: "reasoning", encrypted_content: data });
  });

  it("accepts an Anthropic-produced history: its signed thinking is left out, the rest is carried", async () => {
    fake.push(scenarios.text("Continuing."));
    const { events } = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("List files")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          producedByModelId: "claude-sonnet-4-6",
          content: [
            {
              block: {
                case: "thinking",
                value: { text: "I should call ls.", signature: utf8("EqQBCgIYAhIM-anthropic-sig") },
              },
            },
            { block: { case: "redactedThinking", value: { data: utf8("anthropic-redacted-blob") } } },
            text("Listing."),
            { block: { case: "toolUse", value: { id: "toolu_01X", name: "ls", input: { dir: "." } } } },
          ],
        },
        { role: Role.USER, id: "m2", content: [toolResult("toolu_01X", "a.txt\nb.txt")] },
      ],
    });
    expect(errorOf(events)).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeFalsy();
    const input = inputOf(lastBody());
    expect(input.map((i) => i.type)).toEqual(["message", "message", "function_call", "function_call_output"]);
    expect(JSON.stringify(input)).not.toContain("anthropic-sig");
    expect(JSON.stringify(input)).not.toContain("I should call ls");
  });
});

describe("usage and cost", () => {
  const at = (iso: string) => timestampFromMs(Date.parse(iso));
  const usageOf = async (extraHeaders?: Record<string, string>) => {
    fake.push(
      scenarios.text("Priced.", {
        usage: {
          inputTokens: 1000,
          cacheReadTokens: 2000,
          cacheWriteTokens: 100,
          outputTokens: 300,
          reasoningTokens: 200,
        },
        ...(extraHeaders ? { headers: extraHeaders } : {}),
      }),
    );
    const { events } = await complete();
    return only(events, "usage")[0]! as Usage;
  };

  it("reports cached reads and writes apart from input, and keeps folded reasoning as a component", async () => {
    const usage = await usageOf();
    expect([usage.inputTokens, usage.cacheReadTokens, usage.cacheWriteTokens, usage.outputTokens]).toEqual([
      1000n,
      2000n,
      100n,
      500n,
    ]);
    expect(usage.reasoningTokens).toBeUndefined();
    expect(usage.reasoningAlreadyCounted).toBeUndefined();
    expect(usage.vendorTotalTokens).toBeUndefined();
    expect(usage.components.map((c) => [c.name, c.value])).toEqual([
      ["output_tokens_details.reasoning_tokens", 200n],
    ]);
    // gpt-5.4: $2.50 in, $15 out, $0.25 cached read, cache writes at the input rate.
    const record = recordUsage(usage, specs.get(MODEL)!.pricing!, at("2026-09-01T00:00:00Z"));
    const hand = (1000 * 2.5 + 500 * 15 + 2000 * 0.25 + 100 * 2.5) / 1e6;
    expect(record.costUsd).toBeCloseTo(hand, 12);
    expect(record.costUsd).toBe(0.01075);
  });

  it("sets reasoning_already_counted only on the vendor's explicit signal", async () => {
    const usage = await usageOf({ "x-reasoning-included": "true" });
    expect(usage.reasoningTokens).toBe(200n);
    expect(usage.reasoningAlreadyCounted).toBe(true);
    expect(usage.components).toEqual([]);
    const record = recordUsage(usage, specs.get(MODEL)!.pricing!, at("2026-09-01T00:00:00Z"));
    expect(record.costUsd).toBe(0.01075);
  });

  it("prices by the tier in force at receipt time and by input size", async () => {
    const terra = specs.get("gpt-5.6-terra")!.pricing!;
    const u = (input: bigint) => create(UsageSchema, { inputTokens: input, outputTokens: 1000n });
    const july = recordUsage(u(1000n), terra, at("2026-07-15T00:00:00Z"));
    const august = recordUsage(u(1000n), terra, at("2026-08-15T00:00:00Z"));
    expect(july.costUsd).toBeCloseTo((1000 * 2.5 + 1000 * 15) / 1e6, 12);
    expect(august.costUsd).toBeCloseTo((1000 * 2 + 1000 * 12) / 1e6, 12);
    const long = recordUsage(u(300_000n), terra, at("2026-08-15T00:00:00Z"));
    expect(long.costUsd).toBeCloseTo((300_000 * 4 + 1000 * 18) / 1e6, 12);
  });
});

describe("errors", () => {
  const failWith = async (entry: Parameters<FakeVendor["push"]>[0]) => {
    fake.push(entry);
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    return { events, err: errorOf(events)! };
  };

  it("classifies a 429 with retry-after as rate_limited and retryable", async () => {
    const { events, err } = await failWith(scenarios.rateLimited(7));
    expect(err).toMatchObject({
      categoryName: "RATE_LIMITED",
      retryable: true,
      retryAfterSeconds: 7,
      httpStatus: 429,
    });
    expect(err.vendorCode).toBe("rate_limit_exceeded");
    // The budgets reported on the 429 are surfaced before the error.
    expect(cases(events)).toEqual(["streamStart", "metadata", "error"]);
    expect(
      only(events, "metadata")[0]!.rateLimits.find((r) => r.kind === RateLimitKind.TOKENS)?.remaining,
    ).toBe(0n);
  });

  it("takes the retry hint from the body when no header carries one", async () => {
    const { err } = await failWith({
      kind: "error",
      status: 429,
      message: "Rate limit reached for gpt-5.4 on tokens per min. Please try again in 1.5s.",
    });
    expect(err.retryAfterSeconds).toBe(1.5);
  });

  it("treats insufficient_quota as a billing problem that must not be retried", async () => {
    const { err } = await failWith(scenarios.insufficientQuota());
    expect(err).toMatchObject({
      categoryName: "AUTH_ERROR",
      retryable: false,
      vendorCode: "insufficient_quota",
    });
    expect(err.retryAfterSeconds).toBeUndefined();
  });

  it.each([
    [500, "OVERLOADED", true],
    [503, "OVERLOADED", true],
    [529, "OVERLOADED", true],
    [401, "AUTH_ERROR", false],
    [404, "INVALID_REQUEST", false],
  ])("classifies HTTP %i as %s (retryable %s)", async (status, category, retryable) => {
    const { err } = await failWith(scenarios.serverError(status));
    expect(err).toMatchObject({ categoryName: category, retryable, httpStatus: status });
  });

  it("honours x-should-retry: false on a 5xx", async () => {
    const { err } = await failWith(scenarios.serverError(500, { shouldRetry: false }));
    expect(err).toMatchObject({ categoryName: "OVERLOADED", retryable: false });
  });

  it("recognises context_length_exceeded in a 400", async () => {
    const { err } = await failWith({
      kind: "error",
      status: 400,
      code: "context_length_exceeded",
      message: "Your input exceeds the context window of this model.",
    });
    expect(err).toMatchObject({ categoryName: "CONTEXT_LENGTH_EXCEEDED", retryable: false });
  });

  it("reports an in-band error mid-stream as an error event after the text so far", async () => {
    const { events, err } = await failWith(scenarios.midStreamError({ afterFrames: 5 }));
    expect(only(events, "textDelta").length).toBeGreaterThan(0);
    expect(err).toMatchObject({ categoryName: "OVERLOADED", retryable: true, vendorCode: "server_error" });
    expect(events.at(-1)!.event.case).toBe("error");
  });

  it("classifies an in-band quota error by its code", async () => {
    const { err } = await failWith(
      scenarios.midStreamError({
        afterFrames: 3,
        errorType: "insufficient_quota",
        code: "insufficient_quota",
      }),
    );
    expect(err).toMatchObject({ categoryName: "AUTH_ERROR", retryable: false });
  });

  it("reports a dropped connection and a hang-up as retryable transport failures", async () => {
    const dropped = await failWith(scenarios.droppedConnection({ afterFrames: 4 }));
    expect(dropped.err).toMatchObject({
      categoryName: "OVERLOADED",
      retryable: true,
      vendorCode: "transport_error",
    });
    const hung = await failWith(scenarios.hangup());
    expect(hung.err).toMatchObject({ categoryName: "OVERLOADED", retryable: true });
  });

  it("reports a malformed frame as unknown and not retryable, with the frame", async () => {
    const { err } = await failWith(scenarios.malformedFrame({ afterFrames: 3 }));
    expect(err).toMatchObject({ categoryName: "UNKNOWN", retryable: false, vendorCode: "malformed_frame" });
    expect(err.vendorBody).toContain("unterminated");
  });

  it("ends quietly when the kernel cancels a stalled stream", async () => {
    fake.push(scenarios.stall({ afterFrames: 4 }));
    const controller = new AbortController();
    const pending = complete({}, controller.signal);
    await fake.waitForStall();
    controller.abort();
    const { events } = await pending;
    expect(only(events, "error")).toEqual([]);
    expect(only(events, "stop")).toEqual([]);
    // The plugin keeps serving.
    fake.push(scenarios.text("alive"));
    expect(textOf((await complete()).events)).toBe("alive");
  });
});

describe("content rules and parameters", () => {
  const png = {
    block: {
      case: "image" as const,
      value: {
        mediaType: "image/png",
        source: {
          case: "data" as const,
          value: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
        },
      },
    },
  };
  const pdf = {
    block: {
      case: "document" as const,
      value: { mediaType: "application/pdf", data: utf8("%PDF-1.4"), filename: "spec.pdf" },
    },
  };

  it("rejects images and documents for a model without support, before any request", async () => {
    const before = fake.requests.length;
    for (const block of [png, pdf]) {
      const { events } = await complete({
        modelId: TEXT_ONLY,
        messages: [{ role: Role.USER, id: "m0", content: [text("Look"), block] }],
      });
      expect(errorOf(events)).toMatchObject({ categoryName: "INVALID_REQUEST", retryable: false });
    }
    expect(fake.requests.length).toBe(before);
  });

  it("sends images and documents to a model that takes them", async () => {
    fake.push(scenarios.text("Seen."));
    await complete({ messages: [{ role: Role.USER, id: "m0", content: [text("Look"), png, pdf] }] });
    const parts = (inputOf(lastBody())[0]!.content as Array<Record<string, unknown>>).map((p) => p.type);
    expect(parts).toEqual(["input_text", "input_image", "input_file"]);
    expect((inputOf(lastBody())[0]!.content as Array<Record<string, unknown>>)[2]).toMatchObject({
      filename: "spec.pdf",
      file_data: `data:application/pdf;base64,${Buffer.from("%PDF-1.4").toString("base64")}`,
    });
  });

  it("enforces stop sequences across deltas and reports which one matched", async () => {
    fake.push({ kind: "text", text: "Alpha #### beta gamma", deltas: ["Alpha #", "#", "# beta", " gamma"] });
    const { events } = await complete({ params: { stopSequences: ["###", "never"] } });
    expect(textOf(events)).toBe("Alpha ");
    expect(only(events, "stop")[0]).toMatchObject({
      reason: StopReason.STOP_SEQUENCE,
      matchedStopSequence: "###",
    });
    expect(only(events, "usage")).toHaveLength(1);
    expect(lastBody().stop).toBeUndefined();
  });

  it("reports an answer left incomplete because the context window is full as context_length_exceeded", async () => {
    fake.push(scenarios.text("half", { vendorStopReason: "context_window_exceeded" }));
    const { events } = await complete();
    expect(only(events, "stop")).toHaveLength(0);
    expect(only(events, "error")[0]).toMatchObject({ category: ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED });
  });

  it("maps max_tokens, refusal, a content filter and a renamed model", async () => {
    fake.push(scenarios.maxTokens());
    expect(only((await complete()).events, "stop")[0]!.reason).toBe(StopReason.MAX_TOKENS);
    fake.push(scenarios.refusal({ explanation: "I can't help with that." }));
    const refused = await complete();
    expect(only(refused.events, "stop")[0]!.reason).toBe(StopReason.REFUSAL);
    expect(textOf(refused.events)).toBe("I can't help with that.");
    fake.push(scenarios.text("partial", { stopReason: "content_filter" }));
    const filtered = await complete();
    expect(only(filtered.events, "stop")[0]!.reason).toBe(StopReason.CONTENT_FILTERED);
    expect(only(filtered.events, "safetyNotice")[0]).toMatchObject({ kind: SafetyKind.MODERATION });
    fake.push(scenarios.text("hi", { model: "gpt-5.4-2026-03-05" }));
    const remapped = await complete();
    expect(only(remapped.events, "metadata").map((m) => m.actualModel)).toContain("gpt-5.4-2026-03-05");
  });

  it("passes documented provider_options and rejects unknown ones", async () => {
    fake.push(scenarios.text("ok"));
    await complete({
      params: { maxOutputTokens: 77n, temperature: 0.2 },
      providerOptions: { service_tier: "flex", prompt_cache_key: "session-1", reasoning_summary: "detailed" },
    });
    expect(lastBody()).toMatchObject({
      service_tier: "flex",
      prompt_cache_key: "session-1",
      max_output_tokens: 77,
      temperature: 0.2,
      reasoning: { summary: "detailed" },
    });
    const before = fake.requests.length;
    const { events } = await complete({ providerOptions: { frequency_penalty: 1 } });
    expect(errorOf(events)).toMatchObject({ categoryName: "INVALID_REQUEST" });
    expect(errorOf(events)!.message).toContain("frequency_penalty");
    expect(fake.requests.length).toBe(before);
  });

  it("sends the session id as prompt_cache_key unless provider_options names one", async () => {
    fake.push(scenarios.text("ok"));
    await complete();
    expect(lastBody()["prompt_cache_key"]).toBe("s1");
    fake.push(scenarios.text("ok"));
    await complete({ providerOptions: { prompt_cache_key: "shared-prefix" } });
    expect(lastBody()["prompt_cache_key"]).toBe("shared-prefix");
  });

  it("counts tokens exactly with the vendor's counter", async () => {
    const res = await client.countTokens({ text: "count me", modelId: MODEL });
    expect(res.count).toBe(42n);
    expect(fake.requests.length).toBeGreaterThan(0);
    const counted = fake.otherRequests.concat(fake.requests).find((r) => r.path.endsWith("/input_tokens"));
    expect(counted?.json).toEqual({ model: MODEL, input: "count me" });
  });
});

describe("secrets", () => {
  it("never puts the key in an error or a log line, even when the vendor echoes it", async () => {
    fake.push({
      kind: "error",
      status: 401,
      code: "invalid_api_key",
      message: `Incorrect API key provided: ${CANARY}.`,
    });
    const { events } = await complete();
    const err = errorOf(events)!;
    expect(err.categoryName).toBe("AUTH_ERROR");
    expect(JSON.stringify(events, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(CANARY);
    expect(err.message).toContain("[redacted]");
    expect(plugin.logs.length).toBeGreaterThan(0);
    expect(plugin.logs.some((l) => JSON.stringify(l).includes(CANARY))).toBe(false);
  });
});

describe("vendor fidelity (issue 17)", () => {
  it("keeps commentary and the final answer as separate text blocks and resends each with its phase", async () => {
    fake.push({
      kind: "turn",
      blocks: [
        { type: "text", text: "Got it, looking.", chunks: 2, phase: "commentary" },
        { type: "tool_call", name: "ls", args: {}, id: "call_P1" },
      ],
    });
    const first = await complete({ modelId: "gpt-5.3-codex" });
    expect(errorOf(first.events)).toBeUndefined();
    fake.push({
      kind: "turn",
      blocks: [
        { type: "text", text: "Checking.", phase: "commentary" },
        { type: "text", text: "Here are the files.", phase: "final_answer" },
      ],
    });
    const second = await complete({ modelId: "gpt-5.3-codex" });
    const answer = assistant(second.events, "gpt-5.3-codex");
    const texts = answer.content.flatMap((b) => (b.block.case === "text" ? [b.block.value] : []));
    expect(texts.map((t) => t.text)).toEqual(["Checking.", "Here are the files."]);
    expect(texts.map((t) => str(t.vendorState!))).toEqual([
      '{"phase":"commentary"}',
      '{"phase":"final_answer"}',
    ]);

    fake.push(scenarios.text("ok"));
    const third = await complete({
      modelId: "gpt-5.3-codex",
      messages: [
        { role: Role.USER, id: "m0", content: [text("List")] },
        assistant(first.events, "gpt-5.3-codex"),
        { role: Role.USER, id: "m2", content: [toolResult("call_P1", "a.txt")] },
        answer,
        { role: Role.USER, id: "m4", content: [text("thanks")] },
      ],
    });
    expect(errorOf(third.events)).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    const messages = inputOf(lastBody()).filter((i) => i.type === "message" && i.role === "assistant");
    expect(messages).toEqual([
      {
        type: "message",
        role: "assistant",
        content: "Got it, looking.",
        phase: "commentary",
      },
      {
        type: "message",
        role: "assistant",
        content: "Checking.",
        phase: "commentary",
      },
      {
        type: "message",
        role: "assistant",
        content: "Here are the files.",
        phase: "final_answer",
      },
    ]);
  });

  it("never resends another vendor's block state as a phase", async () => {
    fake.push(scenarios.text("ok"));
    await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("hi")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          content: [
            {
              block: { case: "text", value: { text: "Hello", vendorState: utf8('{"phase":"commentary"}') } },
            },
          ],
        },
        { role: Role.USER, id: "m2", content: [text("again")] },
      ],
    });
    expect(inputOf(lastBody())[1]).toEqual({
      type: "message",
      role: "assistant",
      content: "Hello",
    });
  });

  it("expands the multi_tool_use.parallel wrapper into the separate calls it holds", async () => {
    const wrapped = {
      tool_uses: [
        { recipient_name: "functions.read_file", parameters: { path: "a.txt" } },
        { recipient_name: "functions.read_file", parameters: { path: "b.txt" } },
      ],
    };
    fake.push(scenarios.toolCallFragments({ name: "multi_tool_use.parallel", args: wrapped, id: "call_W" }));
    const { events } = await complete({ tools: [{ name: "read_file", description: "Read" }] as never });
    expect(errorOf(events)).toBeUndefined();
    const msg = assistant(events);
    expect(
      msg.content.flatMap((b) =>
        b.block.case === "toolUse" ? [[b.block.value.id, b.block.value.name, b.block.value.input]] : [],
      ),
    ).toEqual([
      ["call_W_1", "read_file", { path: "a.txt" }],
      ["call_W_2", "read_file", { path: "b.txt" }],
    ]);
    expect(only(events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
  });

  it("expands the wrapper named plain `parallel` only into declared tools, and never a declared `parallel`", async () => {
    const calls = (events: Parameters<typeof accumulate>[0]) =>
      assistant(events).content.flatMap((b) =>
        b.block.case === "toolUse" ? [[b.block.value.id, b.block.value.name, b.block.value.input]] : [],
      );
    const declared = [
      { name: "fs.read_file", description: "Read" },
      { name: "weather", description: "Weather" },
    ] as never;
    const batch = (...uses: unknown[]) => ({ tool_uses: uses });
    // The production spelling, recipients under their vendor names (fs.read_file is sent as
    // fs_read_file): mapped back to the declared names.
    fake.push(
      scenarios.toolCallFragments({
        name: "parallel",
        id: "call_P",
        args: batch(
          { recipient_name: "functions.fs_read_file", parameters: { path: "a.txt" } },
          { recipient_name: "functions.weather", parameters: { city: "Rome" } },
        ),
      }),
    );
    expect(calls((await complete({ tools: declared })).events)).toEqual([
      ["call_P_1", "fs.read_file", { path: "a.txt" }],
      ["call_P_2", "weather", { city: "Rome" }],
    ]);
    // Not the wrapper's shape, or naming a tool the request did not declare (a nested
    // wrapper included): passed on as the call it claims to be, which the kernel refuses.
    for (const args of [
      batch({ recipient_name: "functions.rm_rf", parameters: {} }),
      batch(
        { recipient_name: "functions.weather", parameters: { city: "Rome" } },
        { recipient_name: "functions.parallel", parameters: {} },
      ),
      batch({ recipient_name: "functions.weather", parameters: null }),
      batch({ recipient_name: "functions.weather", parameters: ["Rome"] }),
      batch(),
      { uses: [] },
    ]) {
      fake.push(scenarios.toolCallFragments({ name: "parallel", id: "call_Q", args }));
      expect(calls((await complete({ tools: declared })).events)).toEqual([["call_Q", "parallel", args]]);
    }
    // A tool the request itself declares as `parallel` is an ordinary call.
    const own = batch({ recipient_name: "functions.weather", parameters: { city: "Rome" } });
    fake.push(scenarios.toolCallFragments({ name: "parallel", id: "call_R", args: own }));
    const withParallel = [...(declared as unknown as object[]), { name: "parallel", description: "Mine" }];
    expect(calls((await complete({ tools: withParallel as never })).events)).toEqual([
      ["call_R", "parallel", own],
    ]);
  });

  it("sends temperature to a GPT-5.x model only at effort none, and never to a codex model", async () => {
    fake.push(scenarios.text("ok"));
    await complete({ modelId: "gpt-5.6-sol", params: { temperature: 0.4, topP: 0.8 } });
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    expect([lastBody().temperature, lastBody().top_p]).toEqual([undefined, undefined]);
    fake.push(scenarios.text("ok"));
    await complete({ modelId: "gpt-5.6-sol", params: { temperature: 0.4, thinkingEffort: "none" } });
    expect(lastBody()).toMatchObject({ temperature: 0.4, reasoning: { effort: "none" } });
    fake.push(scenarios.text("ok"));
    await complete({
      modelId: "gpt-5.3-codex",
      params: { temperature: 0.4 },
      providerOptions: { top_p: 0.5 },
    });
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    expect([lastBody().temperature, lastBody().top_p]).toEqual([undefined, undefined]);
  });

  it("classifies the vendor's model_not_found as invalid_request flagged model_not_found", async () => {
    fake.push({
      kind: "error",
      status: 404,
      code: "model_not_found",
      message: "The model `gpt-gone` does not exist or you do not have access to it.",
    });
    const e = errorOf((await complete()).events)!;
    expect([e.categoryName, e.retryable, e.modelNotFound]).toEqual(["INVALID_REQUEST", false, true]);
  });
});

describe("typed stream events (issue 33)", () => {
  const frame = (data: Record<string, unknown>) =>
    `event: ${String(data["type"])}\ndata: ${JSON.stringify(data)}\n\n`;
  const warned = (type: string) =>
    plugin.logs.filter((l) => l.level === "warn" && JSON.stringify(l).includes(`"type":"${type}"`));

  it("skips and logs once an unknown event type and a malformed known event; the turn completes intact", async () => {
    // Key order differs from the schema's: the item must still come back byte for byte.
    const item = { encrypted_content: "gAAAAB-opaque", summary: [], id: "rs_1", type: "reasoning", extra: 1 };
    const response = { id: "resp_1", model: MODEL, status: "completed", output: [] };
    fake.push({
      kind: "raw",
      headers: { "content-type": "text/event-stream" },
      frames: [
        frame({ type: "response.created", response: { ...response, status: "in_progress" } }),
        frame({ type: "response.future_thing", detail: 1 }),
        frame({ type: "response.output_item.done", output_index: 0, item }),
        frame({ type: "response.output_item.added", output_index: 1, item: { type: "message", id: "m1" } }),
        frame({ type: "response.output_text.delta", item_id: "m1", delta: "Hello " }),
        // A known event that breaks its schema: delta must be a string.
        frame({ type: "response.output_text.delta", item_id: "m1", delta: 42 }),
        frame({ type: "response.future_thing", detail: 2 }),
        frame({ type: "response.output_text.delta", item_id: "m1", delta: "world" }),
        frame({
          type: "response.completed",
          response: { ...response, usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } },
        }),
      ],
    });
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    expect(only(events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    const done = accumulate(events, specs.get(MODEL)!, "openai").message;
    const texts = done.content.filter((b) => b.block.case === "text").map((b) => b.block.value);
    expect(texts).toEqual([expect.objectContaining({ text: "Hello world" })]);
    const redacted = only(events, "redactedThinking")[0]!;
    expect(new TextDecoder().decode(redacted.data)).toBe(JSON.stringify(item));
    expect(only(events, "usage")[0]!.outputTokens).toBe(2n);
    await expect.poll(() => warned("response.future_thing").length).toBe(1);
    await expect.poll(() => warned("response.output_text.delta").length).toBe(1);
    expect(JSON.stringify(warned("response.output_text.delta")[0])).toContain(
      "delta: invalid_type (expected string)",
    );
  });
});
