import stringWidth from "string-width";
import wrapAnsi from "wrap-ansi";

// Terminal styling. A Painter either wraps text in SGR sequences (a colour TTY) or
// returns it unchanged (plain output, NO_COLOR, pipes), so every view is written
// once and degrades to plain text by construction.

export type Tone =
  | "bold"
  | "italic"
  | "code"
  | "dim"
  | "error"
  | "warning"
  | "success"
  | "accent"
  | "added"
  | "removed"
  | "inverse"
  | "underline"
  | "strike"
  | "keyword"
  | "string"
  | "number"
  | "comment"
  | "title"
  | "type";

const SGR: Record<Tone, [string, string]> = {
  bold: ["1", "22"],
  italic: ["3", "23"],
  code: ["36", "39"],
  dim: ["2", "22"],
  error: ["31", "39"],
  warning: ["33", "39"],
  success: ["32", "39"],
  accent: ["35", "39"],
  added: ["32", "39"],
  removed: ["31", "39"],
  inverse: ["7", "27"],
  underline: ["4", "24"],
  strike: ["9", "29"],
  keyword: ["35", "39"],
  string: ["32", "39"],
  number: ["33", "39"],
  comment: ["90", "39"],
  title: ["34", "39"],
  type: ["36", "39"],
};

export interface Painter {
  readonly color: boolean;
  paint(text: string, ...tones: Tone[]): string;
}

export const plainPainter: Painter = { color: false, paint: (text) => text };

export const ansiPainter: Painter = {
  color: true,
  paint(text, ...tones) {
    if (text === "" || tones.length === 0) return text;
    let open = "";
    let close = "";
    for (const t of tones) {
      const [on, off] = SGR[t];
      open += `\x1b[${on}m`;
      close = `\x1b[${off}m${close}`;
    }
    return open + text + close;
  },
};

/** Colour unless NO_COLOR is set (https://no-color.org) or the stream is not a TTY. */
export function painterFor(isTTY: boolean, env: NodeJS.ProcessEnv = process.env): Painter {
  return isTTY && !env["NO_COLOR"] ? ansiPainter : plainPainter;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/** Columns one character (a grapheme cluster or code point) occupies on a terminal. */
export function charWidth(cp: number | string): number {
  return stringWidth(typeof cp === "number" ? String.fromCodePoint(cp) : cp);
}

/** Visible width of a string that may contain SGR sequences (wide CJK and emoji count 2). */
export function visibleWidth(text: string): number {
  return stringWidth(text);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: escape sequences are the subject
const LEADING = /^((?:\x1b\[[0-9;]*m)*)([ ]+)/;

/**
 * Splits one logical line (no newlines) into rows of at most `width` columns at word
 * boundaries (a word longer than a row is cut). Styles are closed at the end of a row
 * and re-opened on the next, and an indented line keeps its indentation on every row
 * (a hanging indent), so wrapped list items and code stay aligned.
 */
export function wrapLine(line: string, width: number): string[] {
  if (width < 1) width = 1;
  if (stringWidth(line) <= width) return [line];
  let indent = "";
  let body = line;
  const m = LEADING.exec(line);
  if (m && m[2]!.length <= width / 2) {
    indent = m[2]!;
    body = m[1]! + line.slice(m[0].length);
  }
  const rows = wrapAnsi(body, width - indent.length, { hard: true, trim: true }).split("\n");
  return rows.map((r) => indent + r);
}

/** Hard-wraps at exactly `width` columns, keeping every character (the input editor's rows). */
export function cutLine(line: string, width: number): string[] {
  if (width < 1) width = 1;
  const rows: string[] = [];
  let row = "";
  let w = 0;
  for (const { segment } of graphemes.segment(line)) {
    const cw = stringWidth(segment);
    if (w + cw > width && row !== "") {
      rows.push(row);
      row = "";
      w = 0;
    }
    row += segment;
    w += cw;
  }
  rows.push(row);
  return rows;
}

export const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal control sequences are the subject
const CSI_SEQUENCE = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: terminal control sequences are the subject
const CONTROL_CHARS = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Replaces tabs and strips control characters that would move the cursor. */
export function sanitize(text: string): string {
  return text.replace(/\t/g, "    ").replace(CSI_SEQUENCE, "").replace(CONTROL_CHARS, "");
}

/** sanitize() for text that may hold newlines, which are kept. */
export function sanitizeLines(text: string): string {
  return text.split("\n").map(sanitize).join("\n");
}
