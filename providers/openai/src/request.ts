// Canonical request -> Responses API body (`POST …/responses`, stream: true, store: false).
//
// - assembled_context becomes `instructions` (sections joined by blank lines).
// - User content: input_text, input_image (data URL or URL), input_file (PDF as a data URL).
//   Tool results become function_call_output items (a string, or a list of input parts
//   when the result carries images or documents); "Error: " marks a failed call.
// - Assistant content, in block order: messages with string content, function_call items (arguments
//   as JSON text), and this vendor's own reasoning items replayed verbatim (reasoning.ts).
//   Reasoning produced by another vendor is dropped (model-kit content rule 1).
// - Reasoning models always get include: ["reasoning.encrypted_content"] and a summary
//   request, so every reasoning item can be replayed without server-side storage.
// - No stop parameter exists; stop sequences are enforced by the adapter.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  type CatalogModel,
  OPENAI_TOOL_NAMES,
  opaqueToString,
  type ProviderIdentity,
  prepareHistory,
  samplingFor,
  schemaToJson,
  systemTexts,
  type ToolNameMap,
  toolNameMap,
} from "@pluggableharness/model-kit";
import {
  argumentsText,
  documentDataUrl,
  documentFilename,
  imageUrl,
  passThroughOptions,
  requestToolNames,
  toolResultText,
} from "@pluggableharness/openai-wire";
import { type ContentBlock, Role } from "@pluggableharness/protocol/content";
import { type StreamCompletionRequest, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { reasoningItemOf } from "./reasoning.ts";

/** provider_options keys passed into the body unchanged (README). */
export const RESPONSES_OPTIONS = [
  "service_tier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "safety_identifier",
  "user",
  "parallel_tool_calls",
  "metadata",
  "text",
  "truncation",
] as const;

/** provider_options sampling knobs (the older spelling of GenerationParams.top_p). */
export const SAMPLING_OPTIONS = ["top_p"] as const;

/** Our own provider_options key: the reasoning summary detail ("auto", "concise", "detailed"). */
export const SUMMARY_OPTION = "reasoning_summary";

export interface ResponsesRequest {
  body: JsonObject;
  names: ToolNameMap;
  /** The declared tools' names as sent (the batching wrapper may name only these). */
  declared: ReadonlySet<string>;
  droppedReasoning: number;
  /** Sampling parameters the model refuses at this effort, left out. */
  droppedSampling: string[];
}

function inputParts(blocks: readonly ContentBlock[], docs: { n: number }): JsonObject[] {
  const parts: JsonObject[] = [];
  for (const b of blocks) {
    switch (b.block.case) {
      case "text":
        parts.push({ type: "input_text", text: b.block.value.text });
        break;
      case "image":
        parts.push({ type: "input_image", image_url: imageUrl(b.block.value), detail: "auto" });
        break;
      case "document":
        parts.push({
          type: "input_file",
          filename: documentFilename(b.block.value, docs.n++),
          file_data: documentDataUrl(b.block.value),
        });
        break;
      default:
        break;
    }
  }
  return parts;
}

/** The phase a text block's vendor state carries (stream.ts stores `{"phase": ...}`). */
export function phaseOf(state: Uint8Array | undefined): string | undefined {
  if (!state || state.length === 0) return undefined;
  try {
    const v = JSON.parse(opaqueToString(state)) as { phase?: unknown };
    return typeof v.phase === "string" && v.phase !== "" ? v.phase : undefined;
  } catch {
    return undefined;
  }
}

export function isReasoningModel(model: CatalogModel): boolean {
  return model.thinking !== undefined && model.wire?.["reasoning"] !== false;
}

/** The `input` items for a request (also used by CountTokens). */
export function inputItems(
  req: StreamCompletionRequest,
  self: ProviderIdentity,
  names: ToolNameMap,
): { items: JsonObject[]; droppedReasoning: number } {
  // Own reasoning survives only when it carries a replayable item.
  const history = prepareHistory(req.messages, self, (b) => reasoningItemOf(b) !== undefined);
  const items: JsonObject[] = [];
  const docs = { n: 0 };
  for (const { message, blocks, origin } of history.messages) {
    if (message.role === Role.ASSISTANT) {
      for (const b of blocks) {
        if (b.block.case === "text") {
          // Each text block goes back as an input message with string content (the SDK's
          // EasyInputMessage); the output-message form would also need the id and status
          // of a stored response. This vendor's own blocks carry their phase (commentary
          // or final_answer): dropping it degrades later answers.
          const phase = origin === "own" ? phaseOf(b.block.value.vendorState) : undefined;
          if (b.block.value.text !== "")
            items.push({
              type: "message",
              role: "assistant",
              content: b.block.value.text,
              ...(phase ? { phase } : {}),
            });
        } else if (b.block.case === "toolUse") {
          items.push({
            type: "function_call",
            call_id: b.block.value.id,
            name: names.toVendor(b.block.value.name),
            arguments: argumentsText(b.block.value.input),
          });
        } else if (b.block.case === "thinking" || b.block.case === "redactedThinking") {
          const item = reasoningItemOf(b);
          if (item) items.push(item);
        }
      }
      continue;
    }
    const own: ContentBlock[] = [];
    for (const b of blocks) {
      if (b.block.case !== "toolResult") {
        own.push(b);
        continue;
      }
      const r = b.block.value;
      const attachments = r.content.filter((c) => c.block.case === "image" || c.block.case === "document");
      const text = toolResultText(r.content, r.isError);
      const output: JsonValue =
        attachments.length === 0
          ? text
          : [...(text ? [{ type: "input_text", text }] : []), ...inputParts(attachments, docs)];
      items.push({ type: "function_call_output", call_id: r.toolUseId, output });
    }
    const parts = inputParts(own, docs);
    if (parts.length > 0) items.push({ type: "message", role: "user", content: parts });
  }
  return { items, droppedReasoning: history.droppedReasoning };
}

function toolChoice(req: StreamCompletionRequest, names: ToolNameMap): JsonValue | undefined {
  const choice = req.params?.toolChoice;
  switch (choice?.mode) {
    case ToolChoiceMode.AUTO:
      return "auto";
    case ToolChoiceMode.ANY:
      return "required";
    case ToolChoiceMode.NONE:
      return "none";
    case ToolChoiceMode.SPECIFIC:
      return { type: "function", name: names.toVendor(choice.toolName ?? "") };
    default:
      return undefined;
  }
}

export function buildResponsesRequest(
  req: StreamCompletionRequest,
  model: CatalogModel,
  self: ProviderIdentity,
): ResponsesRequest {
  const names = toolNameMap(requestToolNames(req), OPENAI_TOOL_NAMES);
  const { items, droppedReasoning } = inputItems(req, self, names);
  const body: JsonObject = { model: req.modelId, input: items, stream: true, store: false };
  const system = systemTexts(req.assembledContext);
  if (system.length > 0) body["instructions"] = system.join("\n\n");
  if (req.tools.length > 0) {
    body["tools"] = req.tools.map((t) => ({
      type: "function",
      name: names.toVendor(t.name),
      ...(t.description ? { description: t.description } : {}),
      parameters: schemaToJson(t.inputSchema),
      strict: false,
    }));
  }
  const choice = toolChoice(req, names);
  if (choice !== undefined) body["tool_choice"] = choice;
  const params = req.params;
  if (params?.maxOutputTokens !== undefined) body["max_output_tokens"] = Number(params.maxOutputTokens);

  const options = { ...(req.providerOptions ?? {}) };
  const sampling = samplingFor(req, model, { providerOptions: options, optionKeys: SAMPLING_OPTIONS });
  Object.assign(body, sampling.values);
  const summary = options[SUMMARY_OPTION];
  delete options[SUMMARY_OPTION];
  if (isReasoningModel(model)) {
    const effort = params?.thinkingEffort;
    const reasoning: JsonObject = {};
    if (effort !== undefined) reasoning["effort"] = effort;
    // A summary is what makes reasoning visible; "none" effort has nothing to summarise.
    if (effort !== "none") reasoning["summary"] = typeof summary === "string" ? summary : "auto";
    body["reasoning"] = reasoning;
    body["include"] = ["reasoning.encrypted_content"];
  }
  Object.assign(body, passThroughOptions(options, RESPONSES_OPTIONS, Object.keys(body)));
  // OpenAI caches prompts automatically; the session id as prompt_cache_key keeps a
  // conversation's requests on the servers holding its prefix (provider_options may override).
  const session = req.callContext?.sessionId;
  if (body["prompt_cache_key"] === undefined && session) body["prompt_cache_key"] = session;
  const declared = new Set(req.tools.map((t) => names.toVendor(t.name)));
  return { body, names, declared, droppedReasoning, droppedSampling: sampling.dropped };
}
