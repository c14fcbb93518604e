// Real-path proofs of the seed rules (issue 25): each test runs the kernel on plugins it
// writes inline, served through the in-process provider seam (the same ports a go-plugin
// process is reached through), and fails when the kernel's call that applies the rule to
// the plugin's answer is removed. The rules themselves are unit-tested in test/domain.
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { service } from "@pluggableharness/plugin-sdk";
import { AttributeType } from "@pluggableharness/protocol/config";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import {
  ModelErrorCategory,
  ModelService,
  type ModelSpec,
  StopReason,
  type StreamCompletionRequest,
  StreamCompletionRequestSchema,
  type StreamEvent,
  ToolChoiceMode,
} from "@pluggableharness/protocol/model";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, type ToolCall, ToolKind, ToolService } from "@pluggableharness/protocol/tool";
import { afterAll, describe, expect, it } from "vitest";
import type { InProcessPluginFactory } from "../../src/index.ts";
import { Harness, type KernelSpec, type Provider, type TestKernel } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

// ---- inline plugins ---------------------------------------------------------------------------

type Init<T> = Partial<{ [K in keyof T]: unknown }> & Record<string, unknown>;

const obj = (props: Record<string, object> = {}) => ({
  type: SchemaType.OBJECT,
  properties: Object.entries(props).map(([name, schema]) => ({ name, schema })),
});
const str = { type: SchemaType.STRING, description: "a string" };

/** A valid operation, with `over` applied. */
function op(name: string, over: Record<string, unknown> = {}) {
  return {
    name,
    kind: ToolKind.RESOURCE,
    risk: RiskClass.LOW,
    description: `${name} does a thing.`,
    inputSchema: obj({ path: str }),
    outputSchema: obj(),
    concurrency: { safe: true, keyFields: ["path"] },
    ...over,
  };
}

interface ToolPluginSpec {
  readonly tools: ReturnType<typeof op>[];
  readonly calls?: ToolCall[];
}

function toolPlugin(spec: ToolPluginSpec): InProcessPluginFactory {
  return () => ({
    packageJson: { name: "inline-tools", version: "1.0.0", pluggableharness: { name: "inline-tools" } },
    services: [
      service(ToolService, {
        getSchema: () => ({ tools: spec.tools as never }),
        configure: () => ({ result: {} }),
        async *invoke(req: { call?: ToolCall }) {
          if (req.call) spec.calls?.push(req.call);
          yield { event: { event: { case: "result" as const, value: { payload: { ok: true } } } } };
        },
      }),
    ],
  });
}

/** A valid model, with `over` applied. */
function model(id: string, over: Init<ModelSpec> = {}): Init<ModelSpec> {
  return {
    id,
    contextWindow: 200_000n,
    maxOutputTokens: 8_192n,
    supportsToolUse: true,
    supportsStreaming: true,
    supportsParallelToolCalls: true,
    thinking: { supported: false },
    caching: { supported: false },
    pricing: { currency: "USD", tiers: [{ inputPerMtok: 1, outputPerMtok: 5 }] },
    supportedToolChoiceModes: [ToolChoiceMode.AUTO, ToolChoiceMode.ANY, ToolChoiceMode.NONE],
    ...over,
  };
}

type Turn = (req: StreamCompletionRequest, n: number) => AsyncGenerator<Init<StreamEvent>>;

interface ModelPluginSpec {
  readonly models: Init<ModelSpec>[];
  /** One generator per request (the last repeats). */
  readonly turns?: Turn[];
  readonly requests?: StreamCompletionRequest[];
}

function modelPlugin(spec: ModelPluginSpec): InProcessPluginFactory {
  return () => ({
    packageJson: { name: "inline-model", version: "1.0.0", pluggableharness: { name: "inline-model" } },
    services: [
      service(ModelService, {
        getCapabilities: () => ({
          capabilities: {
            models: spec.models as never,
            configSchema: {
              attributes: [{ name: "unused", type: AttributeType.STRING, description: "nothing" }],
            },
          },
        }),
        configure: () => ({ result: {} }),
        async *streamCompletion(req: StreamCompletionRequest) {
          const n = spec.requests?.length ?? 0;
          spec.requests?.push(create(StreamCompletionRequestSchema, req));
          const turns = spec.turns ?? [answer("done")];
          yield* turns[Math.min(n, turns.length - 1)]!(req, n) as AsyncGenerator<never>;
        },
      }),
    ],
  });
}

const ev = (c: string, value: Record<string, unknown>): Init<StreamEvent> => ({ event: { case: c, value } });
const usage = (input: number, output: number, extra: Record<string, unknown> = {}) =>
  ev("usage", { inputTokens: BigInt(input), outputTokens: BigInt(output), ...extra });
const stopEv = (reason: StopReason) => ev("stop", { reason });

function answer(text: string): Turn {
  return async function* () {
    yield ev("textDelta", { text });
    yield usage(10, 5);
    yield stopEv(StopReason.END_TURN);
  };
}

function callTool(id: string, name: string, input: Record<string, unknown>): Turn {
  return async function* () {
    yield ev("toolCallStart", { id, name });
    yield ev("toolCallDelta", { id, argumentsFragment: JSON.stringify(input) });
    yield ev("toolCallDone", { id });
    yield usage(20, 10);
    yield stopEv(StopReason.TOOL_USE);
  };
}

const PROFILE = (tools = '["tools.*"]', params = "", extra = "") => `
agent_profile "default" {${extra}
  model {
    primary {
      provider = "model"
      id       = "m"${params}
    }
  }
  tools = ${tools}
}`;

function providers(m: InProcessPluginFactory, t?: InProcessPluginFactory, more: Provider[] = []): Provider[] {
  return [
    { name: "model", fixture: "model", factory: m },
    ...(t ? [{ name: "tools", fixture: "tools" as const, factory: t }] : []),
    ...more,
  ];
}

async function kernel(spec: KernelSpec): Promise<TestKernel> {
  return h.kernel({ headlessAsk: "allow", ...spec });
}

async function loadError(spec: KernelSpec): Promise<Error> {
  const err = await kernel(spec).then(
    async (k) => {
      await k.close();
      return undefined;
    },
    (e: unknown) => e as Error,
  );
  if (!err) throw new Error("the kernel loaded");
  return err;
}

// ---- GetSchema and GetCapabilities are checked at load -----------------------------------------------

describe("a provider whose GetSchema breaks the seed is refused at load, with the rule named", () => {
  const good = modelPlugin({ models: [model("m")] });
  async function refused(bad: ReturnType<typeof op>, rule: string): Promise<void> {
    const err = await loadError({
      only: providers(good, toolPlugin({ tools: [op("fine"), bad] })),
      hcl: PROFILE(),
    });
    expect(err.name).toBe("ProviderLoadError");
    expect(err.message).toContain("tools: ");
    expect(err.message).toContain(rule);
  }

  it("refuses terminates_turn on a data_source", () =>
    refused(
      op("peek", { kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY, terminatesTurn: true }),
      "terminates-turn-resource-only",
    ));
  it("refuses a resource declaring read_only", () =>
    refused(op("write", { risk: RiskClass.READ_ONLY }), "resource-risk"));
  it("refuses key_fields naming no input field", () =>
    refused(op("edit", { concurrency: { safe: true, keyFields: ["file"] } }), "key-fields-in-input-schema"));

  it("a resource claiming safe: true without key_fields loads, with a warning naming the rule", async () => {
    const k = await kernel({
      only: providers(good, toolPlugin({ tools: [op("send", { concurrency: { safe: true } })] })),
      hcl: PROFILE(),
    });
    const w = k.logs.filter((r) => r.level === "warn" && r.message.includes("tools.send"));
    expect(w.map((r) => r.fields?.["rule"])).toEqual(["resource-safe-without-key-fields"]);
    await k.close();
  });
});

describe("a provider whose GetCapabilities breaks the seed is refused at load, with the rule named", () => {
  const t0 = timestampFromMs(Date.UTC(2026, 0, 1));
  async function refused(bad: Init<ModelSpec>, rule: string): Promise<void> {
    const err = await loadError({ only: providers(modelPlugin({ models: [bad] })), hcl: PROFILE("[]") });
    expect(err.name).toBe("ProviderLoadError");
    expect(err.message).toContain("model: ");
    expect(err.message).toContain(rule);
  }

  it("refuses overlapping pricing tiers", () =>
    refused(
      model("m", {
        pricing: {
          currency: "USD",
          tiers: [
            { inputPerMtok: 1, outputPerMtok: 5, inputTokensUntil: 200_000n },
            { inputPerMtok: 2, outputPerMtok: 10, inputTokensFrom: 100_000n },
          ],
        },
      }),
      "pricing-tiers-exact-cover",
    ));
  it("refuses gapped pricing tiers", () =>
    refused(
      model("m", {
        pricing: {
          currency: "USD",
          tiers: [
            { inputPerMtok: 1, outputPerMtok: 5, effectiveUntil: t0 },
            { inputPerMtok: 2, outputPerMtok: 10, effectiveFrom: { ...t0, seconds: t0.seconds + 60n } },
          ],
        },
      }),
      "pricing-tiers-exact-cover",
    ));
  it("refuses caching flags that contradict", () =>
    refused(
      model("m", { caching: { supported: false, explicitMarkers: true } }),
      "caching-unsupported-no-mechanism",
    ));
  it("refuses thinking axes that contradict", () =>
    refused(
      model("m", { thinking: { supported: false, effort: { levels: ["low", "high"], default: "low" } } }),
      "thinking-unsupported-no-effort",
    ));
});

// ---- hooks at config load -------------------------------------------------------------------------

describe("hook blocks are checked against what loaded", () => {
  const m = modelPlugin({ models: [model("m")] });
  const hook = (point: string, mode: string) => `
hook "${point}" {
  provider = "hooks"
  mode     = "${mode}"
}`;

  it("a point absent from the provider's supported_hook_points is a config error at its block", async () => {
    const hooks: InProcessPluginFactory = () => ({
      packageJson: { name: "h", version: "1.0.0", pluggableharness: { name: "h" } },
      services: [
        service(ToolService, {
          getSchema: () => ({ tools: [], supportedHookPoints: [1] }),
          configure: () => ({ result: {} }),
        }),
      ],
    });
    const err = await loadError({
      only: providers(m, undefined, [{ name: "hooks", fixture: "hooks", factory: hooks }]),
      hcl: `${PROFILE("[]")}\n${hook("plan-ready", "veto")}`,
    });
    expect(err.name).toBe("ConfigError");
    expect(err.message).toMatch(/agent\.hcl:\d+:\d+/);
    expect(err.message).toContain('does not support the "plan-ready" hook point (it supports session-start)');
  });

  it("a hook whose provider failed to load is an error even when failures are tolerated", async () => {
    const broken: InProcessPluginFactory = () => {
      throw new Error("cannot start");
    };
    const spec: KernelSpec = {
      only: providers(m, undefined, [{ name: "hooks", fixture: "hooks", factory: broken }]),
      hcl: `${PROFILE("[]")}\n${hook("session-start", "observe")}`,
    };
    const err = await h.kernel({ ...spec, tolerateProviderFailures: true }).then(
      async (k) => {
        await k.close();
        return undefined;
      },
      (e: unknown) => e as Error,
    );
    expect(err?.name).toBe("ConfigError");
    expect(err?.message).toMatch(/agent\.hcl:\d+:\d+/);
    expect(err?.message).toContain('hook "session-start" names "hooks", which failed to load');
  });
});

// ---- usage: components sorted, priced at receipt time -----------------------------------------

describe("usage on the persist path", () => {
  it("persists components sorted by name, whatever order the plugin sent them in", async () => {
    const m = modelPlugin({
      models: [model("m")],
      turns: [
        async function* () {
          yield ev("textDelta", { text: "hi" });
          yield usage(10, 5, {
            components: [
              { name: "zeta", value: 1n },
              { name: "alpha", value: 2n },
              { name: "mid", value: 3n },
            ],
          });
          yield stopEv(StopReason.END_TURN);
        },
      ],
    });
    const k = await kernel({ only: providers(m), hcl: PROFILE("[]") });
    const s = await k.kernel.startSession({ prompt: "go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const [assistant] = k
      .file(s.id)
      .messages()
      .filter((e) => e.usage.length > 0);
    expect(assistant!.usage[0]!.usage!.components.map((c) => c.name)).toEqual(["alpha", "mid", "zeta"]);
    await k.close();
  });

  it("prices each usage event by the tier in force when the kernel received it", async () => {
    const switchAt = Date.UTC(2026, 0, 1, 0, 0, 30);
    let k: TestKernel | undefined;
    const m = modelPlugin({
      models: [
        model("m", {
          pricing: {
            currency: "USD",
            tiers: [
              { inputPerMtok: 1, outputPerMtok: 1, effectiveUntil: timestampFromMs(switchAt) },
              { inputPerMtok: 10, outputPerMtok: 10, effectiveFrom: timestampFromMs(switchAt) },
            ],
          },
        }),
      ],
      turns: [
        async function* () {
          yield ev("textDelta", { text: "hi" });
          yield usage(1_000_000, 0);
          // the price changes while the answer streams
          k!.clock.advance(60_000);
          yield usage(1_000_000, 0);
          yield stopEv(StopReason.END_TURN);
        },
      ],
    });
    k = await kernel({ only: providers(m), hcl: PROFILE("[]") });
    expect(k.clock.now()).toBeLessThan(switchAt);
    const s = await k.kernel.startSession({ prompt: "go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const [assistant] = k
      .file(s.id)
      .messages()
      .filter((e) => e.usage.length > 0);
    expect(assistant!.usage.map((u) => [u.pricingTierIndex, u.costUsd])).toEqual([
      [0, 1],
      [1, 10],
    ]);
    expect(k.file(s.id).ledger.map((r) => r.costUsd)).toEqual([1, 10]);
    await k.close();
  });
});

// ---- call_context on every request ------------------------------------------------------------------

describe("call_context", () => {
  it("carries the turn id on every StreamCompletionRequest and every ToolCall", async () => {
    const requests: StreamCompletionRequest[] = [];
    const toolCalls: ToolCall[] = [];
    const m = modelPlugin({
      models: [model("m")],
      requests,
      turns: [
        callTool("c1", "tools__read", { path: "a" }),
        callTool("c2", "tools__write", { path: "b" }),
        answer("done"),
      ],
    });
    const t = toolPlugin({
      tools: [
        op("read", { kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY, concurrency: { safe: true } }),
        op("write"),
      ],
      calls: toolCalls,
    });
    const k = await kernel({ only: providers(m, t), hcl: PROFILE() });
    const s = await k.kernel.startSession({ prompt: "go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const turnIds = [
      ...new Set(
        k
          .file(s.id)
          .messages()
          .map((e) => e.turnId),
      ),
    ];
    expect(turnIds).toHaveLength(3);
    expect(requests.map((r) => r.callContext?.turnId)).toEqual(turnIds);
    expect(requests.every((r) => r.callContext?.sessionId === s.id)).toBe(true);
    expect(toolCalls.map((c) => [c.toolName, c.callContext?.turnId, c.callContext?.sessionId])).toEqual([
      ["read", turnIds[0], s.id],
      ["write", turnIds[1], s.id],
    ]);
    await k.close();
  });
});

// ---- tool_choice from the profile ---------------------------------------------------------------------

describe("tool_choice from agent.hcl", () => {
  it("reaches the request as the profile sets it, and is left out of a request without tools", async () => {
    const requests: StreamCompletionRequest[] = [];
    const m = modelPlugin({
      models: [model("m", { supportedToolChoiceModes: [ToolChoiceMode.AUTO, ToolChoiceMode.SPECIFIC] })],
      requests,
      turns: [callTool("c1", "tools__read", { path: "a" }), answer("done")],
    });
    const t = toolPlugin({ tools: [op("read", { kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY })] });
    const k = await kernel({
      only: providers(m, t),
      hcl: PROFILE('["tools.read"]', '\n      tool_choice = "tools.read"', "\n  max_turns = 1"),
    });
    const s = await k.kernel.startSession({ prompt: "go" });
    await s.idle();
    expect(requests[0]!.params?.toolChoice).toMatchObject({
      mode: ToolChoiceMode.SPECIFIC,
      toolName: "tools__read",
    });
    // the limit's final turn offers no tools, so no tool choice either
    expect(requests.length).toBe(2);
    expect(requests[1]!.tools).toEqual([]);
    expect(requests[1]!.params?.toolChoice).toBeUndefined();
    await k.close();
  });

  it("a mode the model does not support is a config error at the attribute", async () => {
    const m = modelPlugin({ models: [model("m", { supportedToolChoiceModes: [ToolChoiceMode.AUTO] })] });
    const err = await loadError({
      only: providers(m, toolPlugin({ tools: [op("read")] })),
      hcl: PROFILE('["tools.*"]', '\n      tool_choice = "any"'),
    });
    expect(err.name).toBe("ConfigError");
    expect(err.message).toMatch(/agent\.hcl:\d+:\d+/);
    expect(err.message).toContain('sets tool_choice "any" for "model/m", which supports only "auto"');
  });
});

// ---- content the model cannot take -------------------------------------------------------------------

describe("images and documents for a model that cannot take them", () => {
  const image: ContentBlock[] = [
    { block: { case: "text", value: { text: "what is this?" } } },
    {
      block: {
        case: "image",
        value: { mediaType: "image/png", source: { case: "data", value: new Uint8Array([1]) } },
      },
    },
  ] as never;
  const doc: ContentBlock[] = [
    { block: { case: "text", value: { text: "summarise" } } },
    {
      block: {
        case: "document",
        value: { mediaType: "application/pdf", source: { case: "data", value: new Uint8Array([1]) } },
      },
    },
  ] as never;

  async function refused(prompt: ContentBlock[], why: string): Promise<void> {
    const requests: StreamCompletionRequest[] = [];
    const m = modelPlugin({ models: [model("m")], requests });
    const k = await kernel({ only: providers(m), hcl: PROFILE("[]") });
    const s = await k.kernel.startSession({ prompt });
    await s.idle();
    const failure = k.logs.find((r) => r.level === "error" && r.message.startsWith("the turn failed"));
    expect(failure?.message).toContain("invalid_request");
    expect(failure?.message).toContain(why);
    expect(failure?.message).not.toContain("routing_exhausted");
    expect(requests).toHaveLength(0);
    await k.close();
  }

  it("an image fails the turn as invalid_request, not routing_exhausted, and reaches no model", () =>
    refused(image, "no vision"));
  it("a document fails the turn as invalid_request, not routing_exhausted, and reaches no model", () =>
    refused(doc, "no document support"));
});

// ---- the vendor's request id on failed attempts -------------------------------------------------------

describe("the vendor request id of a failed attempt", () => {
  async function failedOnce(billed: boolean): Promise<void> {
    const m = modelPlugin({
      models: [model("m")],
      turns: [
        async function* () {
          yield ev("streamStart", { providerRequestId: "req_0123abc" });
          if (billed) yield usage(100, 0);
          yield ev("error", {
            category: ModelErrorCategory.AUTH_ERROR,
            message: "bad key",
            retryable: false,
          });
        },
      ],
    });
    const k = await kernel({ only: providers(m), hcl: PROFILE("[]") });
    const s = await k.kernel.startSession({ prompt: "go" });
    await s.idle();
    const attempts = k
      .file(s.id)
      .messages()
      .filter((e) => e.syntheticReason.startsWith("attempt_failed:"));
    expect(attempts.map((e) => [e.syntheticReason, e.providerRequestId])).toEqual([
      ["attempt_failed:auth_error", "req_0123abc"],
    ]);
    // Every attempt has its ledger row: the unbilled one (refused before answering) at zero.
    expect(k.file(s.id).ledger.map((r) => r.inputTokens)).toEqual([billed ? 100 : 0]);
    const warn = k.logs.find((r) => r.message === "model call failed: auth_error");
    expect(warn?.fields?.["vendorRequestId"]).toBe("req_0123abc");
    const failure = k.logs.find((r) => r.level === "error" && r.message.startsWith("the turn failed"));
    expect(failure?.message).toContain("[vendor request id req_0123abc]");
    await k.close();
  }

  it("is persisted, logged and shown in the failure of an unbilled attempt", () => failedOnce(false));
  it("is persisted, logged and shown in the failure of a billed attempt", () => failedOnce(true));

  it("is kept for each of several failed attempts", async () => {
    const requests: StreamCompletionRequest[] = [];
    const m = modelPlugin({
      models: [model("m")],
      requests,
      turns: [
        async function* (_r, n) {
          yield ev("streamStart", { providerRequestId: `req_${n}` });
          yield ev("error", { category: ModelErrorCategory.OVERLOADED, message: "busy", retryable: true });
        },
      ],
    });
    const k = await kernel({
      only: providers(m),
      hcl: `${PROFILE("[]")}\nsettings {\n  sandbox = "off"\n  retry {\n    max_retries    = 2\n    base_delay_ms  = 1000\n    backoff_factor = 2\n  }\n}`,
    });
    const s = await k.kernel.startSession({ prompt: "go" });
    await s.idle();
    const attempts = k
      .file(s.id)
      .messages()
      .filter((e) => e.syntheticReason.startsWith("attempt_failed:"));
    // overloaded is retried (once, for this category), then the turn fails
    expect(requests.length).toBeGreaterThanOrEqual(2);
    expect(attempts.map((e) => e.providerRequestId)).toEqual(requests.map((_, i) => `req_${i}`));
    await k.close();
  });
});

// ---- ToolCall.id is the kernel's; the vendor gets its own ids back --------------------------------

describe("tool call ids", () => {
  it("ToolCall.id is kernel-assigned and used everywhere in the kernel; the model provider sees its own ids", async () => {
    const requests: StreamCompletionRequest[] = [];
    const toolCalls: ToolCall[] = [];
    const m = modelPlugin({
      models: [model("m")],
      requests,
      turns: [callTool("toolu_vendor_1", "tools__write", { path: "a" }), answer("done")],
    });
    const k = await kernel({
      only: providers(m, toolPlugin({ tools: [op("write")], calls: toolCalls })),
      hcl: PROFILE(),
    });
    const s = await k.kernel.startSession({ prompt: "go" });
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);
    const file = k.file(s.id);
    const [call] = toolCalls;
    expect(call!.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    // the kernel's records all name the call by its id
    const use = file
      .messages()
      .flatMap((e) => e.message?.content ?? [])
      .find((b) => b.block.case === "toolUse")!.block.value as { id: string; vendorId: string };
    expect([use.id, use.vendorId]).toEqual([call!.id, "toolu_vendor_1"]);
    expect(file.toolResults().map((r) => r.toolCallId)).toEqual([call!.id]);
    expect(file.plans().flatMap((p) => p.items.map((i) => i.toolCallId))).toEqual([call!.id]);
    // the vendor is sent back exactly the id it gave
    const blocks = requests[1]!.messages.flatMap((msg) => msg.content);
    const sent = blocks.flatMap((b) =>
      b.block.case === "toolUse"
        ? [`use ${b.block.value.id}`]
        : b.block.case === "toolResult"
          ? [`result ${b.block.value.toolUseId}`]
          : [],
    );
    expect(sent).toEqual(["use toolu_vendor_1", "result toolu_vendor_1"]);
    await k.close();
  });
});
