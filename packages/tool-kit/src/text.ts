// Text helpers shared by tools that return file or process content to a model.

/** Bytes inspected when deciding whether content is binary. */
const SNIFF_BYTES = 8192;

/**
 * Binary when the first 8 KiB hold a NUL byte or are mostly not text (more than 10%
 * control bytes other than tab, newline, carriage return, form feed and escape).
 */
export function looksBinary(data: Uint8Array): boolean {
  const n = Math.min(data.length, SNIFF_BYTES);
  let control = 0;
  for (let i = 0; i < n; i++) {
    const b = data[i]!;
    if (b === 0) return true;
    if (b < 32 && b !== 9 && b !== 10 && b !== 13 && b !== 12 && b !== 27) control++;
  }
  return n > 0 && control / n > 0.1;
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a boundary.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString("utf8"), truncated: true };
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}
