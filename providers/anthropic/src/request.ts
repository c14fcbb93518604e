// Canonical StreamCompletionRequest -> Messages API request body. The rules for what
// Anthropic cannot carry are listed in the README ("Translation").
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  ANTHROPIC_TOOL_NAMES,
  base64,
  type CatalogModel,
  droppedSamplingNote,
  EMPTY_TOOL_RESULT,
  hasVisibleText,
  ModelFailure,
  opaqueToString,
  type ProviderIdentity,
  prepareHistory,
  samplingFor,
  schemaToJson,
  type ToolNameMap,
  textOf,
  toolNameMap,
} from "@pluggableharness/model-kit";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { Role } from "@pluggableharness/protocol/content";
import { type StreamCompletionRequest, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { wireOf } from "./catalog.ts";

type Json = Record<string, JsonValue>;

/** Anthropic accepts at most four cache_control markers per request. */
export const MAX_CACHE_MARKERS = 4;

/** provider_options keys this provider understands (README: "provider_options"). */
export const PROVIDER_OPTION_KEYS = [
  "service_tier",
  "top_k",
  "top_p",
  "metadata_user_id",
  "anthropic_beta",
] as const;

export interface BuiltRequest {
  body: Json;
  /** Extra headers (anthropic-beta). */
  headers: Record<string, string>;
  names: ToolNameMap;
  /** Whether any cache marker was placed (keep-alive only pings such requests). */
  cached: boolean;
  /** Thinking was requested explicitly (affects the keep-alive's max_tokens). */
  thinkingBudget: number | undefined;
  /** Things the request asked for that were left out, for a log line. */
  notes: string[];
}

const invalid = (message: string) => new ModelFailure("invalid_request", message, { retryable: false });

export function buildRequest(
  req: StreamCompletionRequest,
  model: CatalogModel,
  self: ProviderIdentity,
): BuiltRequest {
  const params = req.params;
  const wire = wireOf(model);
  const headers: Record<string, string> = {};

  // Tool names: declared tools and every name in the history share one mapping.
  const historyNames = req.messages.flatMap((m) =>
    m.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value.name] : [])),
  );
  const names = toolNameMap([...req.tools.map((t) => t.name), ...historyNames], ANTHROPIC_TOOL_NAMES);

  const body: Json = { model: model.id, stream: true };
  const maxTokens =
    params?.maxOutputTokens !== undefined ? Number(params.maxOutputTokens) : model.maxOutputTokens;
  body["max_tokens"] = maxTokens;

  // System: one text block per assembled-context section, in chain order.
  const system: Json[] = req.assembledContext
    .map((s) => textOf(s.content))
    .filter((t) => t.length > 0)
    .map((text) => ({ type: "text", text }));
  if (system.length > 0) body["system"] = system;

  // Tools.
  const tools: Json[] = req.tools.map((t) => {
    const tool: Json = { name: names.toVendor(t.name), input_schema: schemaToJson(t.inputSchema) };
    if (t.description) tool["description"] = t.description;
    return tool;
  });
  if (tools.length > 0) body["tools"] = tools;

  // Tool choice.
  const choice = params?.toolChoice;
  let forcesTool = false;
  if (choice && choice.mode !== ToolChoiceMode.UNSPECIFIED) {
    const allowed = model.toolChoiceModes;
    const name = { 1: "auto", 2: "any", 3: "none", 4: "specific" }[choice.mode] as
      | "auto"
      | "any"
      | "none"
      | "specific";
    if (!allowed.includes(name)) throw invalid(`${model.id} does not accept tool_choice ${name}`);
    if (choice.mode === ToolChoiceMode.AUTO) body["tool_choice"] = { type: "auto" };
    else if (choice.mode === ToolChoiceMode.ANY) {
      body["tool_choice"] = { type: "any" };
      forcesTool = true;
    } else if (choice.mode === ToolChoiceMode.NONE) body["tool_choice"] = { type: "none" };
    else {
      if (!choice.toolName || !req.tools.some((t) => t.name === choice.toolName))
        throw invalid(`tool_choice names "${choice.toolName ?? ""}", which is not among the request's tools`);
      body["tool_choice"] = { type: "tool", name: names.toVendor(choice.toolName) };
      forcesTool = true;
    }
  }

  // Thinking: explicit controls only; omission leaves the model's own default.
  let thinkingBudget: number | undefined;
  let thinkingOn = false;
  const effort = params?.thinkingEffort;
  const budget = params?.thinkingBudgetTokens;
  if ((effort !== undefined || budget !== undefined) && !model.thinking)
    throw invalid(`${model.id} does not reason; thinking parameters cannot be sent`);
  if (effort !== undefined && !forcesTool) {
    const control = model.thinking?.effort;
    if (!control) throw invalid(`${model.id} has no effort control`);
    if (!control.levels.includes(effort))
      throw invalid(`${model.id} accepts effort ${control.levels.join(", ")}, not "${effort}"`);
    body["output_config"] = { effort };
    if (wire.adaptive && budget === undefined) body["thinking"] = { type: "adaptive" };
    thinkingOn = true;
  }
  if (budget !== undefined && !forcesTool) {
    const control = model.thinking?.budget;
    if (!control) throw invalid(`${model.id} has no thinking budget control`);
    const n = Number(budget);
    if (n < control.min || n > control.max)
      throw invalid(`${model.id} accepts a thinking budget in [${control.min}, ${control.max}], not ${n}`);
    if (n >= maxTokens)
      throw invalid(`the thinking budget (${n}) must be below max_output_tokens (${maxTokens})`);
    body["thinking"] = { type: "enabled", budget_tokens: n };
    thinkingBudget = n;
    thinkingOn = true;
  }

  // Sampling: only what the model accepts; with thinking on, the API also refuses a changed
  // temperature or top_k (top_p stays allowed).
  const notes: string[] = [];
  const options = req.providerOptions ? { ...req.providerOptions } : undefined;
  const sampling = samplingFor(req, model, {
    ...(options ? { providerOptions: options } : {}),
    optionKeys: ["top_p", "top_k"],
  });
  const refused = droppedSamplingNote(model.id, sampling.dropped);
  if (refused) notes.push(refused);
  for (const [key, value] of Object.entries(sampling.values)) {
    if (thinkingOn && key !== "top_p") {
      notes.push(`${key} is not sent while thinking is on`);
      continue;
    }
    body[key] = value;
  }
  if (params && params.stopSequences.length > 0) body["stop_sequences"] = [...params.stopSequences];

  // Messages.
  const history = prepareHistory(req.messages, self, (b) =>
    b.block.case === "thinking"
      ? (b.block.value.signature?.length ?? 0) > 0
      : b.block.case === "redactedThinking",
  );
  // Consecutive same-role messages merge (all tool results of a turn must share one user
  // message); within a user message tool_result blocks come first.
  const merged: Array<{ role: "user" | "assistant"; blocks: Array<{ json: Json; from: number }> }> = [];
  for (const m of history.messages) {
    const role = m.message.role === Role.ASSISTANT ? "assistant" : "user";
    // Whitespace-only text (e.g. a newline a model streamed between tool calls) is refused.
    const blocks = m.blocks
      .filter((b) => b.block.case !== "text" || hasVisibleText(b.block.value.text))
      .map((b) => ({ json: blockJson(b, names), from: m.index }));
    if (blocks.length === 0) continue;
    const last = merged.at(-1);
    if (last && last.role === role) last.blocks.push(...blocks);
    else merged.push({ role, blocks });
  }
  for (const m of merged) {
    if (m.role === "user") {
      const results = m.blocks.filter((b) => b.json["type"] === "tool_result");
      const rest = m.blocks.filter((b) => b.json["type"] !== "tool_result");
      m.blocks = [...results, ...rest];
    }
  }

  // Cache breakpoints -> cache_control markers (only for models that take explicit markers).
  let cached = false;
  if (model.caching.explicitMarkers && req.cacheBreakpoints.length > 0) {
    const targets: Json[] = [];
    const marks = req.cacheBreakpoints.map((b) => b.position);
    if (marks.some((p) => p.case === "afterAssembledContext") && system.length > 0)
      targets.push(system.at(-1)!);
    if (marks.some((p) => p.case === "afterTools") && tools.length > 0) targets.push(tools.at(-1)!);
    const indexes = marks
      .flatMap((p) => (p.case === "afterMessageIndex" ? [Number(p.value)] : []))
      .sort((a, b) => b - a);
    for (const index of indexes) {
      // The last markable block that came from that message (thinking blocks and empty text
      // blocks take no marker: the API refuses cache_control on either).
      const block = merged
        .flatMap((m) => m.blocks)
        .filter(
          (b) =>
            b.from === index &&
            b.json["type"] !== "thinking" &&
            b.json["type"] !== "redacted_thinking" &&
            !(b.json["type"] === "text" && b.json["text"] === ""),
        )
        .at(-1);
      if (block && !targets.includes(block.json)) targets.push(block.json);
    }
    // Over the vendor's limit: keep context, tools and the latest messages.
    for (const t of targets.slice(0, MAX_CACHE_MARKERS)) t["cache_control"] = { type: "ephemeral" };
    cached = targets.length > 0;
  }

  body["messages"] = merged.map((m) => ({ role: m.role, content: m.blocks.map((b) => b.json) }));
  applyProviderOptions(options, body, headers);
  return { body, headers, names, cached, thinkingBudget, notes };
}

function blockJson(b: ContentBlock, names: ToolNameMap): Json {
  const v = b.block;
  switch (v.case) {
    case "text":
      return { type: "text", text: v.value.text };
    case "image":
      return {
        type: "image",
        source:
          v.value.source.case === "url"
            ? { type: "url", url: v.value.source.value }
            : {
                type: "base64",
                media_type: v.value.mediaType,
                data: base64(v.value.source.value ?? new Uint8Array()),
              },
      };
    case "document": {
      const mt = v.value.mediaType;
      const source: Json =
        mt === "application/pdf"
          ? { type: "base64", media_type: mt, data: base64(v.value.data) }
          : mt === "text/plain"
            ? { type: "text", media_type: mt, data: new TextDecoder().decode(v.value.data) }
            : (() => {
                throw invalid(
                  `Anthropic documents must be application/pdf or text/plain, not ${mt || "(none)"}`,
                );
              })();
      return { type: "document", source, ...(v.value.filename ? { title: v.value.filename } : {}) };
    }
    case "toolUse":
      return {
        type: "tool_use",
        id: v.value.id,
        name: names.toVendor(v.value.name),
        input: v.value.input ?? {},
      };
    case "toolResult": {
      // Empty or whitespace-only text is refused here too; a result with nothing left says so.
      const content = v.value.content
        .filter((c) => c.block.case !== "text" || hasVisibleText(c.block.value.text))
        .map((c) => blockJson(c, names));
      return {
        type: "tool_result",
        tool_use_id: v.value.toolUseId,
        content: content.length > 0 ? content : [{ type: "text", text: EMPTY_TOOL_RESULT }],
        ...(v.value.isError ? { is_error: true } : {}),
      };
    }
    case "thinking":
      return { type: "thinking", thinking: v.value.text, signature: opaqueToString(v.value.signature) };
    case "redactedThinking":
      return { type: "redacted_thinking", data: opaqueToString(v.value.data) };
    default:
      throw invalid("a content block without a type cannot be sent");
  }
}

function applyProviderOptions(
  options: JsonObject | undefined,
  body: Json,
  headers: Record<string, string>,
): void {
  if (!options) return;
  for (const [key, value] of Object.entries(options)) {
    switch (key) {
      case "service_tier":
        if (typeof value !== "string") throw invalid(`provider_options.service_tier must be a string`);
        body["service_tier"] = value;
        break;
      case "metadata_user_id":
        if (typeof value !== "string") throw invalid(`provider_options.metadata_user_id must be a string`);
        body["metadata"] = { user_id: value };
        break;
      case "anthropic_beta": {
        const list = typeof value === "string" ? [value] : Array.isArray(value) ? value : undefined;
        if (!list?.every((x) => typeof x === "string"))
          throw invalid(`provider_options.anthropic_beta must be a string or a list of strings`);
        headers["anthropic-beta"] = (list as string[]).join(",");
        break;
      }
      default:
        throw invalid(
          `unknown provider_options key "${key}"; this provider accepts ${PROVIDER_OPTION_KEYS.join(", ")}`,
        );
    }
  }
}
