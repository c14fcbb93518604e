// The xAI model provider: Grok models over xAI's Chat Completions endpoint
// (`POST {base_url}/chat/completions`), streamed.
//
// xAI specifics (docs/decisions/vendors.md, "OpenAI, xAI and OpenAI-compatible"):
// - reasoning text arrives as `delta.reasoning_content` and becomes thinking deltas; it has
//   no signature and Chat Completions cannot take it back, so it is never replayed;
// - completion_tokens leaves reasoning out, so reasoning_tokens is a distinct count;
// - `cost_in_usd_ticks` is reported as vendor_cost, the exact integer text with unit
//   "xai_ticks_1e10" (10^10 ticks per US dollar), never converted;
// - reasoning models reject `stop`, so stop sequences are enforced by the adapter;
// - `x-grok-conv-id` carries the session id so repeat requests of a conversation reach the
//   same server and its prompt cache (turn off with cache_affinity = false).
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type AdapterCall,
  type AttributeDef,
  type ConfigureContext,
  checkBaseUrl,
  joinUrl,
  type ModelAdapter,
  plainHttpWarning,
  type UsageInit,
} from "@pluggableharness/model-kit";
import { decimalText, detailComponents, num, streamChatCompletion } from "@pluggableharness/openai-wire";
import type { StreamCompletionRequest } from "@pluggableharness/protocol/model";
import { isXaiModel, XAI_MODELS } from "./catalog.ts";

export const DEFAULT_BASE_URL = "https://api.x.ai/v1";

/** provider_options keys passed into the request body unchanged (README). */
export const XAI_OPTIONS = ["seed", "top_p", "user", "parallel_tool_calls", "response_format"];

export interface XaiState {
  baseUrl: string;
  headers: Record<string, string>;
  cacheAffinity: boolean;
}

export const ATTRIBUTES: readonly AttributeDef[] = [
  {
    name: "api_key",
    kind: "string",
    required: true,
    sensitive: true,
    description: "xAI API key (xai-…), sent as a Bearer token.",
  },
  {
    name: "base_url",
    kind: "string",
    default: DEFAULT_BASE_URL,
    description: "API base URL including the version path.",
    check: checkBaseUrl,
  },
  {
    name: "cache_affinity",
    kind: "bool",
    default: true,
    description:
      "Send the session id as x-grok-conv-id so a conversation keeps hitting the same prompt cache.",
  },
];

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (typeof v === "object" && v !== null ? (v as Json) : {});

/**
 * xAI chat usage: prompt_tokens includes cached tokens (taken out), completion_tokens
 * excludes reasoning (reported apart), total_tokens adds reasoning back.
 */
export function xaiUsage(u: Json, rawFrame: string): UsageInit {
  const prompt = num(u.prompt_tokens) ?? 0;
  const promptDetails = obj(u.prompt_tokens_details);
  const cached = num(promptDetails.cached_tokens) ?? 0;
  const outDetails = obj(u.completion_tokens_details);
  const reasoning = num(outDetails.reasoning_tokens);
  const total = num(u.total_tokens);
  const ticks = u.cost_in_usd_ticks === undefined ? undefined : decimalText(rawFrame, "cost_in_usd_ticks");
  const counters: Array<{ name: string; value: number }> = [];
  for (const key of ["num_sources_used", "num_server_side_tools_used"]) {
    const n = num(u[key]);
    if (n !== undefined && n > 0) counters.push({ name: key, value: n });
  }
  return {
    input: Math.max(0, prompt - cached),
    output: num(u.completion_tokens) ?? 0,
    cacheRead: cached,
    ...(reasoning !== undefined ? { reasoning } : {}),
    components: [
      ...detailComponents("prompt_tokens_details", promptDetails, ["cached_tokens", "text_tokens"]),
      ...detailComponents("completion_tokens_details", outDetails, ["reasoning_tokens"]),
      ...counters,
    ],
    ...(total !== undefined ? { vendorTotal: total } : {}),
    ...(ticks !== undefined
      ? { vendorCost: { amount: ticks, unit: "xai_ticks_1e10", currency: "USD" } }
      : {}),
  };
}

export const adapter: ModelAdapter<XaiState> = {
  packageJson: new URL("../package.json", import.meta.url),
  name: "xai",
  attributes: ATTRIBUTES,
  builtins: XAI_MODELS,
  ownsModel: isXaiModel,

  configure(values: Record<string, JsonValue>, ctx: ConfigureContext): XaiState {
    const insecure = plainHttpWarning(values["base_url"]);
    if (insecure) ctx.report(insecure);
    return {
      baseUrl: values["base_url"] as string,
      headers: { authorization: `Bearer ${values["api_key"] as string}` },
      cacheAffinity: values["cache_affinity"] !== false,
    };
  },

  stream(req: StreamCompletionRequest, call: AdapterCall<XaiState>) {
    const session = req.callContext?.sessionId;
    const headers =
      call.state.cacheAffinity && session
        ? { ...call.state.headers, "x-grok-conv-id": session }
        : call.state.headers;
    return streamChatCompletion(req, call, {
      url: joinUrl(call.state.baseUrl, "chat/completions"),
      headers,
      request: {
        maxTokensField: "max_tokens",
        streamUsage: true,
        passThrough: XAI_OPTIONS,
        samplingOptions: ["top_p"],
      },
      usage: xaiUsage,
    });
  },
};
