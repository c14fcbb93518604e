// The bridge's output budget (docs/security/mcp.md): like bash's max_output_bytes, the text
// of one result — text blocks, embedded resources, resource contents, error messages — is
// cut at `max_output_bytes` UTF-8 bytes with a note the model can act on; structured
// content is kept only when it fits that budget on its own and arrived whole; binary data
// (images, audio, blobs) is only ever described. The clip limits behind it bound what the
// bridge holds while it reads a message at all.
import type { ClipLimits } from "./clip.ts";

export const DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024;
export const MIN_MAX_OUTPUT_BYTES = 1024;
export const MAX_MAX_OUTPUT_BYTES = 1024 * 1024;
/** Content entries listed for frontends; the rest are counted in one entry. */
export const MAX_CONTENT_ENTRIES = 256;
/** Longest progress message and tool description passed on. */
export const MAX_PROGRESS_CHARS = 1024;
export const MAX_DESCRIPTION_CHARS = 8 * 1024;

/** How much of one message the transports keep, for a given budget. */
export function clipLimits(maxOutputBytes: number): ClipLimits {
  const n = Math.max(1024 * 1024, 2 * maxOutputBytes);
  return { maxString: n, maxTotal: n };
}

/** `text` cut to at most `maxBytes` UTF-8 bytes, never inside a character. */
export function cutUtf8(text: string, maxBytes: number): { text: string; cut: boolean; bytes: number } {
  // Cheap exits: a string of n UTF-16 units is at most 3n bytes.
  if (text.length * 3 <= maxBytes) return { text, cut: false, bytes: Buffer.byteLength(text) };
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { text, cut: false, bytes };
  const buf = Buffer.from(text, "utf8");
  let end = maxBytes;
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return { text: buf.subarray(0, end).toString("utf8"), cut: true, bytes };
}

/** A string cut to `max` characters with an ellipsis (descriptions, progress). */
export function cutChars(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

export function formatBytes(n: number): string {
  return n.toLocaleString("en-US");
}

/** The note that ends a cut text. */
export function truncationNote(what: {
  kept: number;
  total: number;
  /** Some of the total was cut on the way in and is counted in characters. */
  approximate: boolean;
  /** Blocks or contents left out on the way in (not in the total). */
  droppedItems: number;
  limit: number;
}): string {
  const total = `${what.approximate ? "about " : ""}${formatBytes(what.total)} bytes of text`;
  const more =
    what.droppedItems > 0 ? ` and ${formatBytes(what.droppedItems)} more items that were not read` : "";
  return (
    `\n[truncated: the MCP server returned ${total}${more}; only the first ${formatBytes(what.kept)} bytes are shown ` +
    `(max_output_bytes = ${formatBytes(what.limit)}). If you need the rest, ask the tool for a smaller part at a time (a narrower query, a page or a range).]`
  );
}
