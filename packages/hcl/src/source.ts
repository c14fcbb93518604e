// Source text and position bookkeeping. Everything else works on UTF-16 string
// indices; this module turns them into the positions users see: 1-based line,
// 1-based column counted in grapheme clusters (a tab is one), 0-based UTF-8 byte.

import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import type { Pos, Range } from "./range.ts";

export type { Pos, Range } from "./range.ts";

const BOM = "\uFEFF";
// Every UTF-16 code unit below 0x80.
const ASCII = /^[^\u0080-\uffff]*$/;

type Clusters = "ascii" | { starts: number[]; bytes: number[] };
// Built on first use: creating a grapheme segmenter loads ICU break data (tens of ms),
// and ASCII-only sources never need one.
let shared: Intl.Segmenter | undefined;
const segmenter = (): Intl.Segmenter =>
  (shared ??= new Intl.Segmenter(undefined, { granularity: "grapheme" }));

/** Number of bytes `text` occupies in UTF-8 (well-formed input assumed). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Splits `text` into grapheme clusters. */
export function graphemes(text: string): string[] {
  return Array.from(segmenter().segment(text), (s) => s.segment);
}

/**
 * A source file being parsed. Line starts are computed once; grapheme
 * boundaries are computed per line on first use, so positions cost a binary
 * search plus one short UTF-8 length computation.
 */
export class SourceFile {
  readonly filename: string;
  readonly text: string;
  /** UTF-16 index where each line's visible text starts (after a BOM on line 1). */
  private readonly lineStarts: number[];
  /** UTF-8 byte offset of each entry of `lineStarts`. */
  private readonly lineStartBytes: number[];
  private readonly clusters = new Map<number, Clusters>();
  /** UTF-16 indices where a grapheme cluster must end (token boundaries), sorted. */
  private breaks: readonly number[] = [];

  constructor(filename: string, text: string) {
    this.filename = filename;
    this.text = text;
    // A leading BOM is skipped (see docs/decisions/hcl.md), but byte offsets
    // stay true file offsets so they can be used to slice the original bytes.
    const bom = text.startsWith(BOM) ? 1 : 0;
    this.lineStarts = [bom];
    this.lineStartBytes = [bom ? 3 : 0];
    let bytes = this.lineStartBytes[0]!;
    let last = bom;
    for (let i = bom; i < text.length; i++) {
      if (text.charCodeAt(i) === 10) {
        bytes += utf8Length(text.slice(last, i + 1));
        last = i + 1;
        this.lineStarts.push(last);
        this.lineStartBytes.push(bytes);
      }
    }
  }

  /** The position of UTF-16 index `index` (clamped to the text). */
  pos(index: number): Pos {
    const i = Math.max(0, Math.min(index, this.text.length));
    const line = this.lineOf(i);
    const start = this.lineStarts[line]!;
    if (i <= start) {
      // Only reachable for index 0 of a file starting with a BOM.
      return { line: line + 1, column: 1, byte: i === start ? this.lineStartBytes[line]! : 0 };
    }
    const clusters = this.clustersOf(line);
    if (clusters === "ascii") {
      // One byte and one cluster per character: no search needed.
      return { line: line + 1, column: i - start + 1, byte: this.lineStartBytes[line]! + (i - start) };
    }
    const { starts, bytes } = clusters;
    // Column = number of clusters starting before `i`, plus one.
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! < i) lo = mid + 1;
      else hi = mid;
    }
    // The last cluster starting before `i` is at lo - 1 (lo >= 1 here since i > start).
    const from = starts[lo - 1]!;
    return { line: line + 1, column: lo + 1, byte: bytes[lo - 1]! + utf8Length(this.text.slice(from, i)) };
  }

  /**
   * Token boundaries: hcl/v2 counts columns token by token, so a combining
   * mark that starts a token is a column of its own even though it would join
   * the previous character in running text.
   */
  setBreaks(breaks: readonly number[]): void {
    // The lexer hands them over in order; only a non-ASCII line ever looks at them.
    this.breaks = breaks.every((b, i) => i === 0 || breaks[i - 1]! <= b)
      ? breaks
      : [...breaks].sort((a, b) => a - b);
    this.clusters.clear();
  }

  /** The range covering UTF-16 indices `[start, end)`. */
  range(start: number, end: number): Range {
    return { filename: this.filename, start: this.pos(start), end: this.pos(end) };
  }

  private lineOf(index: number): number {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Start index and byte offset of every grapheme cluster of a line (without
   * its "\n"), or "ascii" for the common line where each character is one.
   */
  private clustersOf(line: number): Clusters {
    let clusters = this.clusters.get(line);
    if (clusters === undefined) {
      const from = this.lineStarts[line]!;
      const next = this.lineStarts[line + 1];
      const to = next === undefined ? this.text.length : next - 1;
      if (ASCII.test(this.text.slice(from, to))) {
        this.clusters.set(line, "ascii");
        return "ascii";
      }
      clusters = { starts: [], bytes: [] };
      let byte = this.lineStartBytes[line]!;
      const cuts = [from];
      for (let k = firstAbove(this.breaks, from); k < this.breaks.length && this.breaks[k]! < to; k++) {
        cuts.push(this.breaks[k]!);
      }
      cuts.push(to);
      for (let k = 0; k + 1 < cuts.length; k++) {
        const pieceStart = cuts[k]!;
        for (const seg of segmenter().segment(this.text.slice(pieceStart, cuts[k + 1]!))) {
          clusters.starts.push(pieceStart + seg.index);
          clusters.bytes.push(byte);
          byte += utf8Length(seg.segment);
        }
      }
      // A sentinel for the line's end (the "\n", or the end of the text).
      clusters.starts.push(to);
      clusters.bytes.push(byte);
      this.clusters.set(line, clusters);
    }
    return clusters;
  }
}

/** Index of the first element of sorted `xs` greater than `x`. */
function firstAbove(xs: readonly number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Where decoding bytes as UTF-8 failed. */
export interface Utf8Failure {
  /** Byte offset of the first byte that is not part of a valid sequence. */
  byte: number;
  /** The valid text before that byte. */
  validPrefix: string;
}

/**
 * Decodes UTF-8 strictly. Returns the text, or where the first invalid
 * sequence starts (overlong forms, surrogates and code points past U+10FFFF
 * are invalid, exactly as TextDecoder's fatal mode rejects them).
 */
export function decodeUtf8(bytes: Uint8Array): string | Utf8Failure {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    const byte = firstInvalidUtf8Byte(bytes);
    return {
      byte,
      validPrefix: new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes.subarray(0, byte)),
    };
  }
}

function firstInvalidUtf8Byte(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i]!;
    let need: number;
    let min: number;
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else return i;
    let cp = c & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      const cc = b[i + k];
      if (cc === undefined || (cc & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return b.length;
}

/** Index of the first lone surrogate in `text`, or -1 when it is well formed. */
export function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/**
 * Turns parser input into text: bytes must be valid UTF-8, strings must not
 * hold lone surrogates. A failure is a diagnostic at the first bad position.
 */
export function decodeSource(
  source: string | Uint8Array,
  filename: string,
): { text: string } | { failure: Diagnostic } {
  if (typeof source !== "string") {
    const decoded = decodeUtf8(source);
    if (typeof decoded === "string") return { text: decoded };
    const prefix = new SourceFile(filename, decoded.validPrefix);
    const at = prefix.pos(decoded.validPrefix.length);
    return {
      failure: errorDiag(
        "invalid-utf8",
        "Invalid UTF-8",
        `The file is not valid UTF-8: the byte at offset ${decoded.byte} does not start a valid sequence.`,
        { filename, start: at, end: { ...at, column: at.column + 1, byte: at.byte + 1 } },
      ),
    };
  }
  const bad = firstLoneSurrogate(source);
  if (bad < 0) return { text: source };
  const prefix = new SourceFile(filename, source.slice(0, bad));
  const at = prefix.pos(bad);
  return {
    failure: errorDiag(
      "invalid-utf8",
      "Invalid UTF-8",
      "The text contains an unpaired UTF-16 surrogate, which has no UTF-8 encoding.",
      { filename, start: at, end: { ...at, column: at.column + 1, byte: at.byte + 1 } },
    ),
  };
}
