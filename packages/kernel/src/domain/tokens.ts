// The kernel's single fallback token estimate, used only when no model provider can count
// exactly: ceil(total UTF-8 bytes of the text / 4). Non-text blocks count nothing in v1.
import type { ContentBlock } from "@pluggableharness/protocol/content";

export interface TokenCount {
  readonly count: number;
  /** Always false here: an exact count comes from a provider's real tokenizer. */
  readonly exact: false;
}

const encoder = new TextEncoder();

export function utf8ByteLength(text: string): number {
  return encoder.encode(text).length;
}

export function fallbackTokenCount(text: string): TokenCount {
  return { count: Math.ceil(utf8ByteLength(text) / 4), exact: false };
}

/** The estimate over the text of content blocks: the bytes are summed, then divided once. */
export function fallbackTokenCountOfBlocks(blocks: readonly ContentBlock[]): TokenCount {
  let bytes = 0;
  for (const b of blocks) if (b.block.case === "text") bytes += utf8ByteLength(b.block.value.text);
  return { count: Math.ceil(bytes / 4), exact: false };
}
