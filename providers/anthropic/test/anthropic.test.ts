// The Anthropic provider as a real plugin process against the loopback Anthropic fake
// (validate: true), over the runtime host.

import { fromJson } from "@bufbuild/protobuf";
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
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { Role } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  type ModelSpec,
  RateLimitKind,
  SafetyKind,
  StopReason,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import type { PluginHost } from "@pluggableharness/runtime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CANARY = "sk-ant-CANARY-7f3a9c1e5b2d";
const MAIN = new URL("../src/main.ts", import.meta.url);
const TEXT_ONLY = "claude-text-only";

let fake: FakeVendor;
let host: PluginHost;
let client: Awaited<ReturnType<typeof launch>>["client"];
let logs: Awaited<ReturnType<typeof launch>>["logs"];
let specs: Map<string, ModelSpec>;

const config = (extra: Record<string, unknown> = {}) => ({
  api_key: CANARY,
  base_url: fake.url,
  models_json: JSON.stringify({
    [TEXT_ONLY]: { like: "claude-haiku-4-5-20251001", vision: false, documents: false },
  }),
  ...extra,
});

beforeAll(async () => {
  fake = await startFakeVendor({
    vendor: "anthropic",
    validate: true,
    apiKey: CANARY,
    countTokens: () => 42,
  });
  ({ host, client, logs } = await launch("anthropic", MAIN));
  const res = await client.configure({ config: config() });
  expect(res.result?.diagnostics).toEqual([]);
  const caps = await client.getCapabilities({});
  specs = new Map(caps.capabilities!.models.map((m) => [m.id, m]));
});

afterAll(async () => {
  await host?.shutdown();
  await fake?.close();
});

const SONNET = "claude-sonnet-4-6";
const base = (init: Partial<RequestInit> = {}): RequestInit =>
  ({
    modelId: SONNET,
    messages: [{ role: Role.USER, id: "m0", content: [text("Hello")] }],
    callContext: { sessionId: "s", turnId: "t", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;

async function complete(init: Partial<RequestInit> = {}, signal?: AbortSignal) {
  return collect(client, base(init), signal);
}

describe("capabilities and configuration", () => {
  it("declares a catalog the kernel accepts, with per-model thinking positions", async () => {
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(() => validateCapabilities("anthropic", caps)).not.toThrow();
    expect([...specs.keys()]).toEqual(
      expect.arrayContaining([
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-sonnet-4-6",
        "claude-haiku-4-5-20251001",
        TEXT_ONLY,
      ]),
    );
    const opus = specs.get("claude-opus-4-8")!;
    expect(opus.thinking?.adaptiveByDefault).toBe(true);
    expect(opus.thinking?.budget).toBeUndefined();
    expect(opus.thinking?.effort?.levels).toContain("xhigh");
    const sonnet = specs.get(SONNET)!;
    expect(sonnet.thinking?.budget?.deprecated).toBe(true);
    expect(sonnet.thinking?.effort?.default).toBe("high");
    const haiku = specs.get("claude-haiku-4-5-20251001")!;
    expect(haiku.thinking?.effort).toBeUndefined();
    expect(haiku.contextWindow).toBe(200_000n);
    expect(sonnet.caching).toMatchObject({
      supported: true,
      explicitMarkers: true,
      keepaliveSupported: true,
    });
    const key = caps.configSchema!.attributes.find((a) => a.name === "api_key")!;
    expect(key).toMatchObject({ required: true, sensitive: true });
  });

  it("rejects a missing key and a bad base URL with diagnostics that never echo a secret", async () => {
    const missing = await client.configure({ config: { base_url: fake.url } });
    expect(missing.result!.diagnostics.map((d) => d.summary)).toContain(
      'Missing required attribute "api_key"',
    );
    const bad = await client.configure({ config: { api_key: CANARY, base_url: `notaurl${CANARY}` } });
    const d = bad.result!.diagnostics;
    expect(d.some((x) => x.severity === DiagnosticSeverity.ERROR && x.attributePath[0] === "base_url")).toBe(
      true,
    );
    expect(JSON.stringify(d)).not.toContain(CANARY);
    // Restore the working configuration.
    expect((await client.configure({ config: config() })).result!.diagnostics).toEqual([]);
  });
});

describe("streaming", () => {
  it("streams text with the request id, metadata, rate limits, usage and stop", async () => {
    fake.push(
      scenarios.text("Hello there, friend", { chunks: 3, usage: { inputTokens: 21, outputTokens: 3 } }),
    );
    const { events, error } = await complete({
      assembledContext: [{ provider: "ctx", label: "A", content: [text("Be brief.")] }],
    });
    expect(error).toBeUndefined();
    // Deltas that reach the provider in one read travel as one event (model-kit merge.ts).
    expect(cases(events).filter((c, i, all) => c !== "textDelta" || all[i - 1] !== "textDelta")).toEqual([
      "streamStart",
      "metadata",
      "textDelta",
      "usage",
      "stop",
    ]);
    expect(only(events, "streamStart")[0]!.providerRequestId).toMatch(/^req_01/);
    expect(only(events, "metadata")[0]!.actualModel).toBe(SONNET);
    const usage = only(events, "usage")[0]!;
    expect([usage.inputTokens, usage.outputTokens, usage.reasoningTokens]).toEqual([21n, 3n, undefined]);
    const kinds = usage.rateLimits.map((r) => r.kind);
    expect(kinds).toEqual([
      RateLimitKind.REQUESTS,
      RateLimitKind.TOKENS,
      RateLimitKind.INPUT_TOKENS,
      RateLimitKind.OUTPUT_TOKENS,
    ]);
    const req = usage.rateLimits[0]!;
    expect([req.limit, req.remaining, req.usedPercent]).toEqual([1000n, 999n, undefined]);
    expect(req.resetsAt).toBeDefined();
    expect(only(events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    const done = accumulate(events, specs.get(SONNET)!, "anthropic");
    expect(done.message.content.map((b) => b.block.value)).toEqual([
      expect.objectContaining({ text: "Hello there, friend" }),
    ]);
    const sent = fake.requests.at(-1)!;
    expect(sent.json).toMatchObject({
      model: SONNET,
      stream: true,
      system: [{ type: "text", text: "Be brief." }],
    });
    expect(sent.headers["x-api-key"]).toBe(CANARY);
  });

  it("round-trips a tool call: fragments in, tool_use and tool_result out", async () => {
    const inputSchema = fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "path", schema: { type: "SCHEMA_TYPE_STRING" } }],
      required: ["path"],
    });
    const tools = [{ name: "fs.read_file", description: "Read a file", inputSchema }];
    fake.push(
      scenarios.toolCallFragments({ name: "fs_read_file", args: { path: "a.txt" }, id: "toolu_01A" }),
    );
    const first = await complete({ tools, params: { toolChoice: { mode: ToolChoiceMode.ANY } } });
    expect(cases(first.events)).toContain("toolCallDelta");
    expect(only(first.events, "toolCallStart")[0]).toMatchObject({ id: "toolu_01A", name: "fs.read_file" });
    // Fragments that reach the provider in one read travel merged (model-kit merge.ts).
    expect(only(first.events, "toolCallDelta").length).toBeGreaterThan(0);
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    const acc = accumulate(first.events, specs.get(SONNET)!, "anthropic");
    const use = acc.message.content.find((b) => b.block.case === "toolUse")!.block.value as {
      input: unknown;
    };
    expect(use.input).toEqual({ path: "a.txt" });
    const sentTools = fake.requests.at(-1)!.json as {
      tools: Array<{ name: string; input_schema: unknown }>;
      tool_choice: unknown;
    };
    expect(sentTools.tools[0]!.name).toBe("fs_read_file");
    expect(sentTools.tools[0]!.input_schema).toEqual({
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
    });
    expect(sentTools.tool_choice).toEqual({ type: "any" });

    fake.push(scenarios.text("The file says hi."));
    const second = await complete({
      tools,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt")] },
        { ...acc.message, producedByProvider: "anthropic", producedByModelId: SONNET },
        {
          role: Role.USER,
          id: "m2",
          content: [
            { block: { case: "toolResult", value: { toolUseId: "toolu_01A", content: [text("hi")] } } },
          ],
        },
      ],
    });
    expect(second.error).toBeUndefined();
    expect(only(second.events, "stop")[0]!.reason).toBe(StopReason.END_TURN);
    const msgs = (
      fake.requests.at(-1)!.json as {
        messages: Array<{ role: string; content: Array<Record<string, unknown>> }>;
      }
    ).messages;
    expect(msgs[1]!.content[0]).toEqual({
      type: "tool_use",
      id: "toolu_01A",
      name: "fs_read_file",
      input: { path: "a.txt" },
    });
    expect(msgs[2]!.content[0]).toEqual({
      type: "tool_result",
      tool_use_id: "toolu_01A",
      content: [{ type: "text", text: "hi" }],
    });
  });

  it("emits signed and redacted thinking and echoes both verbatim on the next request", async () => {
    const SIG = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxB+/=";
    const RED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP";
    fake.push(scenarios.thinking({ thinking: "Let me think.", signature: SIG, text: "Answer." }));
    const t = await complete({ params: { thinkingBudgetTokens: 2048n } });
    expect(cases(t.events)).toEqual(
      expect.arrayContaining(["thinkingDelta", "thinkingSignature", "textDelta"]),
    );
    expect(str(only(t.events, "thinkingSignature")[0]!.signature)).toBe(SIG);
    expect(fake.requests.at(-1)!.json).toMatchObject({ thinking: { type: "enabled", budget_tokens: 2048 } });
    fake.push(scenarios.redactedThinking({ data: RED, text: "Done." }));
    const r = await complete();
    expect(str(only(r.events, "redactedThinking")[0]!.data)).toBe(RED);

    const a1 = accumulate(t.events, specs.get(SONNET)!, "anthropic").message;
    const a2 = accumulate(r.events, specs.get(SONNET)!, "anthropic").message;
    fake.push(scenarios.text("ok"));
    const next = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("q1")] },
        { ...a1, producedByProvider: "anthropic" },
        { role: Role.USER, id: "m2", content: [text("q2")] },
        // An aliased provider block: recognised as own through the model id.
        { ...a2, producedByProvider: "claude-work", producedByModelId: SONNET },
        { role: Role.USER, id: "m4", content: [text("q3")] },
      ],
    });
    expect(next.error).toBeUndefined();
    const msgs = (
      fake.requests.at(-1)!.json as { messages: Array<{ content: Array<Record<string, unknown>> }> }
    ).messages;
    expect(msgs[1]!.content[0]).toEqual({ type: "thinking", thinking: "Let me think.", signature: SIG });
    expect(msgs[3]!.content[0]).toEqual({ type: "redacted_thinking", data: RED });
  });

  it("drops Gemini thinking from a cross-vendor history, and the validating fake accepts it", async () => {
    fake.push(scenarios.text("Continuing."));
    const res = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Read a.txt")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "google",
          producedByModelId: "gemini-3-pro",
          content: [
            { block: { case: "thinking", value: { text: "", signature: utf8("gemini-thought-signature") } } },
            {
              block: {
                case: "toolUse",
                value: { id: "gem_call_0", name: "read_file", input: { path: "a.txt" } },
              },
            },
          ],
        },
        {
          role: Role.USER,
          id: "m2",
          content: [
            { block: { case: "toolResult", value: { toolUseId: "gem_call_0", content: [text("hi")] } } },
          ],
        },
        {
          role: Role.ASSISTANT,
          id: "m3",
          producedByProvider: "google",
          content: [{ block: { case: "thinking", value: { text: "only thoughts", signature: utf8("x") } } }],
        },
        { role: Role.USER, id: "m4", content: [text("go on")] },
      ],
    });
    expect(res.error).toBeUndefined();
    expect(cases(res.events)).not.toContain("error");
    const sent = fake.requests.at(-1)!;
    expect(sent.rejected).toBeFalsy();
    expect(sent.bodyText).not.toContain("thinking");
    const msgs = (sent.json as { messages: Array<{ role: string }> }).messages;
    // The thinking-only message vanished; the two user turns around it merged.
    expect(msgs.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("places cache_control markers for the kernel's breakpoints and reports cache usage", async () => {
    fake.push(scenarios.cacheHit({ inputTokens: 100, cacheReadTokens: 1000, cacheWriteTokens: 200 }));
    const res = await complete({
      assembledContext: [
        { provider: "a", label: "one", content: [text("static one")] },
        { provider: "b", label: "two", content: [text("static two")] },
      ],
      tools: [
        { name: "t1", description: "", inputSchema: { type: 1 } },
        { name: "t2", description: "", inputSchema: { type: 1 } },
      ],
      messages: [
        { role: Role.USER, id: "m0", content: [text("first"), text("second")] },
        { role: Role.ASSISTANT, id: "m1", content: [text("reply")] },
        { role: Role.USER, id: "m2", content: [text("tail")] },
      ],
      cacheBreakpoints: [
        { position: { case: "afterAssembledContext", value: {} } },
        { position: { case: "afterTools", value: {} } },
        { position: { case: "afterMessageIndex", value: 1n } },
      ],
    });
    const body = fake.requests.at(-1)!.json as {
      system: Array<Record<string, unknown>>;
      tools: Array<Record<string, unknown>>;
      messages: Array<{ content: Array<Record<string, unknown>> }>;
    };
    expect(body.system[0]!["cache_control"]).toBeUndefined();
    expect(body.system[1]!["cache_control"]).toEqual({ type: "ephemeral" });
    expect(body.tools[0]!["cache_control"]).toBeUndefined();
    expect(body.tools[1]!["cache_control"]).toEqual({ type: "ephemeral" });
    expect(body.messages[1]!.content[0]!["cache_control"]).toEqual({ type: "ephemeral" });
    expect(body.messages[0]!.content.some((b) => b["cache_control"])).toBe(false);
    expect(body.messages[2]!.content.some((b) => b["cache_control"])).toBe(false);

    const usage = only(res.events, "usage")[0]!;
    expect([usage.inputTokens, usage.cacheReadTokens, usage.cacheWriteTokens, usage.outputTokens]).toEqual([
      100n,
      1000n,
      200n,
      5n,
    ]);
    // Sonnet 4.6: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million.
    const hand = (100 * 3 + 5 * 15 + 200 * 3.75 + 1000 * 0.3) / 1e6;
    const record = recordUsage(usage, specs.get(SONNET)!.pricing!, timestampFromMs(Date.now()));
    expect(record.costUsd).toBeCloseTo(hand, 12);
    expect(record.costUsd).toBeCloseTo(0.001425, 12);
  });

  it("counts thinking inside output and reports it only as a component", async () => {
    fake.push(scenarios.thinking({ usage: { inputTokens: 10, outputTokens: 7, reasoningTokens: 30 } }));
    const res = await complete();
    const usage = only(res.events, "usage")[0]!;
    expect(usage.outputTokens).toBe(37n);
    expect(usage.reasoningTokens).toBeUndefined();
    expect(usage.components).toContainEqual(
      expect.objectContaining({ name: "output_tokens_details.thinking_tokens", value: 30n }),
    );
  });

  it("reports stop sequences, refusals (with a safety notice) and the output limit", async () => {
    fake.push(scenarios.stopSequence("</answer>"));
    const s = await complete({ params: { stopSequences: ["</answer>"] } });
    expect(only(s.events, "stop")[0]).toMatchObject({
      reason: StopReason.STOP_SEQUENCE,
      matchedStopSequence: "</answer>",
    });
    expect(fake.requests.at(-1)!.json).toMatchObject({ stop_sequences: ["</answer>"] });
    fake.push(scenarios.refusal({ category: "cyber", explanation: "No." }));
    const r = await complete();
    expect(only(r.events, "stop")[0]!.reason).toBe(StopReason.REFUSAL);
    expect(only(r.events, "safetyNotice")[0]).toMatchObject({ kind: SafetyKind.MODERATION, message: "No." });
    fake.push(scenarios.maxTokens());
    const m = await complete({ params: { maxOutputTokens: 5n } });
    expect(only(m.events, "stop")[0]!.reason).toBe(StopReason.MAX_TOKENS);
    expect(fake.requests.at(-1)!.json).toMatchObject({ max_tokens: 5 });
  });

  it("reports a stop because the context window is full as context_length_exceeded, after the usage", async () => {
    fake.push(scenarios.text("half an ans", { vendorStopReason: "model_context_window_exceeded" }));
    const { events } = await complete();
    expect(only(events, "stop")).toHaveLength(0);
    expect(only(events, "usage")).toHaveLength(1);
    expect(only(events, "error")[0]).toMatchObject({
      category: ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
      retryable: false,
      vendorCode: "model_context_window_exceeded",
    });
  });

  it("sends effort through output_config with adaptive thinking", async () => {
    fake.push(scenarios.text("ok"));
    await complete({ modelId: "claude-opus-4-8", params: { thinkingEffort: "xhigh" } });
    expect(fake.requests.at(-1)!.json).toMatchObject({
      output_config: { effort: "xhigh" },
      thinking: { type: "adaptive" },
    });
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
    const acc = accumulate(events, specs.get(SONNET)!, "anthropic");
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
    ["429", scenarios.rateLimited(7), ModelErrorCategory.RATE_LIMITED, true, 7, "rate_limit_error"],
    ["529", scenarios.overloaded(), ModelErrorCategory.OVERLOADED, true, undefined, "overloaded_error"],
    ["500", scenarios.serverError(500), ModelErrorCategory.OVERLOADED, true, undefined, "api_error"],
    [
      "401",
      { kind: "error" as const, status: 401 },
      ModelErrorCategory.AUTH_ERROR,
      false,
      undefined,
      "authentication_error",
    ],
    [
      "400 context",
      {
        kind: "error" as const,
        status: 400,
        message: "prompt is too long: 1000001 tokens > 1000000 maximum",
      },
      ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
      false,
      undefined,
      "invalid_request_error",
    ],
  ])("classifies HTTP %s", async (_name, entry, category, retryable, retryAfter, code) => {
    fake.push(entry);
    const { events } = await complete();
    expect(cases(events).at(-1)).toBe("error");
    const e = errorOf(events)!;
    expect(e.category).toBe(category);
    expect(e.retryable).toBe(retryable);
    expect(e.retryAfterSeconds).toBe(retryAfter);
    expect(e.vendorCode).toBe(code);
  });

  it("reports the exhausted budget of a 429 as rate-limit metadata before the error", async () => {
    fake.push(scenarios.rateLimited(3));
    const { events } = await complete();
    expect(cases(events)).toEqual(["streamStart", "metadata", "error"]);
    const limits = only(events, "metadata")[0]!.rateLimits;
    const tokens = limits.find((l) => l.kind === RateLimitKind.TOKENS)!;
    expect([tokens.limit, tokens.remaining]).toEqual([96000n, 0n]);
  });

  it("reports an in-band error after content as an error event", async () => {
    fake.push(scenarios.midStreamError({ afterFrames: 4, errorType: "overloaded_error" }));
    const { events } = await complete();
    expect(cases(events)).toContain("textDelta");
    expect(cases(events).at(-1)).toBe("error");
    expect(errorOf(events)).toMatchObject({
      category: ModelErrorCategory.OVERLOADED,
      retryable: true,
      httpStatus: 200,
    });
  });

  it("classifies a dropped connection and a malformed frame", async () => {
    fake.push(scenarios.droppedConnection({ afterFrames: 3 }));
    const d = await complete();
    expect(errorOf(d.events)).toMatchObject({
      category: ModelErrorCategory.OVERLOADED,
      retryable: true,
      vendorCode: "transport_error",
    });
    fake.push(scenarios.malformedFrame({ afterFrames: 3 }));
    const m = await complete();
    expect(errorOf(m.events)).toMatchObject({
      category: ModelErrorCategory.UNKNOWN,
      retryable: false,
      vendorCode: "malformed_frame",
    });
  });

  it("treats cancelling a stalled stream as normal control flow", async () => {
    fake.push(scenarios.stall({ afterFrames: 3 }));
    const controller = new AbortController();
    const pending = complete({}, controller.signal);
    await fake.waitForStall();
    controller.abort();
    const { events } = await pending;
    expect(cases(events)).not.toContain("error");
    // The plugin stays healthy and logged the cancellation, not a failure.
    fake.push(scenarios.text("after"));
    const after = await complete();
    expect(only(after.events, "stop")).toHaveLength(1);
    await expect.poll(() => logs.some((l) => l.message === "completion cancelled")).toBe(true);
    expect(logs.some((l) => l.message === "completion failed" && JSON.stringify(l).includes("stall"))).toBe(
      false,
    );
  });

  it("rejects images for a model without vision before contacting the vendor", async () => {
    const before = fake.requests.length;
    const { events } = await complete({
      modelId: TEXT_ONLY,
      messages: [
        {
          role: Role.USER,
          id: "m0",
          content: [
            {
              block: {
                case: "image",
                value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1, 2]) } },
              },
            },
          ],
        },
      ],
    });
    expect(errorOf(events)).toMatchObject({ category: ModelErrorCategory.INVALID_REQUEST, retryable: false });
    const docs = await complete({
      modelId: TEXT_ONLY,
      messages: [
        {
          role: Role.USER,
          id: "m0",
          content: [
            {
              block: { case: "document", value: { mediaType: "application/pdf", data: new Uint8Array([1]) } },
            },
          ],
        },
      ],
    });
    expect(errorOf(docs.events)?.category).toBe(ModelErrorCategory.INVALID_REQUEST);
    expect(fake.requests.length).toBe(before);
  });

  it("rejects unknown provider_options keys and accepts documented ones", async () => {
    const bad = await complete({ providerOptions: { temperatur: 1 } });
    expect(errorOf(bad.events)?.category).toBe(ModelErrorCategory.INVALID_REQUEST);
    fake.push(scenarios.text("ok"));
    await complete({ providerOptions: { top_k: 5, anthropic_beta: ["b1", "b2"], metadata_user_id: "u-1" } });
    const sent = fake.requests.at(-1)!;
    expect(sent.json).toMatchObject({ top_k: 5, metadata: { user_id: "u-1" } });
    expect(sent.headers["anthropic-beta"]).toBe("b1,b2");
  });
});

describe("token counting and secrets", () => {
  it("counts tokens with the vendor's endpoint", async () => {
    const res = await client.countTokens({ text: "count me", modelId: SONNET });
    expect(res.count).toBe(42n);
    const sent = fake.otherRequests.concat(fake.requests).find((r) => r.path.endsWith("/count_tokens"));
    expect(sent?.json).toMatchObject({ model: SONNET, messages: [{ role: "user", content: "count me" }] });
  });

  it("never lets the API key reach an error or a log line", async () => {
    fake.push({ kind: "error", status: 401, message: `invalid x-api-key ${CANARY}` });
    const { events } = await complete();
    const err = only(events, "error")[0]!;
    expect(err.category).toBe(ModelErrorCategory.AUTH_ERROR);
    expect(JSON.stringify(err)).not.toContain(CANARY);
    expect(err.message).toContain("[redacted]");
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.filter((l) => JSON.stringify(l).includes(CANARY))).toEqual([]);
  });
});

describe("vendor fidelity (issue 17)", () => {
  const errorOf = (events: Awaited<ReturnType<typeof complete>>["events"]) => only(events, "error")[0];
  const body = () => fake.requests.at(-1)!.json as Record<string, unknown>;

  it("never sends sampling parameters to a model that refuses them (Sonnet 5), sends them where accepted", async () => {
    fake.push(scenarios.text("ok"));
    const refused = await complete({
      modelId: "claude-sonnet-5",
      params: { temperature: 0.3, topP: 0.9 },
      providerOptions: { top_k: 5 },
    });
    expect(refused.error).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    for (const key of ["temperature", "top_p", "top_k"]) expect(body()[key], key).toBeUndefined();
    expect(
      logs.some((l) =>
        JSON.stringify(l).includes("claude-sonnet-5 does not accept temperature, top_p, top_k"),
      ),
    ).toBe(true);
    fake.push(scenarios.text("ok"));
    const accepted = await complete({ params: { temperature: 0.3, topK: 7n } });
    expect(accepted.error).toBeUndefined();
    expect(body()).toMatchObject({ model: SONNET, temperature: 0.3, top_k: 7 });
  });

  it("the validating fake answers a sampling parameter on Opus 4.7+ with the real 400", async () => {
    const res = await fetch(`${fake.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": CANARY, "anthropic-version": "2023-06-01", "content-type": "application/json" },
      body: JSON.stringify({
        model: "claude-opus-4-8",
        max_tokens: 10,
        temperature: 0.5,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
      "`temperature` is deprecated for this model.",
    );
  });

  it("classifies an unknown model id as invalid_request flagged model_not_found", async () => {
    fake.push({ kind: "error", status: 404, errorType: "not_found_error", message: "model: claude-gone-1" });
    const e = errorOf((await complete()).events)!;
    expect([e.category, e.retryable, e.modelNotFound, e.httpStatus]).toEqual([
      ModelErrorCategory.INVALID_REQUEST,
      false,
      true,
      404,
    ]);
    fake.push({ kind: "error", status: 404, errorType: "not_found_error", message: "File not found: f_1" });
    expect(errorOf((await complete()).events)!.modelNotFound).toBe(false);
  });

  it("leaves whitespace-only text blocks out and sends an empty tool result in a form the API accepts", async () => {
    fake.push(scenarios.text("ok"));
    const res = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Run it")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          content: [
            text("\n\n"),
            { block: { case: "toolUse", value: { id: "toolu_1", name: "bash", input: {} } } },
          ],
        },
        {
          role: Role.USER,
          id: "m2",
          content: [
            { block: { case: "toolResult", value: { toolUseId: "toolu_1", content: [] } } },
            text("  "),
          ],
        },
        { role: Role.ASSISTANT, id: "m3", producedByProvider: "anthropic", content: [text("  \n")] },
        { role: Role.USER, id: "m4", content: [text("and?")] },
      ],
    });
    expect(res.error).toBeUndefined();
    expect(fake.requests.at(-1)!.rejected).toBeUndefined();
    expect(body()["messages"]).toEqual([
      { role: "user", content: [{ type: "text", text: "Run it" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "bash", input: {} }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "(no output)" }] },
          { type: "text", text: "and?" },
        ],
      },
    ]);
  });

  it("parses the Priority Tier rate-limit headers", async () => {
    fake.push(
      scenarios.text("ok", {
        rateLimits: {
          requests: { limit: 50, remaining: 49, resetSeconds: 1 },
          priorityInputTokens: { limit: 10_000, remaining: 9_618, resetSeconds: 4 },
          priorityOutputTokens: { limit: 10_000, remaining: 6_000, resetSeconds: 9 },
        },
      }),
    );
    const usage = only((await complete()).events, "usage")[0]!;
    const priority = usage.rateLimits.filter((r) => r.limitId?.startsWith("priority"));
    expect(priority.map((r) => [r.kind, r.limitId, r.limit, r.remaining])).toEqual([
      [RateLimitKind.INPUT_TOKENS, "priority-input-tokens", 10_000n, 9_618n],
      [RateLimitKind.OUTPUT_TOKENS, "priority-output-tokens", 10_000n, 6_000n],
    ]);
    expect(priority.every((r) => r.resetsAt !== undefined)).toBe(true);
  });
});

describe("typed stream events (issue 33)", () => {
  const frame = (data: Record<string, unknown>) =>
    `event: ${String(data["type"])}\ndata: ${JSON.stringify(data)}\n\n`;
  const warned = (type: string) =>
    logs.filter((l) => l.level === "warn" && JSON.stringify(l).includes(`"type":"${type}"`));

  it("skips and logs once an unknown event type and a malformed known event; the turn completes intact", async () => {
    fake.push({
      kind: "raw",
      headers: { "content-type": "text/event-stream" },
      frames: [
        frame({
          type: "message_start",
          message: { model: SONNET, usage: { input_tokens: 5, output_tokens: 1 } },
        }),
        frame({ type: "message_annotation", note: "new in some future API" }),
        frame({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
        frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hello " } }),
        // A known event that breaks its schema: text must be a string.
        frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: 42 } }),
        frame({ type: "message_annotation", note: "again" }),
        frame({ type: "content_block_delta", index: 0, delta: { type: "citations_delta", citation: {} } }),
        frame({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "world" } }),
        frame({ type: "content_block_stop", index: 0 }),
        // Counts the delta does not restate come as null.
        frame({
          type: "message_delta",
          delta: { stop_reason: "end_turn", stop_sequence: null },
          usage: { input_tokens: null, output_tokens: 2, cache_read_input_tokens: null },
        }),
        frame({ type: "message_stop" }),
      ],
    });
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    expect(only(events, "stop")[0]).toMatchObject({ reason: StopReason.END_TURN });
    const done = accumulate(events, specs.get(SONNET)!, "anthropic");
    expect(done.message.content.map((b) => b.block.value)).toEqual([
      expect.objectContaining({ text: "Hello world" }),
    ]);
    expect(only(events, "usage")[0]!.outputTokens).toBe(2n);
    // Logs come over the plugin's log stream, each in its own time: wait for every one.
    await expect.poll(() => warned("message_annotation").length).toBe(1);
    await expect.poll(() => warned("text_delta").length).toBe(1);
    expect(JSON.stringify(warned("text_delta")[0])).toContain("text: invalid_type (expected string)");
    await expect.poll(() => warned("citations_delta").length).toBe(1);
    // Once per type: the second message_annotation was not logged again.
    expect(warned("message_annotation")).toHaveLength(1);
  });
});
