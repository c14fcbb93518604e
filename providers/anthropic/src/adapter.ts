// The Anthropic adapter: configuration, one streamed Messages request per completion,
// exact token counts, and the optional prompt-cache keep-alive.
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type AttributeDef,
  checkBaseUrl,
  ev,
  joinUrl,
  type ModelAdapter,
  plainHttpWarning,
  rateLimitsFromHeaders,
  refuseHtml,
  requestTokenCount,
  sendVendorRequest,
  WireNotices,
} from "@pluggableharness/model-kit";
import { ANTHROPIC_MODELS } from "./catalog.ts";
import { Keepalive } from "./keepalive.ts";
import { buildRequest } from "./request.ts";
import { anthropicFailure, RATE_LIMIT_FAMILIES, translateStream } from "./stream.ts";

export const ANTHROPIC_VERSION = "2023-06-01";
export const DEFAULT_BASE_URL = "https://api.anthropic.com";
/** Keep-alive pings must land inside the 5-minute cache lifetime. */
export const MAX_KEEPALIVE_SECONDS = 290;

export const ATTRIBUTES: AttributeDef[] = [
  {
    name: "api_key",
    kind: "string",
    required: true,
    sensitive: true,
    description: "Anthropic API key, sent as x-api-key.",
  },
  {
    name: "base_url",
    kind: "string",
    default: DEFAULT_BASE_URL,
    description: "API base URL (requests go to <base_url>/v1/messages).",
    check: checkBaseUrl,
  },
  {
    name: "cache_keepalive_seconds",
    kind: "number",
    default: 0,
    description:
      "Re-send the last cached prompt prefix (a pre-warm with max_tokens 0, or 1 when thinking is on) after " +
      "this many idle seconds to keep Anthropic's 5-minute prompt cache warm; 0 turns the keep-alive off. " +
      "Each ping is billed, mostly as a cache read, and appears in the session's cost.",
    check: (v) =>
      typeof v === "number" && v >= 0 && v <= MAX_KEEPALIVE_SECONDS
        ? undefined
        : `must be between 0 and ${MAX_KEEPALIVE_SECONDS}`,
  },
  {
    name: "cache_keepalive_max_pings",
    kind: "number",
    default: 3,
    description:
      "Most keep-alive pings after one real request (the keep-alive stops once the session goes quiet).",
    check: (v) =>
      typeof v === "number" && Number.isInteger(v) && v >= 1 && v <= 100
        ? undefined
        : "must be an integer from 1 to 100",
  },
];

/** Stream oddities already reported by this process (each is logged once, not every turn). */
const WIRE_SEEN = new Set<string>();

export interface AnthropicState {
  apiKey: string;
  baseUrl: string;
  keepalive: Keepalive | undefined;
}

export const adapter: ModelAdapter<AnthropicState> = {
  packageJson: new URL("../package.json", import.meta.url),
  name: "anthropic",
  attributes: ATTRIBUTES,
  builtins: ANTHROPIC_MODELS,
  ownsModel: (id) => id.startsWith("claude-"),

  configure(values: Record<string, JsonValue>, ctx) {
    const seconds = Number(values["cache_keepalive_seconds"] ?? 0);
    const state: AnthropicState = {
      apiKey: String(values["api_key"]),
      baseUrl: String(values["base_url"] ?? DEFAULT_BASE_URL),
      keepalive: undefined,
    };
    if (seconds > 0) {
      state.keepalive = new Keepalive({
        intervalMs: seconds * 1000,
        maxPings: Number(values["cache_keepalive_max_pings"] ?? 3),
        log: ctx.log.named("keepalive"),
      });
    }
    const insecure = plainHttpWarning(state.baseUrl);
    if (insecure) ctx.report(insecure);
    return state;
  },

  async *stream(req, call) {
    const { state, model, signal } = call;
    state.keepalive?.cancel();
    // Pings answered since the last completion are billed: their usage goes to this stream.
    for (const u of state.keepalive?.takeUsage() ?? []) yield ev.usage(u);
    const built = buildRequest(req, model, call.self);
    for (const note of built.notes) call.log.warn(note, { model: model.id });
    const url = joinUrl(state.baseUrl, "/v1/messages");
    const headers = {
      "x-api-key": state.apiKey,
      "anthropic-version": ANTHROPIC_VERSION,
      accept: "text/event-stream",
      ...built.headers,
    };
    const res = await sendVendorRequest({ url, headers, body: built.body, signal });
    const requestId = res.headers.get("request-id");
    if (requestId) yield ev.start(requestId);
    if (!res.ok) {
      // Budgets are reported on every answer, a refused one included (a 429 says which ran out).
      const rateLimits = rateLimitsFromHeaders(res.headers, RATE_LIMIT_FAMILIES);
      if (rateLimits.length > 0) yield ev.metadata({ rateLimits });
      throw anthropicFailure(res.status, await res.text(), res.headers);
    }
    await refuseHtml(res);
    let completed = false;
    for await (const event of translateStream(
      res.body,
      res.headers,
      signal,
      built.names,
      new WireNotices("anthropic", call.log, WIRE_SEEN),
    )) {
      if (event.event?.case === "stop") completed = true;
      yield event;
    }
    if (completed && built.cached && state.keepalive) {
      state.keepalive.schedule({ url, headers, body: built.body, thinkingBudget: built.thinkingBudget });
    }
  },

  async countTokens(req, call) {
    const { state, model, signal } = call;
    return requestTokenCount(
      {
        url: joinUrl(state.baseUrl, "/v1/messages/count_tokens"),
        headers: { "x-api-key": state.apiKey, "anthropic-version": ANTHROPIC_VERSION },
        body: { model: model.id, messages: [{ role: "user", content: req.text }] },
        signal,
      },
      "input_tokens",
      anthropicFailure,
    );
  },

  dispose(state) {
    state.keepalive?.cancel();
  },
};
