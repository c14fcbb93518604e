// Canonical request -> Chat Completions body (`POST …/chat/completions`, stream: true).
//
// Translation rules (docs/decisions/vendors.md, "OpenAI, xAI and OpenAI-compatible"):
// - assembled_context becomes one leading `system` message (sections joined by blank lines).
// - A user message's tool results become `tool` messages, placed first because they must
//   answer the previous assistant message's tool_calls. What a tool message cannot hold
//   (images, documents) follows in a user message after them, with the user's own content.
// - Thinking and redacted thinking are not sent: Chat Completions has no input slot for
//   reasoning, and turning it into text would put words in the model's mouth. The
//   exception is a dialect that echoes reasoning (DeepSeek, Moonshot): an assistant message
//   carries its own reasoning text as `reasoning_content` (empty when it has none, or came
//   from another vendor), because those servers refuse a tool loop without it. Moonshot
//   asks it of the messages with tool calls; DeepSeek of every assistant message between
//   two user messages where the model called a tool, the final answer included.
// - Tool-call arguments travel as JSON text; tool names are renamed reversibly when they
//   break the vendor's rule (^[a-zA-Z0-9_-]{1,64}$).
// - stop_sequences are enforced by the adapter (model-kit's StopSequenceMatcher), so `stop` is never sent.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  type CatalogModel,
  ModelFailure,
  OPENAI_TOOL_NAMES,
  type ProviderIdentity,
  prepareHistory,
  type SamplingName,
  samplingFor,
  schemaToJson,
  systemTexts,
  type ToolNameMap,
  toolNameMap,
} from "@pluggableharness/model-kit";
import { type ContentBlock, Role } from "@pluggableharness/protocol/content";
import { type StreamCompletionRequest, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { argumentsText, documentDataUrl, documentFilename, imageUrl, toolResultText } from "./content.ts";

export interface ChatRequestOptions {
  /** The body field for the output limit. */
  maxTokensField: "max_tokens" | "max_completion_tokens";
  /** Send `stream_options.include_usage` (some servers only report usage when asked). */
  streamUsage: boolean;
  /** provider_options keys passed through into the body, as documented by the provider. */
  passThrough: readonly string[];
  /** Which of those are sampling knobs, sent only when the model accepts them. */
  samplingOptions?: readonly SamplingName[];
  /**
   * Send `reasoning_content` back: on assistant messages with tool calls (`"tool-calls"`,
   * Moonshot), or on every assistant message of a stretch between two user messages in
   * which the model called a tool (`"tool-turns"`, DeepSeek's thinking mode).
   */
  echoReasoning?: "tool-calls" | "tool-turns" | undefined;
}

export interface ChatRequest {
  body: JsonObject;
  names: ToolNameMap;
  /** Reasoning blocks left out (foreign, or any reasoning: chat cannot carry it). */
  droppedReasoning: number;
  /** Sampling parameters the model refuses, left out. */
  droppedSampling: SamplingName[];
}

type Part = JsonObject;

function userParts(blocks: readonly ContentBlock[], docIndex: { n: number }): Part[] {
  const parts: Part[] = [];
  for (const b of blocks) {
    switch (b.block.case) {
      case "text":
        parts.push({ type: "text", text: b.block.value.text });
        break;
      case "image":
        parts.push({ type: "image_url", image_url: { url: imageUrl(b.block.value) } });
        break;
      case "document": {
        const doc = b.block.value;
        parts.push({
          type: "file",
          file: { filename: documentFilename(doc, docIndex.n++), file_data: documentDataUrl(doc) },
        });
        break;
      }
      default:
        break;
    }
  }
  return parts;
}

/** A user message's content: a plain string when it is only text (every server takes that). */
function userContent(parts: Part[]): JsonValue {
  if (parts.every((p) => p["type"] === "text")) return parts.map((p) => p["text"] as string).join("\n\n");
  return parts;
}

function toolChoice(req: StreamCompletionRequest, names: ToolNameMap): JsonValue | undefined {
  const choice = req.params?.toolChoice;
  if (!choice) return undefined;
  switch (choice.mode) {
    case ToolChoiceMode.AUTO:
      return "auto";
    case ToolChoiceMode.ANY:
      return "required";
    case ToolChoiceMode.NONE:
      return "none";
    case ToolChoiceMode.SPECIFIC:
      return { type: "function", function: { name: names.toVendor(choice.toolName ?? "") } };
    default:
      return undefined;
  }
}

/** Copies the documented provider_options keys; any other key is an invalid_request. */
export function passThroughOptions(
  opts: JsonObject | undefined,
  allowed: readonly string[],
  reserved: readonly string[] = [],
): JsonObject {
  const out: JsonObject = {};
  if (!opts) return out;
  for (const [key, value] of Object.entries(opts)) {
    if (!allowed.includes(key) || reserved.includes(key)) {
      throw new ModelFailure(
        "invalid_request",
        `provider_options key "${key}" is not supported by this provider (accepted: ${allowed.join(", ") || "none"})`,
        { retryable: false },
      );
    }
    out[key] = value as JsonValue;
  }
  return out;
}

/** Every tool name the request mentions (declarations and calls in the history). */
export function requestToolNames(req: StreamCompletionRequest): string[] {
  const names = req.tools.map((t) => t.name);
  for (const m of req.messages)
    for (const b of m.content) if (b.block.case === "toolUse") names.push(b.block.value.name);
  return names;
}

/**
 * Puts each assistant message's reasoning back as `reasoning_content` where the dialect asks
 * for it: on a message with tool calls, or (`tool-turns`) on every assistant message of a
 * stretch between two user messages that holds a tool call. Elsewhere it is left out: the
 * servers ignore it there, and it would only lengthen the request.
 */
function echoReasoning(
  messages: readonly JsonObject[],
  reasoningOf: ReadonlyMap<JsonObject, string>,
  mode: "tool-calls" | "tool-turns",
): void {
  const hasCalls = (m: JsonObject) => Array.isArray(m["tool_calls"]);
  let stretch: JsonObject[] = [];
  const close = () => {
    if (stretch.some(hasCalls))
      for (const m of stretch)
        if (mode === "tool-turns" || hasCalls(m)) m["reasoning_content"] = reasoningOf.get(m) ?? "";
    stretch = [];
  };
  for (const m of messages) {
    if (m["role"] === "user") close();
    else if (m["role"] === "assistant") stretch.push(m);
  }
  close();
}

export function buildChatRequest(
  req: StreamCompletionRequest,
  model: CatalogModel,
  self: ProviderIdentity,
  options: ChatRequestOptions,
): ChatRequest {
  const names = toolNameMap(requestToolNames(req), OPENAI_TOOL_NAMES);
  const echo = options.echoReasoning !== undefined;
  // Each assistant message's own reasoning text, until it is known whether it is sent.
  const reasoningOf = new Map<JsonObject, string>();
  // Own reasoning text survives only where it is echoed; redacted data never can be.
  const history = prepareHistory(req.messages, self, (b) => echo && b.block.case === "thinking");
  const messages: JsonObject[] = [];
  const system = systemTexts(req.assembledContext);
  if (system.length > 0) messages.push({ role: "system", content: system.join("\n\n") });
  const docIndex = { n: 0 };

  for (const { message, blocks } of history.messages) {
    if (message.role === Role.ASSISTANT) {
      const text = blocks.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : [])).join("\n\n");
      const calls = blocks.flatMap((b) =>
        b.block.case === "toolUse"
          ? [
              {
                id: b.block.value.id,
                type: "function",
                function: {
                  name: names.toVendor(b.block.value.name),
                  arguments: argumentsText(b.block.value.input),
                },
              },
            ]
          : [],
      );
      if (text === "" && calls.length === 0) continue;
      const m: JsonObject = { role: "assistant", content: text === "" ? null : text };
      if (echo)
        reasoningOf.set(
          m,
          blocks.flatMap((b) => (b.block.case === "thinking" ? [b.block.value.text] : [])).join(""),
        );
      if (calls.length > 0) m["tool_calls"] = calls;
      messages.push(m);
      continue;
    }
    // User message: tool results first, then whatever else the message (and the results) carry.
    const extra: Part[] = [];
    for (const b of blocks) {
      if (b.block.case !== "toolResult") continue;
      const result = b.block.value;
      messages.push({
        role: "tool",
        tool_call_id: result.toolUseId,
        content: toolResultText(result.content, result.isError),
      });
      const attachments = userParts(
        result.content.filter((c) => c.block.case === "image" || c.block.case === "document"),
        docIndex,
      );
      if (attachments.length > 0)
        extra.push({ type: "text", text: `Attachments of tool result ${result.toolUseId}:` }, ...attachments);
    }
    const own = userParts(
      blocks.filter((b) => b.block.case !== "toolResult"),
      docIndex,
    );
    const parts = [...extra, ...own];
    if (parts.length > 0) messages.push({ role: "user", content: userContent(parts) });
  }

  if (options.echoReasoning) echoReasoning(messages, reasoningOf, options.echoReasoning);

  const body: JsonObject = { model: req.modelId, messages, stream: true };
  if (options.streamUsage) body["stream_options"] = { include_usage: true };
  if (req.tools.length > 0) {
    body["tools"] = req.tools.map((t) => ({
      type: "function",
      function: {
        name: names.toVendor(t.name),
        ...(t.description ? { description: t.description } : {}),
        parameters: schemaToJson(t.inputSchema),
      },
    }));
  }
  const choice = toolChoice(req, names);
  if (choice !== undefined) body["tool_choice"] = choice;
  const params = req.params;
  if (params?.maxOutputTokens !== undefined) body[options.maxTokensField] = Number(params.maxOutputTokens);
  const provided = req.providerOptions ? { ...req.providerOptions } : undefined;
  const sampling = samplingFor(req, model, {
    ...(provided ? { providerOptions: provided } : {}),
    optionKeys: (options.samplingOptions ?? []).filter((k) => options.passThrough.includes(k)),
  });
  Object.assign(body, sampling.values);
  if (params?.thinkingEffort !== undefined && model.thinking?.effort)
    body["reasoning_effort"] = params.thinkingEffort;
  Object.assign(body, passThroughOptions(provided, options.passThrough, Object.keys(body)));
  return { body, names, droppedReasoning: history.droppedReasoning, droppedSampling: sampling.dropped };
}
