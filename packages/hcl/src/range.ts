// Positions in source text, as plain data. A leaf: diagnostics carry ranges, and the
// source bookkeeping (source.ts) that computes them reports diagnostics.

/** A point in a source file. */
export interface Pos {
  /** 1-based line number. */
  line: number;
  /** 1-based column, counted in grapheme clusters (a tab counts as one). */
  column: number;
  /** 0-based offset in UTF-8 bytes from the start of the file. */
  byte: number;
}

/** A half-open span of source text: `start` is included, `end` is not. */
export interface Range {
  filename: string;
  start: Pos;
  end: Pos;
}
