// Renders a terminal capture (`tmux capture-pane -p -e`: text with SGR colour codes) to
// a PNG, for the README's screenshot. The capture becomes an SVG with one glyph per cell
// on a fixed grid (wide characters take two cells, as string-width measures them), which
// resvg (WebAssembly, from npm) rasterises with the DejaVu fonts Debian's
// fonts-dejavu-core installs. No browser, no network.
//
// Usage: node scripts/tui-screenshot.ts <capture.ansi> <out.png> [title]
// How docs/screenshots/ was made: see docs/screenshots/README.md.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { initWasm, Resvg } from "@resvg/resvg-wasm";
import stringWidth from "string-width";

const FONT_DIR = "/usr/share/fonts/truetype/dejavu";
const CELL_W = 8.43;
const CELL_H = 18;
const FONT_SIZE = 14;
const PAD = 16;
const BAR = 28;

/** A CSI sequence at the start of the text (ESC [ params final). */
const CSI = new RegExp(`^${String.fromCharCode(27)}\\[([0-9;:]*)([A-Za-z])`);
const FG = "#d8dee9";
const BG = "#1e222a";
const BASIC = [
  "#3b4252",
  "#e06c75",
  "#98c379",
  "#e5c07b",
  "#61afef",
  "#c678dd",
  "#56b6c2",
  "#d8dee9",
  "#5c6370",
  "#ff7b86",
  "#b5e890",
  "#ffd68a",
  "#82c4ff",
  "#dd9cf0",
  "#7fd4de",
  "#ffffff",
];

interface Cell {
  ch: string;
  fg: string;
  bg: string | undefined;
  bold: boolean;
  dim: boolean;
  italic: boolean;
  underline: boolean;
}

function color256(n: number): string {
  if (n < 16) return BASIC[n]!;
  if (n >= 232) {
    const v = 8 + (n - 232) * 10;
    return `rgb(${v},${v},${v})`;
  }
  const i = n - 16;
  const c = (x: number) => (x === 0 ? 0 : 55 + x * 40);
  return `rgb(${c(Math.floor(i / 36))},${c(Math.floor(i / 6) % 6)},${c(i % 6)})`;
}

/** The capture as rows of styled cells. */
export function parseAnsi(text: string): Cell[][] {
  const rows: Cell[][] = [];
  let style = {
    fg: FG,
    bg: undefined as string | undefined,
    bold: false,
    dim: false,
    italic: false,
    underline: false,
  };
  for (const line of text.replace(/\r/g, "").split("\n")) {
    const row: Cell[] = [];
    for (let i = 0; i < line.length; ) {
      if (line[i] === "\x1b") {
        const m = CSI.exec(line.slice(i));
        if (!m) {
          i++;
          continue;
        }
        i += m[0].length;
        if (m[2] !== "m") continue;
        const codes = (m[1] || "0").split(/[;:]/).map(Number);
        for (let k = 0; k < codes.length; k++) {
          const c = codes[k]!;
          if (c === 0)
            style = { fg: FG, bg: undefined, bold: false, dim: false, italic: false, underline: false };
          else if (c === 1) style.bold = true;
          else if (c === 2) style.dim = true;
          else if (c === 3) style.italic = true;
          else if (c === 4) style.underline = true;
          else if (c === 22) style = { ...style, bold: false, dim: false };
          else if (c === 23) style.italic = false;
          else if (c === 24) style.underline = false;
          else if (c >= 30 && c <= 37) style.fg = BASIC[c - 30]!;
          else if (c >= 90 && c <= 97) style.fg = BASIC[c - 90 + 8]!;
          else if (c === 39) style.fg = FG;
          else if (c >= 40 && c <= 47) style.bg = BASIC[c - 40]!;
          else if (c >= 100 && c <= 107) style.bg = BASIC[c - 100 + 8]!;
          else if (c === 49) style.bg = undefined;
          else if ((c === 38 || c === 48) && codes[k + 1] === 5) {
            const v = color256(codes[k + 2] ?? 0);
            if (c === 38) style.fg = v;
            else style.bg = v;
            k += 2;
          } else if ((c === 38 || c === 48) && codes[k + 1] === 2) {
            const v = `rgb(${codes[k + 2] ?? 0},${codes[k + 3] ?? 0},${codes[k + 4] ?? 0})`;
            if (c === 38) style.fg = v;
            else style.bg = v;
            k += 4;
          }
        }
        continue;
      }
      const cp = line.codePointAt(i)!;
      const ch = String.fromCodePoint(cp);
      i += ch.length;
      row.push({ ch, ...style });
      // A wide character fills the next cell too.
      if (stringWidth(ch) === 2) row.push({ ch: "", ...style });
    }
    rows.push(row);
  }
  while (rows.length > 0 && rows.at(-1)!.every((c) => c.ch.trim() === "")) rows.pop();
  return rows;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function toSvg(rows: Cell[][], title: string, columns?: number): string {
  const cols = columns ?? Math.max(...rows.map((r) => r.length), 1);
  const width = Math.ceil(cols * CELL_W + PAD * 2);
  const height = Math.ceil(rows.length * CELL_H + PAD * 2 + BAR);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<rect width="${width}" height="${height}" rx="8" fill="${BG}"/>`,
    `<circle cx="18" cy="14" r="5" fill="#e06c75"/><circle cx="34" cy="14" r="5" fill="#e5c07b"/><circle cx="50" cy="14" r="5" fill="#98c379"/>`,
    `<text x="${width / 2}" y="18" fill="#7f848e" font-family="DejaVu Sans" font-size="12" text-anchor="middle">${esc(title)}</text>`,
  ];
  rows.forEach((row, y) => {
    const top = PAD + BAR + y * CELL_H;
    row.forEach((c, x) => {
      const left = PAD + x * CELL_W;
      if (c.bg)
        out.push(
          `<rect x="${left.toFixed(2)}" y="${top}" width="${CELL_W + 0.5}" height="${CELL_H}" fill="${c.bg}"/>`,
        );
      if (c.ch.trim() === "") return;
      const attrs = [
        `x="${left.toFixed(2)}"`,
        `y="${top + CELL_H - 5}"`,
        `fill="${c.fg}"`,
        c.bold ? `font-weight="bold"` : "",
        c.italic ? `font-style="italic"` : "",
        c.dim ? `fill-opacity="0.6"` : "",
        c.underline ? `text-decoration="underline"` : "",
      ].filter(Boolean);
      out.push(`<text ${attrs.join(" ")}>${esc(c.ch)}</text>`);
    });
  });
  out.push("</svg>");
  // Every glyph in the monospace face, falling back to DejaVu Sans for symbols it lacks.
  return out
    .join("\n")
    .replace("<svg ", `<svg font-family="DejaVu Sans Mono, DejaVu Sans" font-size="${FONT_SIZE}" `);
}

export async function renderPng(capture: string, title: string): Promise<Uint8Array> {
  const require = createRequire(import.meta.url);
  await initWasm(readFileSync(require.resolve("@resvg/resvg-wasm/index_bg.wasm")));
  const fonts = [
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-Bold.ttf",
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
  ].map((f) => new Uint8Array(readFileSync(`${FONT_DIR}/${f}`)));
  const resvg = new Resvg(toSvg(parseAnsi(capture), title), {
    font: { fontBuffers: fonts, loadSystemFonts: false, defaultFontFamily: "DejaVu Sans Mono" },
    fitTo: { mode: "zoom", value: 2 },
  });
  return resvg.render().asPng();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [input, output, title = "agent run"] = process.argv.slice(2);
  if (!input || !output) {
    process.stderr.write("usage: node scripts/tui-screenshot.ts <capture.ansi> <out.png> [title]\n");
    process.exit(2);
  }
  writeFileSync(output, await renderPng(readFileSync(input, "utf8"), title));
  process.stdout.write(`wrote ${output}\n`);
}
