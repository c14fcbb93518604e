// Content rules every adapter shares (docs/decisions/vendors.md):
//
// 1. Opaque reasoning state (thinking signatures, redacted thinking) is only meaningful to
//    the vendor that produced it. A thinking or redacted_thinking block in an assistant
//    message produced elsewhere is dropped before translation; its visible reasoning text
//    is not turned into assistant text either, because the receiving model would read it
//    as something it said. A message left empty by this is dropped too.
// 2. A message counts as this provider's own when produced_by_provider names the provider,
//    or when produced_by_model_id is a model the provider serves or matches its vendor's id
//    pattern (provider blocks may be aliased in agent.hcl). Without either field the
//    origin is unknown and treated as foreign.
// 3. Signatures and redacted data travel as the UTF-8 bytes of the vendor's string, so
//    they return to the vendor byte for byte.
// 4. Images and documents sent to a model without vision/document support are an
//    invalid_request, never silently dropped.
import type { ContentBlock, ContextSection, Message } from "@pluggableharness/protocol/content";
import { ModelFailure } from "./errors.ts";

const decoder = new TextDecoder("utf-8");

/** The vendor string an opaque signature or redacted block was stored from. */
export function opaqueToString(bytes: Uint8Array | undefined): string {
  return bytes ? decoder.decode(bytes) : "";
}

export interface ProviderIdentity {
  /** The provider's declared name (Describe). */
  name: string;
  /** True for model ids this provider (or its vendor) produces. */
  ownsModel(modelId: string): boolean;
}

export type Origin = "own" | "foreign";

export function originOf(message: Message, self: ProviderIdentity): Origin {
  if (message.producedByProvider !== undefined && message.producedByProvider === self.name) return "own";
  if (message.producedByModelId !== undefined && self.ownsModel(message.producedByModelId)) return "own";
  return "foreign";
}

export interface PreparedMessage {
  message: Message;
  /** Index in the original request (cache breakpoints refer to it). */
  index: number;
  origin: Origin;
  blocks: ContentBlock[];
}

export interface HistoryReport {
  messages: PreparedMessage[];
  /** Reasoning blocks removed by rule 1 (for a debug log line). */
  droppedReasoning: number;
  droppedMessages: number;
}

/**
 * Applies rule 1 (and, with `keepOwn`, decides per block whether own reasoning survives,
 * e.g. Anthropic drops an own thinking block that lost its signature).
 */
export function prepareHistory(
  messages: readonly Message[],
  self: ProviderIdentity,
  keepOwn: (block: ContentBlock) => boolean = () => true,
): HistoryReport {
  const out: PreparedMessage[] = [];
  let droppedReasoning = 0;
  let droppedMessages = 0;
  for (const [index, message] of messages.entries()) {
    const origin = originOf(message, self);
    const blocks = message.content.filter((b) => {
      const reasoning = b.block.case === "thinking" || b.block.case === "redactedThinking";
      if (!reasoning) return true;
      const keep = origin === "own" && keepOwn(b);
      if (!keep) droppedReasoning++;
      return keep;
    });
    if (blocks.length === 0) {
      droppedMessages++;
      continue;
    }
    out.push({ message, index, origin, blocks });
  }
  return { messages: out, droppedReasoning, droppedMessages };
}

/** The text of a section's (or a tool result's) text blocks, joined by blank lines. */
export function textOf(blocks: readonly ContentBlock[]): string {
  return blocks.flatMap((b) => (b.block.case === "text" ? [b.block.value.text] : [])).join("\n\n");
}

/**
 * What a tool result with no text says to the model. Vendors differ on an empty result
 * (Anthropic refuses an empty or whitespace-only text block, some compatible servers an
 * empty tool message), so every adapter sends this instead.
 */
export const EMPTY_TOOL_RESULT = "(no output)";

/** A tool result's text as every adapter sends it: its text blocks, never empty. */
export function toolResultText(blocks: readonly ContentBlock[]): string {
  const text = textOf(blocks);
  return text.trim() === "" ? EMPTY_TOOL_RESULT : text;
}

/** Whether a text is worth a content block (vendors refuse whitespace-only blocks). */
export function hasVisibleText(text: string): boolean {
  return text.trim() !== "";
}

/** assembled_context as one text per non-empty section, in chain order. */
export function systemTexts(sections: readonly ContextSection[]): string[] {
  return sections.map((s) => textOf(s.content)).filter((t) => t.length > 0);
}

/** Rule 4: throws invalid_request naming every image/document the model cannot take. */
export function checkContentSupport(
  model: { id: string; vision: boolean; documents: boolean },
  messages: readonly Message[],
): void {
  const problems: string[] = [];
  const walk = (blocks: readonly ContentBlock[], where: string) => {
    for (const [i, b] of blocks.entries()) {
      const at = `${where}[${i}]`;
      if (b.block.case === "image" && !model.vision)
        problems.push(`${at}: ${model.id} does not accept images`);
      else if (b.block.case === "document" && !model.documents)
        problems.push(`${at}: ${model.id} does not accept documents`);
      else if (b.block.case === "toolResult") walk(b.block.value.content, `${at}.tool_result.content`);
    }
  };
  for (const [i, m] of messages.entries()) walk(m.content, `messages[${i}].content`);
  if (problems.length > 0)
    throw new ModelFailure("invalid_request", problems.join("; "), { retryable: false });
}

/** Tool-call arguments as the JSON text a tool_call_delta carries (objects are encoded). */
export function argumentsJson(args: unknown): string {
  if (typeof args === "string") return args;
  return JSON.stringify(args ?? {});
}

/** Base64 of bytes (image/document payloads). */
export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}
