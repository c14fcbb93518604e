// Canonical StreamCompletionRequest -> Gemini GenerateContentRequest. The rules for what
// Gemini cannot carry are listed in the README ("Translation").
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import {
  base64,
  type CatalogModel,
  GEMINI_TOOL_NAMES,
  ModelFailure,
  opaqueToString,
  type ProviderIdentity,
  prepareHistory,
  samplingFor,
  schemaToJson,
  type ToolNameMap,
  textOf,
  toolNameMap,
  toolResultText,
} from "@pluggableharness/model-kit";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { Role } from "@pluggableharness/protocol/content";
import { type StreamCompletionRequest, ToolChoiceMode } from "@pluggableharness/protocol/model";
import { wireOf } from "./catalog.ts";
import { isVendorCallId } from "./stream.ts";

type Json = Record<string, JsonValue>;

/** provider_options keys this provider understands (README: "provider_options"). */
export const PROVIDER_OPTION_KEYS = ["top_p", "top_k", "seed", "safety_settings"] as const;

/**
 * What Gemini 3 accepts in place of a thought signature it never issued (history from
 * another vendor, from Gemini 2.5, or rebuilt without signatures): the documented value
 * that skips the signature check (ai.google.dev/gemini-api/docs/thought-signatures).
 */
export const PLACEHOLDER_SIGNATURE = "skip_thought_signature_validator";

export interface BuiltRequest {
  body: Json;
  names: ToolNameMap;
  /** Per content: the highest request message index merged into it (cache breakpoints). */
  lastIndex: number[];
  /** Parameters the request carried that the model refuses, left out (for a log line). */
  droppedSampling: string[];
  /** Function calls that went out with the placeholder signature. */
  placeholderSignatures: number;
}

const invalid = (message: string) => new ModelFailure("invalid_request", message, { retryable: false });

export function buildRequest(
  req: StreamCompletionRequest,
  model: CatalogModel,
  self: ProviderIdentity,
  includeThoughts: boolean,
): BuiltRequest {
  const params = req.params;
  const historyNames = req.messages.flatMap((m) =>
    m.content.flatMap((b) => (b.block.case === "toolUse" ? [b.block.value.name] : [])),
  );
  const names = toolNameMap([...req.tools.map((t) => t.name), ...historyNames], GEMINI_TOOL_NAMES);
  const body: Json = {};

  const system = req.assembledContext.map((s) => textOf(s.content)).filter((t) => t.length > 0);
  if (system.length > 0) body["systemInstruction"] = { parts: system.map((text) => ({ text })) };

  if (req.tools.length > 0) {
    body["tools"] = [
      {
        functionDeclarations: req.tools.map((t) => {
          const decl: Json = { name: names.toVendor(t.name), description: t.description };
          const params = schemaToJson(t.inputSchema, { upperCaseTypes: true, objectProperties: false });
          // A tool without parameters leaves them out (an empty OBJECT schema is refused).
          if (params["properties"] !== undefined) decl["parameters"] = params;
          return decl;
        }),
      },
    ];
  }

  const choice = params?.toolChoice;
  if (choice && choice.mode !== ToolChoiceMode.UNSPECIFIED) {
    const mode = { 1: "AUTO", 2: "ANY", 3: "NONE", 4: "ANY" }[choice.mode];
    if (!mode) throw invalid(`unknown tool_choice mode ${choice.mode}`);
    const config: Json = { mode };
    if (choice.mode === ToolChoiceMode.SPECIFIC) {
      if (!choice.toolName || !req.tools.some((t) => t.name === choice.toolName))
        throw invalid(`tool_choice names "${choice.toolName ?? ""}", which is not among the request's tools`);
      config["allowedFunctionNames"] = [names.toVendor(choice.toolName)];
    }
    body["toolConfig"] = { functionCallingConfig: config };
  }

  const generation: Json = {};
  if (params?.maxOutputTokens !== undefined) generation["maxOutputTokens"] = Number(params.maxOutputTokens);
  const options = req.providerOptions ? { ...req.providerOptions } : undefined;
  const sampling = samplingFor(req, model, {
    ...(options ? { providerOptions: options } : {}),
    optionKeys: ["top_p", "top_k"],
  });
  if (sampling.values.temperature !== undefined) generation["temperature"] = sampling.values.temperature;
  if (sampling.values.top_p !== undefined) generation["topP"] = sampling.values.top_p;
  if (sampling.values.top_k !== undefined) generation["topK"] = sampling.values.top_k;
  // stop_sequences are enforced by the adapter (stream.ts): Gemini would cut the sequence out
  // and answer a plain STOP, so the match could not be reported.
  const thinking = thinkingConfig(req, model, includeThoughts);
  if (thinking) generation["thinkingConfig"] = thinking;

  // Contents: tool names for functionResponse come from the tool_use they answer.
  const callNames = new Map<string, string>();
  for (const m of req.messages)
    for (const b of m.content)
      if (b.block.case === "toolUse") callNames.set(b.block.value.id, b.block.value.name);
  const history = prepareHistory(req.messages, self);
  // Call ids Gemini itself issued are echoed on the call and on its response.
  const vendorIds = new Set<string>();
  for (const m of history.messages)
    if (m.origin === "own" && m.message.role === Role.ASSISTANT)
      for (const b of m.blocks)
        if (b.block.case === "toolUse" && isVendorCallId(b.block.value.id)) vendorIds.add(b.block.value.id);
  const contents: Array<{ role: "user" | "model"; parts: Json[] }> = [];
  const lastIndex: number[] = [];
  for (const m of history.messages) {
    const role = m.message.role === Role.ASSISTANT ? "model" : "user";
    const parts = partsOf(m.blocks, names, callNames, vendorIds);
    if (parts.length === 0) continue;
    const last = contents.at(-1);
    if (last && last.role === role) {
      last.parts.push(...parts);
      lastIndex[lastIndex.length - 1] = m.index;
    } else {
      contents.push({ role, parts });
      lastIndex.push(m.index);
    }
  }
  if (contents.length === 0) throw invalid("the request has no content Gemini can carry");
  // Gemini 3 refuses a step whose first function call lacks its signature; one it never
  // issued gets the placeholder (a real signature is never replaced).
  let placeholderSignatures = 0;
  if (wireOf(model).signaturesRequired) {
    for (const c of contents) {
      if (c.role !== "model") continue;
      const first = c.parts.find((p) => p["functionCall"] !== undefined);
      if (first && first["thoughtSignature"] === undefined) {
        first["thoughtSignature"] = PLACEHOLDER_SIGNATURE;
        placeholderSignatures++;
      }
    }
  }
  body["contents"] = contents;
  if (Object.keys(generation).length > 0) body["generationConfig"] = generation;
  applyProviderOptions(options, body, generation);
  return { body, names, lastIndex, droppedSampling: sampling.dropped, placeholderSignatures };
}

function thinkingConfig(
  req: StreamCompletionRequest,
  model: CatalogModel,
  includeThoughts: boolean,
): Json | undefined {
  const effort = req.params?.thinkingEffort;
  const budget = req.params?.thinkingBudgetTokens;
  if (!model.thinking) {
    if (effort !== undefined || budget !== undefined)
      throw invalid(`${model.id} does not reason; thinking parameters cannot be sent`);
    return undefined;
  }
  const out: Json = {};
  if (includeThoughts) out["includeThoughts"] = true;
  const param = wireOf(model).thinkingParam;
  if (effort !== undefined) {
    const control = model.thinking.effort;
    if (!control || param !== "level") throw invalid(`${model.id} has no effort control`);
    if (!control.levels.includes(effort))
      throw invalid(`${model.id} accepts thinking levels ${control.levels.join(", ")}, not "${effort}"`);
    // The wire value is the ThinkingLevel enum name (the SDK types' "LOW", "HIGH"…).
    out["thinkingLevel"] = effort.toUpperCase();
  }
  if (budget !== undefined) {
    const control = model.thinking.budget;
    if (!control || param !== "budget") throw invalid(`${model.id} has no thinking budget control`);
    const n = Number(budget);
    if (n < control.min || n > control.max)
      throw invalid(`${model.id} accepts a thinking budget in [${control.min}, ${control.max}], not ${n}`);
    if (effort !== undefined) throw invalid("Gemini accepts a thinking level or a budget, not both");
    out["thinkingBudget"] = n;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Parts of one message. Thinking text is not sent back (Gemini does not need its own
 * thought summaries); a thinking block's signature rides on the part that follows it in
 * the message, or on an empty text part when nothing follows — where Gemini put it.
 */
function partsOf(
  blocks: readonly ContentBlock[],
  names: ToolNameMap,
  callNames: Map<string, string>,
  vendorIds: ReadonlySet<string>,
): Json[] {
  const parts: Json[] = [];
  let pending: string | undefined;
  const push = (part: Json) => {
    if (pending !== undefined) {
      part["thoughtSignature"] = pending;
      pending = undefined;
    }
    parts.push(part);
  };
  for (const b of blocks) {
    const v = b.block;
    switch (v.case) {
      case "thinking":
        if (v.value.signature && v.value.signature.length > 0) pending = opaqueToString(v.value.signature);
        break;
      case "redactedThinking":
        pending = opaqueToString(v.value.data);
        break;
      case "text":
        if (v.value.text !== "" || pending !== undefined) push({ text: v.value.text });
        break;
      case "image":
        push(
          v.value.source.case === "url"
            ? { fileData: { mimeType: v.value.mediaType, fileUri: v.value.source.value } }
            : {
                inlineData: {
                  mimeType: v.value.mediaType,
                  data: base64(v.value.source.value ?? new Uint8Array()),
                },
              },
        );
        break;
      case "document":
        push({ inlineData: { mimeType: v.value.mediaType, data: base64(v.value.data) } });
        break;
      case "toolUse":
        push({
          functionCall: {
            ...(vendorIds.has(v.value.id) ? { id: v.value.id } : {}),
            name: names.toVendor(v.value.name),
            args: (v.value.input ?? {}) as JsonObject,
          },
        });
        break;
      case "toolResult": {
        const name = callNames.get(v.value.toolUseId);
        if (name === undefined)
          throw invalid(`tool_result ${v.value.toolUseId} answers no tool_use in the history`);
        const output = toolResultText(v.value.content);
        push({
          functionResponse: {
            ...(vendorIds.has(v.value.toolUseId) ? { id: v.value.toolUseId } : {}),
            name: names.toVendor(name),
            response: v.value.isError ? { error: output } : { output },
          },
        });
        // Images in a result follow it as their own parts.
        for (const c of v.value.content) {
          if (c.block.case === "image" && c.block.value.source.case === "data")
            push({
              inlineData: { mimeType: c.block.value.mediaType, data: base64(c.block.value.source.value) },
            });
        }
        break;
      }
      default:
        throw invalid("a content block without a type cannot be sent");
    }
  }
  if (pending !== undefined) parts.push({ text: "", thoughtSignature: pending });
  return parts;
}

function applyProviderOptions(options: JsonObject | undefined, body: Json, generation: Json): void {
  if (!options) return;
  for (const [key, value] of Object.entries(options)) {
    switch (key) {
      case "seed":
        if (typeof value !== "number") throw invalid(`provider_options.${key} must be a number`);
        generation["seed"] = value;
        body["generationConfig"] = generation;
        break;
      case "safety_settings":
        if (!Array.isArray(value)) throw invalid("provider_options.safety_settings must be a list");
        body["safetySettings"] = value;
        break;
      default:
        throw invalid(
          `unknown provider_options key "${key}"; this provider accepts ${PROVIDER_OPTION_KEYS.join(", ")}`,
        );
    }
  }
}
