// Markdown for the terminal: a model's answer as styled rows of a given width.
// `marked` parses (GFM: tables, task lists, strikethrough), `lowlight` highlights code,
// `wrap-ansi`/`string-width` (through style.ts) wrap by display width, so CJK and
// emoji take the columns they really take.
//
// Streaming: `MarkdownStream` lexes only what has not been committed yet. Every
// top-level block but the last is finished (the next block has begun), so it is
// rendered once and handed back for the scrollback; the last block is re-rendered in
// the live region on every frame until more text, or the end of the message, settles it.
import type { Element, ElementContent, Root } from "hast";
import type { Lowlight } from "lowlight";
import { marked, type Token, type Tokens } from "marked";
import { type Painter, sanitize, type Tone, visibleWidth, wrapLine } from "./style.ts";

// Registering the grammars takes a few hundred milliseconds of the main thread, so they
// load only when asked (loadHighlighter: the UI asks once its session is attached, never
// before its first paint); code shown before they are ready is unhighlighted.
let lowlight: Lowlight | undefined;
let loading: Promise<void> | undefined;
export function loadHighlighter(): Promise<void> {
  loading ??= import("lowlight")
    .then((m) => {
      lowlight = m.createLowlight(m.common);
    })
    .catch(() => {});
  return loading;
}

const HLJS_TONES: Record<string, Tone | "plain"> = {
  keyword: "keyword",
  built_in: "type",
  type: "type",
  literal: "number",
  number: "number",
  string: "string",
  regexp: "string",
  symbol: "string",
  comment: "comment",
  doctag: "comment",
  meta: "comment",
  title: "title",
  "title.function": "title",
  "title.class": "type",
  attr: "type",
  attribute: "type",
  variable: "title",
  params: "plain",
  addition: "added",
  deletion: "removed",
  section: "title",
  name: "keyword",
  tag: "keyword",
  selector: "keyword",
};

interface Run {
  text: string;
  tones: Tone[];
}

function hastRuns(nodes: ElementContent[], tones: Tone[], out: Run[]): void {
  for (const n of nodes) {
    if (n.type === "text") out.push({ text: n.value, tones });
    else if (n.type === "element") {
      const classes = ((n as Element).properties?.["className"] as string[] | undefined) ?? [];
      const cls = classes.map((c) => c.replace(/^hljs-/, "")).find((c) => HLJS_TONES[c]);
      const tone = cls ? HLJS_TONES[cls] : undefined;
      hastRuns((n as Element).children, tone && tone !== "plain" ? [...tones, tone] : tones, out);
    }
  }
}

/** Highlighted lines of a code listing; unknown languages come back unstyled. */
export function highlight(code: string, language: string | undefined, p: Painter): string[] {
  const lines = code.split("\n").map(sanitize);
  if (!p.color) return lines;
  const lang = (language ?? "").trim().split(/\s+/)[0]!.toLowerCase();
  if (lang === "diff" || lang === "patch") return lines.map((l) => diffLine(l, p));
  if (!lang || !lowlight?.registered(lang)) return lines.map((l) => p.paint(l, "code"));
  let tree: Root;
  try {
    tree = lowlight.highlight(lang, lines.join("\n"));
  } catch {
    return lines;
  }
  const runs: Run[] = [];
  hastRuns(tree.children as ElementContent[], [], runs);
  // Runs may span lines (a block comment): split so every row is styled on its own.
  const out: string[] = [""];
  for (const r of runs) {
    r.text.split("\n").forEach((piece, i) => {
      if (i > 0) out.push("");
      out[out.length - 1] += r.tones.length > 0 ? p.paint(piece, ...r.tones) : piece;
    });
  }
  return out;
}

/** A unified-diff line with its colour: additions, removals, hunk headers, file headers. */
export function diffLine(line: string, p: Painter): string {
  if (line.startsWith("+++") || line.startsWith("---")) return p.paint(line, "bold");
  if (line.startsWith("@@")) return p.paint(line, "accent");
  if (line.startsWith("+")) return p.paint(line, "added");
  if (line.startsWith("-")) return p.paint(line, "removed");
  return line;
}

function inline(tokens: Token[] | undefined, p: Painter): string {
  let out = "";
  for (const t of tokens ?? []) {
    switch (t.type) {
      case "strong":
        out += p.paint(inline((t as Tokens.Strong).tokens, p), "bold");
        break;
      case "em":
        out += p.paint(inline((t as Tokens.Em).tokens, p), "italic");
        break;
      case "del":
        out += p.paint(inline((t as Tokens.Del).tokens, p), "strike");
        break;
      case "codespan":
        out += p.paint(sanitize(decode((t as Tokens.Codespan).text)), "code");
        break;
      case "br":
        out += "\n";
        break;
      case "link": {
        const l = t as Tokens.Link;
        const label = inline(l.tokens, p);
        const plainLabel = decode(l.text);
        out += p.paint(label, "accent", "underline");
        if (l.href && l.href !== plainLabel && `mailto:${plainLabel}` !== l.href)
          out += p.paint(` (${sanitize(l.href)})`, "dim");
        break;
      }
      case "image": {
        const im = t as Tokens.Image;
        out += p.paint(`[image: ${sanitize(im.text || im.href)}]`, "dim");
        break;
      }
      case "text": {
        const tt = t as Tokens.Text;
        out += tt.tokens ? inline(tt.tokens, p) : sanitize(decode(tt.text));
        break;
      }
      case "escape":
        out += sanitize(decode((t as Tokens.Escape).text));
        break;
      case "checkbox":
        // A task item's box: the list marker already shows it (☐/☑).
        break;
      default:
        out += sanitize(decode((t as { raw: string }).raw));
    }
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };
function decode(s: string): string {
  return s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ENTITIES[e] ?? _m);
}

/** Wraps styled text that may hold hard breaks. */
function wrapText(text: string, width: number): string[] {
  return text.split("\n").flatMap((l) => wrapLine(l, width));
}

/** Prefixes the first row with `first` and the rest with `rest` (same width). */
function hang(rows: string[], first: string, rest: string): string[] {
  return rows.map((r, i) => (i === 0 ? first : rest) + r);
}

function table(t: Tokens.Table, width: number, p: Painter): string[] {
  const head = t.header.map((c) => inline(c.tokens, p));
  const body = t.rows.map((r) => r.map((c) => inline(c.tokens, p)));
  const cols = head.length;
  const natural = Array.from({ length: cols }, (_, i) =>
    Math.max(3, visibleWidth(head[i] ?? ""), ...body.map((r) => visibleWidth(r[i] ?? ""))),
  );
  // Borders take 3 columns per cell plus 1; shrink the widest columns until it fits.
  const room = Math.max(cols * 3, width - (cols * 3 + 1));
  const widths = [...natural];
  while (widths.reduce((a, b) => a + b, 0) > room) {
    const i = widths.indexOf(Math.max(...widths));
    if (widths[i]! <= 3) break;
    widths[i]!--;
  }
  const line = (l: string, m: string, r: string) =>
    p.paint(l + widths.map((w) => "─".repeat(w + 2)).join(m) + r, "dim");
  const bar = p.paint("│", "dim");
  const row = (cells: string[], bold: boolean): string[] => {
    const wrapped = widths.map((w, i) => wrapText(cells[i] ?? "", w));
    const height = Math.max(1, ...wrapped.map((c) => c.length));
    const out: string[] = [];
    for (let k = 0; k < height; k++) {
      const parts = widths.map((w, i) => {
        const cell = wrapped[i]![k] ?? "";
        const pad = " ".repeat(Math.max(0, w - visibleWidth(cell)));
        const align = t.align[i];
        const text = bold ? p.paint(cell, "bold") : cell;
        if (align === "right") return pad + text;
        if (align === "center") {
          const left = Math.floor(pad.length / 2);
          return " ".repeat(left) + text + " ".repeat(pad.length - left);
        }
        return text + pad;
      });
      out.push(`${bar} ${parts.join(` ${bar} `)} ${bar}`);
    }
    return out;
  };
  return [
    line("┌", "┬", "┐"),
    ...row(head, true),
    line("├", "┼", "┤"),
    ...body.flatMap((r) => row(r, false)),
    line("└", "┴", "┘"),
  ];
}

function list(t: Tokens.List, width: number, p: Painter): string[] {
  const out: string[] = [];
  const start = typeof t.start === "number" ? t.start : 1;
  const markers = t.items.map((_, i) => (t.ordered ? `${start + i}. ` : "• "));
  const markerWidth = Math.max(...markers.map((m) => m.length));
  t.items.forEach((item, i) => {
    let marker = markers[i]!.padStart(markerWidth);
    if (item.task) marker += item.checked ? "☑ " : "☐ ";
    const pad = " ".repeat(visibleWidth(marker));
    const inner = blocks(item.tokens, width - pad.length, p, !t.loose);
    out.push(...hang(inner.length > 0 ? inner : [""], p.paint(marker, "accent"), pad));
    if (t.loose && i < t.items.length - 1) out.push("");
  });
  return out;
}

/** Rows of one block-level token. */
export function block(t: Token, width: number, p: Painter): string[] {
  width = Math.max(8, width);
  switch (t.type) {
    case "heading": {
      const h = t as Tokens.Heading;
      const text = inline(h.tokens, p);
      const rows = wrapText(text, width);
      return rows.map((r) => (h.depth <= 1 ? p.paint(r, "bold", "underline") : p.paint(r, "bold")));
    }
    case "paragraph":
      return wrapText(inline((t as Tokens.Paragraph).tokens, p), width);
    case "text": {
      const tt = t as Tokens.Text;
      return wrapText(tt.tokens ? inline(tt.tokens, p) : sanitize(decode(tt.text)), width);
    }
    case "code": {
      const c = t as Tokens.Code;
      // Highlighted and set apart by blank rows, without the fences (as Claude Code shows
      // it), so a copied block is just the code. Code is cut, never word-wrapped, so
      // indentation stays readable.
      return highlight(c.text, c.lang, p).flatMap((l) => wrapLine(l, width));
    }
    case "blockquote": {
      const inner = blocks((t as Tokens.Blockquote).tokens, width - 2, p);
      return inner.map((r) => `${p.paint("│", "dim")} ${p.paint(r, "italic")}`);
    }
    case "list":
      return list(t as Tokens.List, width, p);
    case "table":
      return table(t as Tokens.Table, width, p);
    case "hr":
      return [p.paint("─".repeat(Math.min(width, 40)), "dim")];
    case "space":
    case "def":
    case "checkbox":
      return [];
    default:
      return wrapText(sanitize((t as { raw: string }).raw.replace(/\n+$/, "")), width);
  }
}

/** Rows of a token list, blocks separated by one blank row (none when `tight`). */
function blocks(tokens: Token[], width: number, p: Painter, tight = false): string[] {
  const out: string[] = [];
  for (const t of tokens) {
    const rows = block(t, width, p);
    if (rows.length === 0) continue;
    if (out.length > 0 && !tight) out.push("");
    out.push(...rows);
  }
  return out;
}

/** A whole markdown document as rows of at most `width` columns. */
export function renderMarkdown(src: string, width: number, p: Painter): string[] {
  return blocks(marked.lexer(src.replace(/\r\n?/g, "\n")), width, p);
}

/** A markdown answer arriving in pieces; see the header comment. */
export class MarkdownStream {
  text = "";
  /** Characters of `text` whose blocks have been handed out as committed rows. */
  private committedChars = 0;
  private committedBlocks = 0;

  append(delta: string): void {
    this.text += delta.replace(/\r\n?/g, "\n");
  }

  private tail(): Token[] {
    return marked.lexer(this.text.slice(this.committedChars)).filter((t) => t.type !== "space");
  }

  /** Rows of blocks that are now finished, each handed out once. */
  takeSettled(width: number, p: Painter): string[] {
    const tokens = marked.lexer(this.text.slice(this.committedChars));
    const out: string[] = [];
    let used = 0;
    const content = tokens.filter((t) => t.type !== "space");
    const last = content.at(-1);
    for (const t of tokens) {
      if (t === last) break;
      used += t.raw.length;
      const rows = block(t, width, p);
      if (rows.length === 0) continue;
      if (this.committedBlocks > 0) out.push("");
      out.push(...rows);
      this.committedBlocks++;
    }
    this.committedChars += used;
    return out;
  }

  /** Rows of the unfinished last block, for the live region. */
  live(width: number, p: Painter): string[] {
    const rows = blocks(this.tail(), width, p);
    return rows.length > 0 && this.committedBlocks > 0 ? ["", ...rows] : rows;
  }

  /** The end of the message: the rest, committed. */
  finish(width: number, p: Painter): string[] {
    const rows = this.live(width, p);
    this.committedChars = this.text.length;
    if (rows.length > 0) this.committedBlocks++;
    return rows;
  }
}
