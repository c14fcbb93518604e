// The OpenAI-compatible model provider: any server speaking Chat Completions
// (`POST {base_url}/chat/completions`): Ollama, vLLM, LM Studio, Mistral, gateways.
//
// It has no built-in catalog: the provider block declares the models (README):
// - `model` / `models`: ids served with the provider-level capabilities below
//   (context_window, max_output_tokens, tool_use, vision, documents, parallel_tool_calls,
//   reasoning) and the provider-level pricing;
// - `models_json`: per-model declarations (the kit's format); they win over `models`.
// Pricing: `free = true`, or input_per_mtok + output_per_mtok (+ cache_read_per_mtok). When
// neither is given, a loopback base URL (a server on this machine) is free and anything
// else is a configuration error: a remote server's cost is never assumed.
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type AdapterCall,
  type AttributeDef,
  type CatalogModel,
  type ConfigureContext,
  checkBaseUrl,
  diagnostic,
  isLoopback,
  joinUrl,
  type ModelAdapter,
  plainHttpWarning,
  type ThinkingDef,
} from "@pluggableharness/model-kit";
import { chatUsage, streamChatCompletion } from "@pluggableharness/openai-wire";
import type { StreamCompletionRequest } from "@pluggableharness/protocol/model";

/**
 * Request-side differences between compatible servers:
 * - streamUsage: ask for the usage chunk with stream_options.include_usage;
 * - echoReasoning: assistant messages must carry their reasoning back as reasoning_content,
 *   or the server answers 400 (DeepSeek and Moonshot in thinking mode): Moonshot asks it of
 *   messages with tool calls, DeepSeek of every assistant message of a user-to-user stretch
 *   in which the model called a tool, the final answer included.
 */
export const DIALECTS = {
  /** OpenAI's own rules; also vLLM, LM Studio, llama.cpp, most gateways. */
  openai: { streamUsage: true, echoReasoning: undefined },
  ollama: { streamUsage: true, echoReasoning: undefined },
  vllm: { streamUsage: true, echoReasoning: undefined },
  lmstudio: { streamUsage: true, echoReasoning: undefined },
  /** Mistral sends usage on the finish chunk unasked and gets no stream_options. */
  mistral: { streamUsage: false, echoReasoning: undefined },
  /** api.deepseek.com: "The reasoning_content in the thinking mode must be passed back". */
  deepseek: { streamUsage: true, echoReasoning: "tool-turns" },
  /** Moonshot (Kimi): "reasoning_content is missing in assistant tool call message". */
  moonshot: { streamUsage: true, echoReasoning: "tool-calls" },
} as const;
export type Dialect = keyof typeof DIALECTS;

/** provider_options keys passed into the request body unchanged (README). */
export const COMPATIBLE_OPTIONS = [
  "seed",
  "top_p",
  "top_k",
  "min_p",
  "user",
  "parallel_tool_calls",
  "response_format",
  "presence_penalty",
  "frequency_penalty",
  "repetition_penalty",
  "safe_prompt",
  "keep_alive",
];

export const DEFAULT_CONTEXT_WINDOW = 32_768;
export const DEFAULT_MAX_OUTPUT_TOKENS = 8_192;

export interface CompatibleState {
  baseUrl: string;
  headers: Record<string, string>;
  dialect: Dialect;
  models: CatalogModel[];
}

const positiveInt = (v: JsonValue) =>
  typeof v === "number" && Number.isInteger(v) && v > 0 ? undefined : "must be a positive whole number";
const rate = (v: JsonValue) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? undefined : "must be a non-negative number";

export const ATTRIBUTES: readonly AttributeDef[] = [
  {
    name: "base_url",
    kind: "string",
    required: true,
    description: "The server's OpenAI-compatible base URL, e.g. http://localhost:11434/v1 for Ollama.",
    check: checkBaseUrl,
  },
  {
    name: "api_key",
    kind: "string",
    sensitive: true,
    description: "Bearer token, when the server wants one (local servers usually do not).",
  },
  {
    name: "model",
    kind: "string",
    description: "A model id the server serves (shorthand for models = [id]).",
  },
  {
    name: "models",
    kind: "list_string",
    description: "Model ids the server serves, declared with the settings below.",
  },
  {
    name: "context_window",
    kind: "number",
    default: DEFAULT_CONTEXT_WINDOW,
    description: "Input token budget of the models declared by model/models.",
    check: positiveInt,
  },
  {
    name: "max_output_tokens",
    kind: "number",
    default: DEFAULT_MAX_OUTPUT_TOKENS,
    description: "Output limit of the models declared by model/models.",
    check: positiveInt,
  },
  { name: "tool_use", kind: "bool", default: true, description: "The declared models call tools." },
  { name: "vision", kind: "bool", default: false, description: "The declared models take images." },
  {
    name: "documents",
    kind: "bool",
    default: false,
    description: "The declared models take PDF file parts.",
  },
  {
    name: "parallel_tool_calls",
    kind: "bool",
    default: false,
    description: "The declared models may call several tools in one turn.",
  },
  {
    name: "reasoning",
    kind: "bool",
    default: false,
    description: "The declared models stream reasoning text (reasoning_content / reasoning).",
  },
  {
    name: "free",
    kind: "bool",
    description: "The server costs nothing per token (default: true for a loopback base_url, else required).",
  },
  { name: "input_per_mtok", kind: "number", description: "USD per million input tokens.", check: rate },
  { name: "output_per_mtok", kind: "number", description: "USD per million output tokens.", check: rate },
  {
    name: "cache_read_per_mtok",
    kind: "number",
    description: "USD per million cached prompt tokens; declares implicit caching.",
    check: rate,
  },
  {
    name: "dialect",
    kind: "string",
    default: "openai",
    description: `Server family: ${Object.keys(DIALECTS).join(", ")}.`,
    check: (v) =>
      typeof v === "string" && v in DIALECTS
        ? undefined
        : `must be one of ${Object.keys(DIALECTS).join(", ")}`,
  },
];

type Pricing = CatalogModel["pricing"];

/** The provider-level pricing, or why there is none. */
function providerPricing(values: Record<string, JsonValue>): { pricing?: Pricing; problem?: string } {
  const input = values["input_per_mtok"];
  const output = values["output_per_mtok"];
  const cacheRead = values["cache_read_per_mtok"];
  const hasRates = typeof input === "number" && typeof output === "number";
  if (values["free"] === true) return { pricing: { free: true, tiers: [] } };
  if (hasRates)
    return {
      pricing: {
        tiers: [
          {
            input,
            output,
            ...(typeof cacheRead === "number" ? { cacheRead, cacheWrite: input } : {}),
          },
        ],
      },
    };
  if (values["free"] === false) return { problem: "free = false needs input_per_mtok and output_per_mtok" };
  if (typeof values["base_url"] === "string" && isLoopback(values["base_url"]))
    return { pricing: { free: true, tiers: [] } };
  return {
    problem: "a remote server's cost is not assumed: set free = true, or input_per_mtok and output_per_mtok",
  };
}

const REASONS: ThinkingDef = { adaptiveByDefault: true, disable: "never" };

function declared(values: Record<string, JsonValue>, pricing: Pricing): CatalogModel[] {
  const ids = [
    ...(typeof values["model"] === "string" ? [values["model"]] : []),
    ...((values["models"] as string[] | undefined) ?? []),
  ];
  const caching = typeof values["cache_read_per_mtok"] === "number" && !pricing.free;
  return [...new Set(ids)].map((id) => ({
    id,
    contextWindow: values["context_window"] as number,
    maxOutputTokens: values["max_output_tokens"] as number,
    toolUse: values["tool_use"] === true,
    vision: values["vision"] === true,
    documents: values["documents"] === true,
    streaming: true,
    parallelToolCalls: values["parallel_tool_calls"] === true,
    ...(values["reasoning"] === true ? { thinking: REASONS } : {}),
    caching: { explicitMarkers: false, implicitAutomatic: caching },
    toolChoiceModes: values["tool_use"] === true ? ["auto", "any", "none", "specific"] : [],
    pricing,
    sources: { all: "declared in the provider block (model/models and the provider-level settings)" },
    userDeclared: true,
  }));
}

export const adapter: ModelAdapter<CompatibleState> = {
  packageJson: new URL("../package.json", import.meta.url),
  name: "openai-compatible",
  attributes: ATTRIBUTES,
  builtins: [],
  // Only the models this provider block declares are its own (the scaffold adds those).
  ownsModel: () => false,

  configure(values: Record<string, JsonValue>, ctx: ConfigureContext): CompatibleState {
    const { pricing, problem } = providerPricing(values);
    if (problem) ctx.report(diagnostic("error", ["free"], "Pricing is not declared", problem));
    if (values["free"] === true && typeof values["input_per_mtok"] === "number")
      ctx.report(diagnostic("warning", ["input_per_mtok"], "Rates are ignored because free = true"));
    const models = pricing ? declared(values, pricing) : [];
    if (models.length === 0 && values["models_json"] === undefined)
      ctx.report(
        diagnostic(
          "warning",
          ["models"],
          "No model is declared",
          "Declare the server's models with model, models or models_json; until then this provider serves none.",
        ),
      );
    const headers: Record<string, string> = {};
    if (typeof values["api_key"] === "string") {
      headers["authorization"] = `Bearer ${values["api_key"]}`;
      const insecure = plainHttpWarning(values["base_url"]);
      if (insecure) ctx.report(insecure);
    }
    return {
      baseUrl: values["base_url"] as string,
      headers,
      dialect: values["dialect"] as Dialect,
      models,
    };
  },

  declaredModels: (state) => state.models,
  defaultPricing: (values) => providerPricing(values).pricing,

  stream(req: StreamCompletionRequest, call: AdapterCall<CompatibleState>) {
    const caching = call.model.caching.implicitAutomatic || call.model.caching.explicitMarkers;
    return streamChatCompletion(req, call, {
      url: joinUrl(call.state.baseUrl, "chat/completions"),
      headers: call.state.headers,
      request: {
        maxTokensField: "max_tokens",
        streamUsage: DIALECTS[call.state.dialect].streamUsage,
        echoReasoning: DIALECTS[call.state.dialect].echoReasoning,
        passThrough: COMPATIBLE_OPTIONS,
        samplingOptions: ["top_p", "top_k"],
      },
      usage: (u) => chatUsage(u, { caching }),
    });
  },
};
