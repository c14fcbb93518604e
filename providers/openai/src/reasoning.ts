// The canonical form of OpenAI reasoning items (docs/decisions/vendors.md).
//
// A Responses `reasoning` output item is opaque state the API wants back verbatim on the next
// request (we run with store: false, so its encrypted_content is the only copy). The whole
// item, exactly as `response.output_item.done` delivered it, is kept as one JSON text:
// - an item with a readable summary becomes a thinking block: the summary is the thinking
//   text (display only) and the item JSON is its signature;
// - an item without a summary becomes a redacted_thinking block whose data is the item JSON.
// Replaying parses the JSON and sends the item unchanged, so encrypted_content returns byte
// for byte. A thinking block whose signature is not such an item (another vendor's, or one
// that lost its signature) is never sent.
import type { JsonObject } from "@bufbuild/protobuf";
import { opaqueToString } from "@pluggableharness/model-kit";
import type { ContentBlock } from "@pluggableharness/protocol/content";
import { ReasoningSummary } from "./wire-schema.ts";

/** The item JSON carried by a thinking signature or redacted data, when it is one. */
export function reasoningItemOf(block: ContentBlock): JsonObject | undefined {
  const bytes =
    block.block.case === "thinking"
      ? block.block.value.signature
      : block.block.case === "redactedThinking"
        ? block.block.value.data
        : undefined;
  if (!bytes || bytes.length === 0) return undefined;
  const text = opaqueToString(bytes);
  if (!text.startsWith("{")) return undefined;
  try {
    const item = JSON.parse(text) as unknown;
    if (typeof item !== "object" || item === null || Array.isArray(item)) return undefined;
    const o = item as JsonObject;
    return o["type"] === "reasoning" && Array.isArray(o["summary"]) ? o : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The summary text of a reasoning item (parts joined by blank lines). A part without text,
 * or with empty text, adds nothing: an item whose parts are all empty has no readable
 * summary (it is kept as redacted thinking, not as a thinking block of blank lines).
 */
export function summaryText(item: unknown): string {
  const parts = ReasoningSummary.parse(item)?.summary ?? [];
  return parts.flatMap((p) => (p.text ? [p.text] : [])).join("\n\n");
}
