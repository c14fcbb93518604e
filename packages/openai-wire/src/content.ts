// Content helpers shared by the Responses and Chat Completions translations.
import { base64, EMPTY_TOOL_RESULT, toolResultText as resultText } from "@pluggableharness/model-kit";
import type { ContentBlock, DocumentBlock, ImageBlock } from "@pluggableharness/protocol/content";

/** An image as the URL both APIs take: the remote URL, or a base64 data URL. */
export function imageUrl(image: ImageBlock): string {
  if (image.source.case === "url") return image.source.value;
  const data = image.source.case === "data" ? image.source.value : new Uint8Array();
  return `data:${image.mediaType || "image/png"};base64,${base64(data)}`;
}

/** A document as a base64 data URL (the `file_data` both APIs take). */
export function documentDataUrl(doc: DocumentBlock): string {
  return `data:${doc.mediaType || "application/pdf"};base64,${base64(doc.data)}`;
}

/** A filename for a document; the APIs require one with inline file data. */
export function documentFilename(doc: DocumentBlock, index: number): string {
  if (doc.filename) return doc.filename;
  const ext = doc.mediaType === "application/pdf" ? "pdf" : (doc.mediaType.split("/")[1] ?? "bin");
  return `document-${index + 1}.${ext}`;
}

/**
 * A tool result's text. These wires have no error flag on a tool result, so a failed call's
 * text is prefixed with "Error: " (unless it already says so) for the model to see.
 */
export function toolResultText(blocks: readonly ContentBlock[], isError: boolean): string {
  const text = resultText(blocks);
  if (!isError) return text;
  if (text === EMPTY_TOOL_RESULT) return "Error: the tool call failed";
  return /^error\b/i.test(text) ? text : `Error: ${text}`;
}

/** JSON text of a tool call's canonical input (an object; absent means no arguments). */
export function argumentsText(input: unknown): string {
  return JSON.stringify(input ?? {});
}
