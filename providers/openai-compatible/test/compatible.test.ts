// The OpenAI-compatible provider as a real plugin process against the loopback fakes of
// Ollama, vLLM, LM Studio and Mistral (one combined server, validate: true). The plugin is
// launched once and reconfigured per dialect, as an operator would point it elsewhere.
import { create, fromJson } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { recordUsage, validateCapabilities } from "@pluggableharness/kernel/domain";
import {
  accumulate,
  type Client,
  collect,
  errorOf,
  type Launched,
  launch,
  only,
  type RequestInit,
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
  SafetyKind,
  StopReason,
  ThinkingDisable,
} from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CANARY = "sk-local-CANARY-0a9b8c7d6e";
const MAIN = new URL("../src/main.ts", import.meta.url);
type Dialect = "ollama" | "vllm" | "lmstudio" | "mistral";

let fake: FakeVendor;
let plugin: Launched;
let client: Client;

beforeAll(async () => {
  fake = await startFakeVendor({ vendor: "combined", validate: true });
  plugin = await launch("openai-compatible", MAIN);
  client = plugin.client;
});

afterAll(async () => {
  await plugin?.host.shutdown();
  await fake?.close();
});

async function configure(config: Record<string, unknown>) {
  return (await client.configure({ config: config as never })).result!;
}

async function use(dialect: Dialect, extra: Record<string, unknown> = {}): Promise<Map<string, ModelSpec>> {
  const result = await configure({
    base_url: fake.baseUrl(dialect),
    dialect: dialect === "mistral" ? "mistral" : dialect,
    models: ["local-model"],
    reasoning: true,
    ...extra,
  });
  expect(result.diagnostics.filter((d) => d.severity === DiagnosticSeverity.ERROR)).toEqual([]);
  return new Map((await client.getCapabilities({})).capabilities!.models.map((m) => [m.id, m]));
}

const base = (init: Partial<RequestInit> = {}): RequestInit =>
  ({
    modelId: "local-model",
    messages: [{ role: Role.USER, id: "m0", content: [text("Hello")] }],
    callContext: { sessionId: "s", turnId: "t", workingDirectory: "/tmp" },
    ...init,
  }) as RequestInit;
const complete = (init: Partial<RequestInit> = {}) => collect(client, base(init));
const lastRequest = () => fake.requests.at(-1)!;
const lastBody = () => lastRequest().json as Record<string, unknown>;
const messagesOf = () => lastBody().messages as Array<Record<string, unknown>>;

function assistant(events: Parameters<typeof accumulate>[0], spec: ModelSpec): Message {
  const m = accumulate(events, spec, "openai-compatible").message;
  return create(MessageSchema, { ...m, producedByProvider: "openai-compatible", producedByModelId: spec.id });
}

const weather = [
  {
    name: "get.weather",
    description: "Weather for a city",
    inputSchema: fromJson(SchemaSchema, {
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "city", schema: { type: "SCHEMA_TYPE_STRING" } }],
      required: ["city"],
    }),
  },
];

describe("configuration and declared models", () => {
  it("has no catalog before Configure but a schema naming base_url and the pricing choices", async () => {
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(caps.models).toEqual([]);
    const attrs = new Map(caps.configSchema!.attributes.map((a) => [a.name, a]));
    expect(attrs.get("base_url")).toMatchObject({ required: true });
    expect(attrs.get("api_key")).toMatchObject({ required: false, sensitive: true });
    expect([...attrs.keys()]).toEqual(
      expect.arrayContaining(["free", "input_per_mtok", "models", "model", "models_json"]),
    );
  });

  it("rejects a missing or bad base URL, a bad dialect, and an unpriced remote server", async () => {
    const missing = await configure({ models: ["m"] });
    expect(missing.diagnostics.some((d) => d.attributePath[0] === "base_url")).toBe(true);
    const bad = await configure({ base_url: "localhost:11434", api_key: CANARY });
    expect(bad.diagnostics.some((d) => d.attributePath[0] === "base_url")).toBe(true);
    expect(JSON.stringify(bad)).not.toContain(CANARY);
    const dialect = await configure({ base_url: "http://localhost:1/v1", dialect: "bedrock" });
    expect(dialect.diagnostics.some((d) => d.attributePath[0] === "dialect")).toBe(true);
    const remote = await configure({ base_url: "https://api.together.example/v1", models: ["m"] });
    expect(remote.diagnostics.find((d) => d.attributePath[0] === "free")).toMatchObject({
      severity: DiagnosticSeverity.ERROR,
    });
  });

  it("declares free pricing for a loopback server and when configured so, else the given rates", async () => {
    let specs = await use("ollama");
    expect(specs.get("local-model")!.pricing).toMatchObject({ free: true, tiers: [] });
    const remote = await configure({ base_url: "https://gpu.example.com/v1", models: ["m"], free: true });
    expect(remote.diagnostics).toEqual([]);
    expect((await client.getCapabilities({})).capabilities!.models[0]!.pricing?.free).toBe(true);
    specs = await use("ollama", { free: false, input_per_mtok: 0.5, output_per_mtok: 1.5 });
    expect(specs.get("local-model")!.pricing).toMatchObject({
      free: false,
      tiers: [expect.objectContaining({ inputPerMtok: 0.5, outputPerMtok: 1.5 })],
    });
  });

  it("serves model, models and models_json together; models_json takes the provider's pricing", async () => {
    const specs = await use("ollama", {
      model: "qwen3:8b",
      models: ["llama3.2"],
      context_window: 131072,
      max_output_tokens: 4096,
      vision: true,
      free: true,
      models_json: JSON.stringify({
        "gpt-oss:20b": {
          context_window: 128000,
          max_output_tokens: 16000,
          thinking: { effort: { levels: ["low", "medium", "high"], default: "medium" }, disable: "never" },
        },
      }),
    });
    expect([...specs.keys()]).toEqual(["qwen3:8b", "llama3.2", "gpt-oss:20b"]);
    const caps = (await client.getCapabilities({})).capabilities!;
    expect(() => validateCapabilities("openai-compatible", caps)).not.toThrow();
    expect(specs.get("llama3.2")).toMatchObject({
      contextWindow: 131072n,
      maxOutputTokens: 4096n,
      supportsVision: true,
    });
    expect(specs.get("qwen3:8b")!.thinking).toMatchObject({
      supported: true,
      disable: ThinkingDisable.NEVER,
    });
    expect(specs.get("gpt-oss:20b")!.pricing?.free).toBe(true);
    expect(specs.get("gpt-oss:20b")!.thinking?.effort?.levels).toEqual(["low", "medium", "high"]);
  });
});

describe("Ollama", () => {
  it("streams reasoning and text, asks for usage, and costs nothing", async () => {
    const specs = await use("ollama");
    fake.pushFor(
      "ollama",
      scenarios.thinking({
        thinking: "Thinking hard.",
        text: "Hi!",
        usage: { inputTokens: 26, outputTokens: 2, reasoningTokens: 3 },
      }),
    );
    const { events, error } = await complete();
    expect(error).toBeUndefined();
    expect(only(events, "streamStart")).toEqual([]); // no request-id header on local servers
    expect(only(events, "metadata")[0]).toMatchObject({
      actualModel: "local-model",
      systemFingerprint: "fp_ollama",
    });
    expect(
      only(events, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).toBe("Thinking hard.");
    expect(textOf(events)).toBe("Hi!");
    const usage = only(events, "usage")[0]!;
    expect([usage.inputTokens, usage.outputTokens, usage.reasoningTokens]).toEqual([26n, 5n, undefined]);
    expect(usage.rateLimits).toEqual([]);
    const record = recordUsage(usage, specs.get("local-model")!.pricing!, timestampFromMs(Date.now()));
    expect(record.costUsd).toBe(0);
    expect(lastRequest().vendor).toBe("ollama");
    expect(lastBody()).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(lastRequest().headers["authorization"]).toBeUndefined();
  });

  it("reports a filtered completion as content_filtered with a moderation notice", async () => {
    await use("ollama");
    fake.pushFor("ollama", scenarios.refusal());
    const { events } = await complete();
    expect(only(events, "stop")[0]!.reason).toBe(StopReason.CONTENT_FILTERED);
    expect(only(events, "safetyNotice")[0]).toMatchObject({ kind: SafetyKind.MODERATION });
  });

  it("classifies Ollama's error bodies", async () => {
    await use("ollama");
    fake.pushFor("ollama", {
      kind: "error",
      status: 404,
      message: 'model "local-model" not found, try pulling it first',
    });
    expect(errorOf((await complete()).events)).toMatchObject({
      categoryName: "INVALID_REQUEST",
      vendorCode: "not_found_error",
    });
    fake.pushFor("ollama", scenarios.serverError(500));
    expect(errorOf((await complete()).events)).toMatchObject({ categoryName: "OVERLOADED", retryable: true });
  });
});

describe("vLLM", () => {
  it("assembles tool-call fragments and round-trips the call", async () => {
    const specs = await use("vllm");
    fake.pushFor(
      "vllm",
      scenarios.toolCallFragments({ name: "get_weather", args: { city: "Oslo" }, id: "chatcmpl-tool-1" }),
    );
    const first = await complete({ tools: weather });
    expect(only(first.events, "toolCallStart")[0]).toMatchObject({
      id: "chatcmpl-tool-1",
      name: "get.weather",
    });
    expect(only(first.events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    const reply = assistant(first.events, specs.get("local-model")!);
    expect(reply.content.find((b) => b.block.case === "toolUse")!.block.value).toMatchObject({
      input: { city: "Oslo" },
    });
    expect((lastBody().tools as Array<{ function: { name: string } }>)[0]!.function.name).toBe("get_weather");

    fake.pushFor("vllm", scenarios.text("Cold."));
    const second = await complete({
      tools: weather,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Weather in Oslo?")] },
        reply,
        { role: Role.USER, id: "m2", content: [toolResult("chatcmpl-tool-1", "-3C", true)] },
      ],
    });
    expect(errorOf(second.events)).toBeUndefined();
    expect(lastRequest().rejected).toBeFalsy();
    expect(messagesOf().slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "chatcmpl-tool-1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "chatcmpl-tool-1", content: "Error: -3C" },
    ]);
  });

  it("accepts a history holding OpenAI reasoning items and Anthropic signed thinking", async () => {
    await use("vllm");
    const item = JSON.stringify({
      id: "rs_9",
      type: "reasoning",
      summary: [{ type: "summary_text", text: "s" }],
      encrypted_content: "gAAAA-x",
    });
    fake.pushFor("vllm", scenarios.text("OK"));
    const { events } = await complete({
      messages: [
        { role: Role.USER, id: "m0", content: [text("Q")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "openai",
          producedByModelId: "gpt-5.6-sol",
          content: [
            { block: { case: "thinking", value: { text: "s", signature: utf8(item) } } },
            { block: { case: "toolUse", value: { id: "call_1", name: "ls", input: {} } } },
          ],
        },
        { role: Role.USER, id: "m2", content: [toolResult("call_1", "a.txt")] },
        {
          role: Role.ASSISTANT,
          id: "m3",
          producedByProvider: "anthropic",
          content: [{ block: { case: "thinking", value: { text: "t", signature: utf8("sig") } } }],
        },
        { role: Role.USER, id: "m4", content: [text("Go on")] },
      ],
    });
    expect(errorOf(events)).toBeUndefined();
    expect(lastRequest().rejected).toBeFalsy();
    expect(messagesOf().map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(JSON.stringify(messagesOf())).not.toContain("gAAAA");
  });
});

describe("LM Studio", () => {
  it("streams text and maps length to max_tokens", async () => {
    await use("lmstudio");
    fake.pushFor("lmstudio", scenarios.maxTokens());
    const { events } = await complete({ params: { maxOutputTokens: 5n } });
    expect(textOf(events)).toBe("This answer was cut");
    expect(only(events, "stop")[0]!.reason).toBe(StopReason.MAX_TOKENS);
    expect(lastBody().max_tokens).toBe(5);
  });
});

describe("a finish reason saying the context window is full", () => {
  it("is the context_length_exceeded error, not a finished answer", async () => {
    await use("vllm");
    fake.pushFor("vllm", scenarios.text("half", { vendorStopReason: "context_length_exceeded" }));
    const { events } = await complete();
    expect(only(events, "stop")).toHaveLength(0);
    expect(errorOf(events)).toMatchObject({
      category: ModelErrorCategory.CONTEXT_LENGTH_EXCEEDED,
      retryable: false,
    });
  });
});

describe("Mistral", () => {
  it("reads whole tool calls without index, usage on the finish chunk, and sends no stream_options", async () => {
    const specs = await use("mistral", { free: false, input_per_mtok: 0.1, output_per_mtok: 0.3 });
    fake.pushFor("mistral", {
      ...scenarios.toolCallFragments({ name: "get_weather", args: { city: "Paris" }, id: "gSIMJiOkT" }),
      usage: { inputTokens: 124, outputTokens: 22 },
    });
    const { events } = await complete({ tools: weather });
    expect(lastBody().stream_options).toBeUndefined();
    expect(only(events, "toolCallStart")[0]).toMatchObject({ id: "gSIMJiOkT", name: "get.weather" });
    expect(
      only(events, "toolCallDelta")
        .map((d) => d.argumentsFragment)
        .join(""),
    ).toBe('{"city":"Paris"}');
    expect(only(events, "stop")[0]!.reason).toBe(StopReason.TOOL_USE);
    const usage = only(events, "usage")[0]!;
    expect([usage.inputTokens, usage.outputTokens]).toEqual([124n, 22n]);
    const record = recordUsage(usage, specs.get("local-model")!.pricing!, timestampFromMs(Date.now()));
    expect(record.costUsd).toBe(0.000019);
  });

  it("reads Mistral's thinking content arrays", async () => {
    await use("mistral", { free: true });
    fake.pushFor("mistral", scenarios.thinking({ thinking: "Let me see.", text: "Yes." }));
    const { events } = await complete();
    expect(
      only(events, "thinkingDelta")
        .map((t) => t.text)
        .join(""),
    ).toBe("Let me see.");
    expect(textOf(events)).toBe("Yes.");
  });

  it("keeps cached tokens inside input unless the model declares a cache rate", async () => {
    let specs = await use("mistral", { free: false, input_per_mtok: 1, output_per_mtok: 2 });
    const cached = scenarios.cacheHit({ inputTokens: 100, cacheReadTokens: 900, cacheWriteTokens: 0 });
    fake.pushFor("mistral", cached);
    let usage = only((await complete()).events, "usage")[0]!;
    expect([usage.inputTokens, usage.cacheReadTokens]).toEqual([1000n, undefined]);
    expect(usage.components.map((c) => [c.name, c.value])).toEqual([
      ["prompt_tokens_details.cached_tokens", 900n],
    ]);
    expect(recordUsage(usage, specs.get("local-model")!.pricing!, timestampFromMs(Date.now())).costUsd).toBe(
      (1000 * 1 + 5 * 2) / 1e6,
    );
    specs = await use("mistral", {
      free: false,
      input_per_mtok: 1,
      output_per_mtok: 2,
      cache_read_per_mtok: 0.1,
    });
    fake.pushFor("mistral", cached);
    usage = only((await complete()).events, "usage")[0]!;
    expect([usage.inputTokens, usage.cacheReadTokens]).toEqual([100n, 900n]);
    expect(recordUsage(usage, specs.get("local-model")!.pricing!, timestampFromMs(Date.now())).costUsd).toBe(
      (100 * 1 + 900 * 0.1 + 5 * 2) / 1e6,
    );
  });

  it("classifies Mistral's flat error bodies", async () => {
    await use("mistral", { free: true });
    fake.pushFor("mistral", scenarios.rateLimited(4));
    expect(errorOf((await complete()).events)).toMatchObject({
      categoryName: "RATE_LIMITED",
      retryAfterSeconds: 4,
      vendorCode: "rate_limited",
    });
  });
});

describe("shared rules", () => {
  it("rejects images and documents for models declared without them", async () => {
    await use("ollama");
    const before = fake.requests.length;
    const png = {
      block: {
        case: "image" as const,
        value: { mediaType: "image/png", source: { case: "url" as const, value: "https://x/y.png" } },
      },
    };
    const { events } = await complete({ messages: [{ role: Role.USER, id: "m0", content: [png] }] });
    expect(errorOf(events)).toMatchObject({ categoryName: "INVALID_REQUEST" });
    expect(fake.requests.length).toBe(before);
  });

  it("reports in-band errors, dropped connections and stop sequences", async () => {
    await use("vllm");
    fake.pushFor("vllm", scenarios.midStreamError({ afterFrames: 3 }));
    expect(errorOf((await complete()).events)).toMatchObject({ categoryName: "OVERLOADED", httpStatus: 200 });
    fake.pushFor("vllm", scenarios.droppedConnection({ afterFrames: 2 }));
    expect(errorOf((await complete()).events)).toMatchObject({
      categoryName: "OVERLOADED",
      vendorCode: "transport_error",
    });
    fake.pushFor("vllm", { kind: "text", text: "abc<|end|>def", deltas: ["abc<", "|end", "|>def"] });
    const stopped = await complete({ params: { stopSequences: ["<|end|>"] } });
    expect(textOf(stopped.events)).toBe("abc");
    expect(only(stopped.events, "stop")[0]).toMatchObject({
      reason: StopReason.STOP_SEQUENCE,
      matchedStopSequence: "<|end|>",
    });
  });

  it("sends the optional key as a Bearer token and never logs or echoes it", async () => {
    await use("lmstudio", { api_key: CANARY });
    fake.pushFor("lmstudio", { kind: "error", status: 401, message: `bad key ${CANARY}` });
    const { events } = await complete();
    expect(lastRequest().headers["authorization"]).toBe(`Bearer ${CANARY}`);
    expect(errorOf(events)).toMatchObject({ categoryName: "AUTH_ERROR" });
    expect(JSON.stringify(events, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(CANARY);
    expect(plugin.logs.some((l) => JSON.stringify(l).includes(CANARY))).toBe(false);
  });

  it("has no token counter (UNIMPLEMENTED, so the kernel uses its fallback)", async () => {
    await expect(client.countTokens({ text: "x", modelId: "local-model" })).rejects.toMatchObject({
      code: 12,
    });
  });
});

describe("DeepSeek-style reasoning echo (dialect capability)", () => {
  const configureFor = async (dialect: "deepseek" | "vllm") => {
    const result = await configure({
      base_url: fake.baseUrl(dialect),
      dialect,
      models: ["deepseek-v4-flash"],
      reasoning: true,
    });
    expect(result.diagnostics.filter((d) => d.severity === DiagnosticSeverity.ERROR)).toEqual([]);
    return new Map((await client.getCapabilities({})).capabilities!.models.map((m) => [m.id, m]));
  };

  it("echoes reasoning_content on assistant tool-call messages, and the validating fake accepts the loop", async () => {
    const specs = await configureFor("deepseek");
    const spec = specs.get("deepseek-v4-flash")!;
    fake.pushFor("deepseek", {
      kind: "turn",
      blocks: [
        { type: "thinking", text: "The user wants Paris weather.", chunks: 2 },
        { type: "tool_call", name: "get_weather", args: { city: "Paris" }, id: "call_00_A" },
      ],
    });
    const first = await complete({ modelId: spec.id, tools: weather });
    expect(errorOf(first.events)).toBeUndefined();
    const reply = assistant(first.events, spec);
    fake.pushFor("deepseek", scenarios.text("Sunny."));
    const second = await complete({
      modelId: spec.id,
      tools: weather,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Weather in Paris?")] },
        // A foreign tool-call turn (it has no reasoning to give back) and this server's own.
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "anthropic",
          content: [
            {
              block: {
                case: "toolUse",
                value: { id: "toolu_9", name: "get.weather", input: { city: "Rome" } },
              },
            },
          ],
        },
        { role: Role.USER, id: "m2", content: [toolResult("toolu_9", "rainy")] },
        reply,
        { role: Role.USER, id: "m4", content: [toolResult("call_00_A", "sunny")] },
      ],
    });
    expect(errorOf(second.events)).toBeUndefined();
    expect(lastRequest().rejected).toBeUndefined();
    const assistants = messagesOf().filter((m) => m["role"] === "assistant");
    expect(assistants.map((m) => m["reasoning_content"])).toEqual(["", "The user wants Paris weather."]);
  });

  it("gives back the reasoning of a tool-calling turn's final answer too, in every later request", async () => {
    // DeepSeek's thinking-mode guide: between two user messages in which the model called a
    // tool, every assistant message (the final answer included) keeps its reasoning_content.
    const specs = await configureFor("deepseek");
    const spec = specs.get("deepseek-v4-flash")!;
    fake.pushFor("deepseek", {
      kind: "turn",
      blocks: [
        { type: "thinking", text: "Look the weather up." },
        { type: "tool_call", name: "get_weather", args: { city: "Paris" }, id: "call_00_B" },
      ],
    });
    const called = assistant((await complete({ modelId: spec.id, tools: weather })).events, spec);
    fake.pushFor("deepseek", {
      kind: "turn",
      blocks: [
        { type: "thinking", text: "It said sunny; answer briefly." },
        { type: "text", text: "Sunny in Paris." },
      ],
    });
    const history = [
      { role: Role.USER, id: "m0", content: [text("Weather in Paris?")] },
      called,
      { role: Role.USER, id: "m2", content: [toolResult("call_00_B", "sunny")] },
    ] as Message[];
    const answered = assistant(
      (await complete({ modelId: spec.id, tools: weather, messages: history })).events,
      spec,
    );
    // The next user question, and one more turn without tools after it.
    fake.pushFor("deepseek", {
      kind: "turn",
      blocks: [
        { type: "thinking", text: "Easy." },
        { type: "text", text: "Yes." },
      ],
    });
    const next = [
      ...history,
      answered,
      { role: Role.USER, id: "m4", content: [text("Take a coat?")] },
    ] as Message[];
    const third = await complete({ modelId: spec.id, tools: weather, messages: next });
    expect(errorOf(third.events)).toBeUndefined();
    expect(lastRequest().rejected).toBeUndefined();
    const replied = assistant(third.events, spec);
    fake.pushFor("deepseek", scenarios.text("Fine."));
    const fourth = await complete({
      modelId: spec.id,
      tools: weather,
      messages: [...next, replied, { role: Role.USER, id: "m6", content: [text("Thanks.")] }] as Message[],
    });
    expect(errorOf(fourth.events)).toBeUndefined();
    expect(lastRequest().rejected).toBeUndefined();
    const assistants = messagesOf().filter((m) => m["role"] === "assistant");
    // The tool-calling stretch keeps both reasonings; the plain turn after it needs none.
    expect(assistants.map((m) => [m["content"], m["reasoning_content"]])).toEqual([
      [null, "Look the weather up."],
      ["Sunny in Paris.", "It said sunny; answer briefly."],
      ["Yes.", undefined],
    ]);
  });

  it("the fake refuses a DeepSeek tool loop without reasoning_content; other dialects never send it", async () => {
    await configureFor("deepseek");
    const res = await fetch(`${fake.baseUrl("deepseek")}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "deepseek-v4-flash",
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: null,
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "c1", content: "x" },
        ],
      }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
      /^Missing `reasoning_content` field in the assistant message at message index 1\./,
    );
    // The final answer of a tool-calling stretch needs it too, once a user message follows.
    const finalAnswer = await fetch(`${fake.baseUrl("deepseek")}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "deepseek-v4-flash",
        messages: [
          { role: "user", content: "hi" },
          {
            role: "assistant",
            content: null,
            reasoning_content: "",
            tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }],
          },
          { role: "tool", tool_call_id: "c1", content: "x" },
          { role: "assistant", content: "done" },
          { role: "user", content: "and?" },
        ],
      }),
    });
    expect(finalAnswer.status).toBe(400);
    expect(((await finalAnswer.json()) as { error: { message: string } }).error.message).toMatch(
      /^Missing `reasoning_content` field in the assistant message at message index 3\./,
    );
    const specs = await configureFor("vllm");
    const spec = specs.get("deepseek-v4-flash")!;
    fake.pushFor("vllm", scenarios.text("ok"));
    await complete({
      modelId: spec.id,
      tools: weather,
      messages: [
        { role: Role.USER, id: "m0", content: [text("Weather?")] },
        {
          role: Role.ASSISTANT,
          id: "m1",
          producedByProvider: "openai-compatible",
          content: [
            { block: { case: "thinking", value: { text: "hmm" } } },
            { block: { case: "toolUse", value: { id: "c1", name: "get.weather", input: {} } } },
          ],
        },
        { role: Role.USER, id: "m2", content: [toolResult("c1", "x")] },
      ],
    });
    expect(messagesOf().find((m) => m["role"] === "assistant")!["reasoning_content"]).toBeUndefined();
  });
});
