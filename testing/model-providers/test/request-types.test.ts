// The request bodies every first-party adapter sends in realistic conversations (system
// context, tools, tool results, images, a PDF, thinking parameters, cache breakpoints,
// history from another vendor), captured at the fake vendor and type-checked by the
// TypeScript compiler against the vendors' official SDK request types (@anthropic-ai/sdk,
// openai, @google/genai; dev dependencies used for their types only). The bodies are
// written as object literals checked with `satisfies`, so a misspelt or unknown field, a
// wrong type or a wrong discriminant fails; a control file of deliberately broken bodies
// proves that the check catches each kind of mistake.
import { fileURLToPath } from "node:url";
import { create, fromJson } from "@bufbuild/protobuf";
import {
  corpusResponse,
  type FakeVendor,
  loadCorpus,
  scenarios,
  startCombinedFake,
} from "@pluggableharness/fake-vendors";
import { ContentBlockSchema, type Message, Role, Stability } from "@pluggableharness/protocol/content";
import { type ModelSpec, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { SchemaSchema } from "@pluggableharness/protocol/schema";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accumulate, collect, type Launched, launch, type RequestInit, text, utf8 } from "../src/harness.ts";

const KEY = "sk-types-test";
const corpus = loadCorpus();
let fake: FakeVendor;

type Kind = "anthropic" | "responses" | "chat" | "gemini";
interface Adapter {
  provider: string;
  kind: Kind;
  plugin: Launched;
  models: ModelSpec[];
}
const adapters = new Map<string, Adapter>();
/** Captured bodies: [kind, label, body]. */
const captured: Array<{ kind: Kind; label: string; body: unknown }> = [];

const main = (name: string) => new URL(`../../../providers/${name}/src/main.ts`, import.meta.url);

async function start(provider: string, kind: Kind, config: Record<string, unknown>) {
  const plugin = await launch(provider, main(provider));
  const res = await plugin.client.configure({ config: config as never });
  expect(res.result?.diagnostics.filter((d) => d.severity === 2)).toEqual([]);
  const models = (await plugin.client.getCapabilities({})).capabilities!.models;
  adapters.set(provider, { provider, kind, plugin, models });
}

const png = {
  block: {
    case: "image" as const,
    value: { mediaType: "image/png", source: { case: "data" as const, value: utf8("\x89PNG-bytes") } },
  },
};
const pdf = {
  block: {
    case: "document" as const,
    value: { mediaType: "application/pdf", data: utf8("%PDF-1.4 body"), filename: "spec.pdf" },
  },
};
const schema = (json: unknown) => fromJson(SchemaSchema, json as never);
const TOOLS = [
  {
    name: "read_file",
    description: "Read a file of the project.",
    inputSchema: schema({
      type: "SCHEMA_TYPE_OBJECT",
      properties: [{ name: "path", schema: { type: "SCHEMA_TYPE_STRING", description: "Relative path" } }],
      required: ["path"],
    }),
  },
  {
    name: "search",
    description: "Search the project.",
    inputSchema: schema({
      type: "SCHEMA_TYPE_OBJECT",
      properties: [
        { name: "query", schema: { type: "SCHEMA_TYPE_STRING" } },
        { name: "max_results", schema: { type: "SCHEMA_TYPE_INTEGER" } },
      ],
      required: ["query"],
    }),
  },
];
const CONTEXT = [
  {
    provider: "project",
    label: "AGENTS.md",
    stability: Stability.STATIC,
    content: [text("Use TypeScript strict mode.")],
  },
  {
    provider: "git",
    label: "status",
    stability: Stability.DYNAMIC,
    content: [text("On branch main, clean.")],
  },
];

/** The vendor's own assistant turn, produced by replaying one of its recorded streams. */
async function ownTurn(a: Adapter, model: ModelSpec, streamId: string): Promise<Message> {
  const entry = corpus.streams.find((s) => s.id === streamId)!;
  fake.push(corpusResponse(entry));
  const names = (entry.expect.toolCalls ?? []).map((c) => ({ name: c.name, description: c.name }));
  const { events } = await collect(a.plugin.client, {
    modelId: model.id,
    messages: [{ role: Role.USER, id: "p0", content: [text("Hello")] }],
    tools: names,
    callContext: { sessionId: "types", turnId: "t0", workingDirectory: "/tmp" },
  } as RequestInit);
  const m = accumulate(events, model, a.provider).message;
  return { ...m, producedByProvider: a.provider, producedByModelId: model.id } as Message;
}

/** Another vendor's turn in the history: signed thinking and encrypted reasoning of its own. */
const foreignTurn = (provider: string, model: string): Message =>
  ({
    role: Role.ASSISTANT,
    id: "f1",
    producedByProvider: provider,
    producedByModelId: model,
    content: [
      {
        block: { case: "thinking", value: { text: "Their reasoning.", signature: utf8("their-signature") } },
      },
      { block: { case: "redactedThinking", value: { data: utf8("their-encrypted-reasoning") } } },
      text("I looked at the files."),
    ],
  }) as never;

/** A realistic conversation: attachments, the vendor's own tool turn, results, another vendor's turn. */
function conversation(own: Message, foreign: Message): Message[] {
  const calls = own.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value] : []));
  return [
    { role: Role.USER, id: "m0", content: [text("Read the spec and the weather."), png, pdf] } as never,
    own,
    {
      role: Role.USER,
      id: "m2",
      content: calls.map((c, i) => ({
        block: {
          case: "toolResult",
          value: {
            toolUseId: c.id,
            isError: i > 0,
            content: i === 0 ? [text("file contents\nline 2"), png] : [text("not found")],
          },
        },
      })),
    } as never,
    foreign,
    { role: Role.USER, id: "m4", content: [text("Now summarise everything.")] } as never,
  ];
}

async function capture(a: Adapter, label: string, init: Partial<RequestInit>) {
  fake.push(scenarios.text("ok"));
  const before = fake.requests.length;
  const { events, error } = await collect(a.plugin.client, {
    tools: TOOLS,
    assembledContext: CONTEXT,
    callContext: { sessionId: "types", turnId: "t1", workingDirectory: "/tmp" },
    ...init,
  } as RequestInit);
  const sent = fake.requests.slice(before).at(-1);
  if (!sent) {
    const why = events.map(
      (e) => `${e.event.case}: ${e.event.case === "error" ? e.event.value.message : ""}`,
    );
    throw new Error(`${label}: no request reached the vendor (${why.join("; ")}) ${String(error)}`);
  }
  captured.push({ kind: a.kind, label, body: sent.json });
}

beforeAll(async () => {
  fake = await startCombinedFake({ rateLimits: false });
  await Promise.all([
    start("anthropic", "anthropic", { api_key: KEY, base_url: fake.url }),
    start("openai", "responses", { api_key: KEY, base_url: `${fake.url}/v1` }),
    start("google", "gemini", { api_key: KEY, base_url: fake.url }),
    start("xai", "chat", { api_key: KEY, base_url: `${fake.url}/xai/v1` }),
    start("openai-compatible", "chat", {
      base_url: `${fake.url}/v1`,
      dialect: "openai",
      models: ["local-model"],
      reasoning: true,
      vision: true,
    }),
  ]);

  const foreignFor = (p: string) =>
    p === "anthropic" ? foreignTurn("openai", "gpt-5.4") : foreignTurn("anthropic", "claude-sonnet-4-6");
  const withModel = (a: Adapter, pick: (m: ModelSpec) => boolean) => a.models.find(pick) ?? a.models[0]!;

  // Anthropic: a thinking budget (Sonnet 4.6) and adaptive effort (first adaptive-only model).
  const an = adapters.get("anthropic")!;
  const sonnet = an.models.find((m) => m.id === "claude-sonnet-4-6")!;
  const adaptive = withModel(an, (m) => !!m.thinking?.effort && !m.thinking?.budget);
  const anOwn = await ownTurn(an, sonnet, "anthropic/sdk-ts-tool-use");
  const thinkingTurn = await ownTurn(an, sonnet, "anthropic/vercel-sonnet-5-reasoning");
  const anHistory = conversation(
    {
      ...anOwn,
      content: [...thinkingTurn.content.filter((b) => b.block.case === "thinking"), ...anOwn.content],
    },
    foreignFor("anthropic"),
  );
  const breakpoints = [
    { position: { case: "afterTools" as const, value: {} } },
    { position: { case: "afterAssembledContext" as const, value: {} } },
    { position: { case: "afterMessageIndex" as const, value: 2n } },
    { position: { case: "afterMessageIndex" as const, value: 4n } },
  ];
  await capture(an, "anthropic budget", {
    modelId: sonnet.id,
    messages: anHistory,
    cacheBreakpoints: breakpoints,
    params: {
      thinkingBudgetTokens: 2048n,
      maxOutputTokens: 8192n,
      stopSequences: ["END"],
      toolChoice: { mode: ToolChoiceMode.AUTO },
    },
  });
  await capture(an, "anthropic adaptive", {
    modelId: adaptive.id,
    messages: anHistory,
    cacheBreakpoints: breakpoints,
    params: { thinkingEffort: adaptive.thinking!.effort!.default, maxOutputTokens: 16000n },
  });

  // OpenAI Responses: its own recorded function call in the history, reasoning effort.
  const oa = adapters.get("openai")!;
  const oaModel = withModel(oa, (m) => !!m.thinking?.effort && m.supportsVision && m.supportsDocuments);
  const oaOwn = await ownTurn(oa, oaModel, "openai-responses/vercel-gpt-5.1-tool-call");
  // An own commentary message carries its phase back (EasyInputMessage.phase).
  const commentary = create(ContentBlockSchema, {
    block: { case: "text", value: { text: "Looking it up.", vendorState: utf8('{"phase":"commentary"}') } },
  });
  await capture(oa, "openai reasoning", {
    modelId: oaModel.id,
    messages: conversation({ ...oaOwn, content: [commentary, ...oaOwn.content] }, foreignFor("openai")),
    params: {
      thinkingEffort: oaModel.thinking!.effort!.default,
      maxOutputTokens: 4096n,
      toolChoice: { mode: ToolChoiceMode.SPECIFIC, toolName: "search" },
    },
    providerOptions: { service_tier: "flex" },
  });

  // Gemini: its own recorded call with a thought signature; a level model and a budget model.
  const gm = adapters.get("google")!;
  const level = withModel(gm, (m) => !!m.thinking?.effort);
  const budget = withModel(gm, (m) => !!m.thinking?.budget && m.thinking.budget.range!.max >= 1024n);
  const gmOwn = await ownTurn(gm, level, "gemini/vercel-gemini-3-pro-tool-call");
  await capture(gm, "gemini level", {
    modelId: level.id,
    messages: conversation(gmOwn, foreignFor("google")),
    params: {
      thinkingEffort: level.thinking!.effort!.default,
      maxOutputTokens: 4096n,
      toolChoice: { mode: ToolChoiceMode.ANY },
    },
  });
  await capture(gm, "gemini budget", {
    modelId: budget.id,
    messages: conversation(gmOwn, foreignFor("google")),
    params: { thinkingBudgetTokens: 1024n, temperature: 0.2 },
  });

  // Chat Completions: xAI (its own recorded call) and an OpenAI-compatible server.
  const xa = adapters.get("xai")!;
  const xaModel = withModel(xa, (m) => m.supportsVision);
  const xaOwn = await ownTurn(xa, xaModel, "xai/vercel-grok-3-mini-tool-call");
  await capture(xa, "xai", {
    modelId: xaModel.id,
    messages: conversation(xaOwn, foreignFor("xai")).map((m) => ({
      ...m,
      content: m.content.filter((b) => b.block.case !== "document"),
    })),
    params: {
      maxOutputTokens: 2048n,
      ...(xaModel.thinking?.effort ? { thinkingEffort: xaModel.thinking.effort.default } : {}),
    },
  });
  const oc = adapters.get("openai-compatible")!;
  const ocOwn = await ownTurn(oc, oc.models[0]!, "openai-chat/sdk-node-gpt-4o-structured-text");
  const ocCall: Message = {
    ...ocOwn,
    content: [
      ...ocOwn.content,
      create(ContentBlockSchema, {
        block: { case: "toolUse", value: { id: "call_1", name: "read_file", input: { path: "a.ts" } } },
      }),
    ],
  } as never;
  await capture(oc, "openai-compatible", {
    modelId: oc.models[0]!.id,
    messages: conversation(ocCall, foreignFor("openai-compatible")).map((m) => ({
      ...m,
      content: m.content.filter((b) => b.block.case !== "document"),
    })),
    params: { maxOutputTokens: 1024n, temperature: 0.3, stopSequences: ["\n\n"] },
  });
}, 90_000);

afterAll(async () => {
  await Promise.all([...adapters.values()].map((a) => a.plugin.host.shutdown()));
  await fake?.close();
});

// ---- the type check ------------------------------------------------------------------------

const HERE = fileURLToPath(new URL(".", import.meta.url));
const TYPE_OF: Record<Kind, string> = {
  anthropic: "MessageCreateParamsStreaming",
  responses: "ResponseCreateParamsStreaming",
  chat: "ChatCompletionCreateParamsStreaming",
  gemini: "GeminiGenerateContentBody",
};

const PRELUDE = `import type { MessageCreateParamsStreaming } from "@anthropic-ai/sdk/resources/messages";
import type { ResponseCreateParamsStreaming } from "openai/resources/responses/responses";
import type { ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import type { Content, GenerationConfig, SafetySetting, Tool, ToolConfig } from "@google/genai";
// The SDK's enums are string enums; on the wire they are their string values.
type Wire<T> = T extends string ? \`\${T}\` : T extends readonly (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;
// The REST body of models.streamGenerateContent, built from the SDK's own wire types.
type GeminiGenerateContentBody = Wire<{
  contents: Content[];
  systemInstruction?: Content;
  tools?: Tool[];
  toolConfig?: ToolConfig;
  generationConfig?: GenerationConfig;
  safetySettings?: SafetySetting[];
  cachedContent?: string;
}>;
`;

function source(entries: Array<{ kind: Kind; label: string; body: unknown }>): {
  text: string;
  lines: Map<number, string>;
} {
  let text = PRELUDE;
  const lines = new Map<number, string>();
  entries.forEach((e, i) => {
    const start = text.split("\n").length;
    const decl = `export const body${i} = ${JSON.stringify(e.body, null, 2)} satisfies ${TYPE_OF[e.kind]};\n`;
    const n = decl.split("\n").length - 1;
    for (let l = start; l < start + n; l++) lines.set(l, e.label);
    text += decl;
  });
  return { text, lines };
}

/** Type-checks virtual files next to this test (so the SDKs resolve from node_modules). */
function typeCheck(files: Record<string, string>): Map<string, ts.Diagnostic[]> {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    types: [],
    lib: ["lib.es2022.d.ts", "lib.dom.d.ts"],
  };
  const host = ts.createCompilerHost(options);
  const paths = Object.fromEntries(Object.entries(files).map(([name, text]) => [`${HERE}${name}`, text]));
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, lang, onError, create) =>
    fileName in paths
      ? ts.createSourceFile(fileName, paths[fileName]!, lang)
      : getSourceFile(fileName, lang, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (f) => f in paths || fileExists(f);
  const readFile = host.readFile.bind(host);
  host.readFile = (f) => paths[f] ?? readFile(f);
  const program = ts.createProgram(Object.keys(paths), options, host);
  const out = new Map<string, ts.Diagnostic[]>();
  for (const name of Object.keys(files)) {
    const sf = program.getSourceFile(`${HERE}${name}`)!;
    out.set(name, [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]);
  }
  return out;
}

const describeDiagnostic = (d: ts.Diagnostic, lines: Map<number, string>) => {
  const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
  return `${lines.get(line) ?? "prelude"} (line ${line}): ${ts.flattenDiagnosticMessageText(d.messageText, "\n").slice(0, 600)}`;
};

// biome-ignore lint/suspicious/noExplicitAny: captured JSON bodies, edited by path below
type Loose = any;

/** Deliberately wrong bodies: each must be refused by its SDK type. */
function broken(): Array<{ kind: Kind; label: string; body: unknown }> {
  const first = (k: Kind) =>
    structuredClone(captured.find((c) => c.kind === k)!.body) as Record<string, Loose>;
  const out: Array<{ kind: Kind; label: string; body: unknown }> = [];
  const a1 = first("anthropic");
  a1["max_token"] = a1["max_tokens"];
  delete a1["max_tokens"];
  out.push({ kind: "anthropic", label: "anthropic: max_token instead of max_tokens", body: a1 });
  const a2 = first("anthropic");
  a2["messages"][0]["content"][0]["type"] = "input_text";
  out.push({ kind: "anthropic", label: "anthropic: another vendor's block type", body: a2 });
  const a3 = first("anthropic");
  a3["tools"][0]["inputSchema"] = a3["tools"][0]["input_schema"];
  delete a3["tools"][0]["input_schema"];
  out.push({ kind: "anthropic", label: "anthropic: camelCase inputSchema", body: a3 });
  const o1 = first("responses");
  o1["input"].find((i: Loose) => i.type === "function_call")["arguments"] = { city: "Beijing" };
  out.push({ kind: "responses", label: "responses: arguments as an object", body: o1 });
  const o2 = first("responses");
  o2["reasoning"] = { effort: "extreme" };
  out.push({ kind: "responses", label: "responses: unknown effort", body: o2 });
  const c1 = first("chat");
  c1["messages"].find((m: Loose) => m.role === "tool")["tool_use_id"] = "x";
  out.push({ kind: "chat", label: "chat: tool_use_id on a tool message", body: c1 });
  const c2 = first("chat");
  c2["max_tokens"] = "2048";
  out.push({ kind: "chat", label: "chat: max_tokens as a string", body: c2 });
  const g1 = first("gemini");
  g1["contents"][0]["parts"][0] = { type: "text", text: "hi" };
  out.push({ kind: "gemini", label: "gemini: an Anthropic-style part", body: g1 });
  const g2 = first("gemini");
  g2["generationConfig"] = { ...g2["generationConfig"], thinkingConfig: { thinking_level: "high" } };
  out.push({ kind: "gemini", label: "gemini: snake_case thinking_level", body: g2 });
  return out;
}

describe("request bodies against the vendors' official SDK types", () => {
  it("captured a realistic body from every adapter", () => {
    expect(captured.map((c) => c.label)).toEqual([
      "anthropic budget",
      "anthropic adaptive",
      "openai reasoning",
      "gemini level",
      "gemini budget",
      "xai",
      "openai-compatible",
    ]);
    // The conversations exercise what they claim to.
    const all = JSON.stringify(captured.map((c) => c.body));
    for (const needle of [
      "cache_control",
      "tool_result",
      "function_call_output",
      "functionResponse",
      "thoughtSignature",
      "image_url",
      "input_file",
      "inlineData",
      "thinking",
      "reasoning",
    ]) {
      expect(all, needle).toContain(needle);
    }
  });

  it("every captured body type-checks, and every deliberately broken one is refused", () => {
    const good = source(captured);
    const bad = broken();
    const badSource = source(bad);
    const result = typeCheck({ "__bodies__.ts": good.text, "__broken__.ts": badSource.text });
    expect(result.get("__bodies__.ts")!.map((d) => describeDiagnostic(d, good.lines))).toEqual([]);
    const refused = new Set(
      result.get("__broken__.ts")!.map((d) => describeDiagnostic(d, badSource.lines).split(" (line")[0]),
    );
    expect([...refused].sort()).toEqual(bad.map((b) => b.label).sort());
  }, 120_000);
});
