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
  | "inverse";

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

/** Columns a code point occupies: 0 for combining marks and controls, 2 for wide ones. */
export function charWidth(cp: number): number {
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0xfe00 && cp <= 0xfe0f))
    return 0;
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  )
    return 2;
  return 1;
}

/** Visible width of a string that may contain SGR sequences. */
export function visibleWidth(text: string): number {
  let w = 0;
  for (const ch of stripAnsi(text)) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/**
 * Splits one logical line (no newlines) into rows of at most `width` columns,
 * keeping escape sequences intact and re-opening none (styles are closed by the
 * painter on each piece of text, so a cut leaves at worst one row unstyled).
 */
export function wrapLine(line: string, width: number): string[] {
  if (width < 1) width = 1;
  if (visibleWidth(line) <= width) return [line];
  const rows: string[] = [];
  let row = "";
  let w = 0;
  let i = 0;
  while (i < line.length) {
    if (line[i] === "\x1b") {
      ANSI.lastIndex = i;
      const m = ANSI.exec(line);
      if (m && m.index === i) {
        row += m[0];
        i += m[0].length;
        continue;
      }
    }
    const cp = line.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    const cw = charWidth(cp);
    if (w + cw > width) {
      rows.push(row);
      row = "";
      w = 0;
    }
    row += ch;
    w += cw;
    i += ch.length;
  }
  rows.push(row);
  return rows;
}

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
