// The OpenAI model provider: the Responses API (`POST {base_url}/responses`), streamed.
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type AdapterCall,
  type AttributeDef,
  type ConfigureContext,
  checkBaseUrl,
  joinUrl,
  type ModelAdapter,
  ModelFailure,
  plainHttpWarning,
  StopSequenceMatcher,
  sendVendorRequest,
  WireNotices,
} from "@pluggableharness/model-kit";
import { classifyHttpError, streamOpenAI } from "@pluggableharness/openai-wire";
import type { CountTokensRequest, StreamCompletionRequest } from "@pluggableharness/protocol/model";
import { isOpenAIModel, OPENAI_MODELS } from "./catalog.ts";
import { buildResponsesRequest } from "./request.ts";
import { parseResponsesStream } from "./stream.ts";

/** Stream oddities already reported by this process (each is logged once, not every turn). */
const WIRE_SEEN = new Set<string>();

export const DEFAULT_BASE_URL = "https://api.openai.com/v1";

export interface OpenAIState {
  baseUrl: string;
  headers: Record<string, string>;
}

export const ATTRIBUTES: readonly AttributeDef[] = [
  {
    name: "api_key",
    kind: "string",
    required: true,
    sensitive: true,
    description: "OpenAI API key, sent as a Bearer token.",
  },
  {
    name: "base_url",
    kind: "string",
    default: DEFAULT_BASE_URL,
    description: "API base URL including the version path (a proxy or a test server).",
    check: checkBaseUrl,
  },
  { name: "organization", kind: "string", description: "Sent as the OpenAI-Organization header." },
  { name: "project", kind: "string", description: "Sent as the OpenAI-Project header." },
];

/** The explicit signal that reasoning_tokens are already inside output_tokens. */
const REASONING_INCLUDED = "x-reasoning-included";

export const adapter: ModelAdapter<OpenAIState> = {
  packageJson: new URL("../package.json", import.meta.url),
  name: "openai",
  attributes: ATTRIBUTES,
  builtins: OPENAI_MODELS,
  ownsModel: isOpenAIModel,

  configure(values: Record<string, JsonValue>, ctx: ConfigureContext): OpenAIState {
    const insecure = plainHttpWarning(values["base_url"]);
    if (insecure) ctx.report(insecure);
    const headers: Record<string, string> = { authorization: `Bearer ${values["api_key"] as string}` };
    if (typeof values["organization"] === "string") headers["openai-organization"] = values["organization"];
    if (typeof values["project"] === "string") headers["openai-project"] = values["project"];
    return { baseUrl: values["base_url"] as string, headers };
  },

  async *stream(req: StreamCompletionRequest, call: AdapterCall<OpenAIState>) {
    const { body, names, declared, droppedReasoning, droppedSampling } = buildResponsesRequest(
      req,
      call.model,
      call.self,
    );
    if (droppedSampling.length > 0)
      call.log.warn(
        `${call.model.id} does not accept ${droppedSampling.join(", ")} at this effort; not sent`,
      );
    if (droppedReasoning > 0)
      call.log.debug("left out reasoning the Responses API cannot take back", { blocks: droppedReasoning });
    const stop = new StopSequenceMatcher(req.params?.stopSequences ?? []);
    yield* streamOpenAI(
      {
        url: joinUrl(call.state.baseUrl, "responses"),
        headers: call.state.headers,
        body,
        signal: call.signal,
        log: call.log,
      },
      ({ response, rateLimits }) =>
        parseResponsesStream(response.body, {
          names,
          declared,
          stop,
          rateLimits,
          reasoningIncluded: response.headers.get(REASONING_INCLUDED)?.trim().toLowerCase() === "true",
          signal: call.signal,
          notices: new WireNotices("openai", call.log, WIRE_SEEN),
        }),
    );
  },

  /** Exact: the API's own input-token counter (`POST {base_url}/responses/input_tokens`). */
  async countTokens(req: CountTokensRequest, call: AdapterCall<OpenAIState>) {
    const res = await sendVendorRequest({
      url: joinUrl(call.state.baseUrl, "responses/input_tokens"),
      headers: call.state.headers,
      body: { model: req.modelId, input: req.text },
      signal: call.signal,
    });
    const text = await res.text();
    if (!res.ok) throw classifyHttpError(res.status, res.headers, text);
    let count: unknown;
    try {
      count = (JSON.parse(text) as { input_tokens?: unknown }).input_tokens;
    } catch {
      count = undefined;
    }
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0)
      throw new ModelFailure("unknown", "the token-count answer carries no input_tokens", {
        retryable: false,
        vendorBody: text,
        httpStatus: res.status,
      });
    return count;
  },
};
