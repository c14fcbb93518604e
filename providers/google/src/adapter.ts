// The Gemini adapter: configuration, one streamGenerateContent (alt=sse) request per
// completion, and exact token counts through models.countTokens.
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type AttributeDef,
  checkBaseUrl,
  ev,
  joinUrl,
  type ModelAdapter,
  plainHttpWarning,
  refuseHtml,
  requestTokenCount,
  StopSequenceMatcher,
  sendVendorRequest,
  WireNotices,
} from "@pluggableharness/model-kit";
import { GEMINI_MODELS } from "./catalog.ts";
import { cachedPrefix, ExplicitCaches } from "./explicit-cache.ts";
import { buildRequest } from "./request.ts";
import { geminiFailure, translateStream } from "./stream.ts";

/** Stream oddities already reported by this process (each is logged once, not every turn). */
const WIRE_SEEN = new Set<string>();

export const DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";
export const API_VERSION = "v1beta";

export const ATTRIBUTES: AttributeDef[] = [
  {
    name: "api_key",
    kind: "string",
    required: true,
    sensitive: true,
    description: "Gemini API key, sent in the x-goog-api-key header.",
  },
  {
    name: "base_url",
    kind: "string",
    default: DEFAULT_BASE_URL,
    description: "API base URL (requests go to <base_url>/v1beta/models/<model>:streamGenerateContent).",
    check: checkBaseUrl,
  },
  {
    name: "explicit_cache_ttl_seconds",
    kind: "number",
    default: 300,
    description:
      "Lifetime of the explicit caches created for the kernel's cache breakpoints (60-86400 s). Cached " +
      "tokens are billed per hour of storage, so short lifetimes keep that cost down; caches are deleted " +
      "on shutdown.",
    check: (v) =>
      typeof v === "number" && Number.isInteger(v) && v >= 60 && v <= 86_400
        ? undefined
        : "must be an integer from 60 to 86400",
  },
  {
    name: "include_thoughts",
    kind: "bool",
    default: true,
    description: "Ask for thought summaries (streamed as thinking deltas) on models that reason.",
  },
];

export interface GeminiState {
  apiKey: string;
  baseUrl: string;
  includeThoughts: boolean;
  caches: ExplicitCaches;
}

const modelPath = (state: GeminiState, model: string, method: string) =>
  joinUrl(state.baseUrl, `/${API_VERSION}/models/${encodeURIComponent(model)}:${method}`);

export const adapter: ModelAdapter<GeminiState> = {
  packageJson: new URL("../package.json", import.meta.url),
  name: "google",
  attributes: ATTRIBUTES,
  builtins: GEMINI_MODELS,
  ownsModel: (id) => id.startsWith("gemini-"),

  configure(values: Record<string, JsonValue>, ctx) {
    const state: GeminiState = {
      apiKey: String(values["api_key"]),
      baseUrl: String(values["base_url"] ?? DEFAULT_BASE_URL),
      includeThoughts: values["include_thoughts"] !== false,
      caches: new ExplicitCaches(Number(values["explicit_cache_ttl_seconds"] ?? 300), ctx.log.named("cache")),
    };
    const insecure = plainHttpWarning(state.baseUrl);
    if (insecure) ctx.report(insecure);
    return state;
  },

  async *stream(req, call) {
    const { state, model, signal } = call;
    const built = buildRequest(req, model, call.self, state.includeThoughts);
    if (built.droppedSampling.length > 0)
      call.log.warn(`${model.id} does not accept ${built.droppedSampling.join(", ")}; not sent`);
    if (built.placeholderSignatures > 0)
      call.log.debug("function calls without a thought signature sent with the placeholder", {
        model: model.id,
        calls: built.placeholderSignatures,
      });
    const prefix = model.caching.explicitMarkers ? cachedPrefix(req, built.body) : undefined;
    const cached =
      prefix === undefined
        ? { body: built.body }
        : await state.caches.apply(built.body, prefix, {
            baseUrl: state.baseUrl,
            apiKey: state.apiKey,
            model: model.id,
            signal,
          });
    const body = cached.body;
    // A cache created for this request is billed: its tokens once, at the input rate (the
    // catalog's cache-write rate), and their storage for the cache's lifetime.
    if (cached.created) {
      const { tokens, ttlSeconds } = cached.created;
      yield ev.usage({
        input: 0,
        output: 0,
        cacheWrite: tokens,
        cacheStorageTokenSeconds: tokens * ttlSeconds,
        components: [{ name: "explicit_cache_created", value: 1 }],
      });
    }
    const res = await sendVendorRequest({
      url: `${modelPath(state, model.id, "streamGenerateContent")}?alt=sse`,
      headers: { "x-goog-api-key": state.apiKey, accept: "text/event-stream" },
      body,
      signal,
    });
    if (!res.ok) throw geminiFailure(res.status, await res.text(), res.headers);
    await refuseHtml(res);
    yield* translateStream(
      res.body,
      signal,
      built.names,
      new StopSequenceMatcher(req.params?.stopSequences ?? []),
      new WireNotices("google", call.log, WIRE_SEEN),
    );
  },

  async countTokens(req, call) {
    const { state, model, signal } = call;
    return requestTokenCount(
      {
        url: modelPath(state, model.id, "countTokens"),
        headers: { "x-goog-api-key": state.apiKey },
        body: { contents: [{ role: "user", parts: [{ text: req.text }] }] },
        signal,
      },
      "totalTokens",
      geminiFailure,
    );
  },

  dispose(state) {
    return state.caches.dispose();
  },
};
