// HTML reduced to readable Markdown-flavoured text: scripts, styles and other
// non-content elements dropped; headings, paragraphs, lists, links, emphasis, code and
// table rows kept as Markdown; entities decoded; whitespace collapsed outside <pre>.

const SKIP = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "iframe",
  "object",
  "canvas",
  "head",
  "select",
]);
const BLOCK = new Set([
  "p",
  "div",
  "section",
  "article",
  "header",
  "footer",
  "main",
  "nav",
  "aside",
  "figure",
  "figcaption",
  "form",
  "table",
  "thead",
  "tbody",
  "tfoot",
  "blockquote",
  "address",
  "details",
  "summary",
  "dl",
  "dt",
  "dd",
  "fieldset",
  "center",
]);
const VOID = new Set([
  "br",
  "hr",
  "img",
  "input",
  "meta",
  "link",
  "area",
  "base",
  "col",
  "embed",
  "source",
  "track",
  "wbr",
]);

const ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  copy: "©",
  reg: "®",
  trade: "™",
  mdash: "—",
  ndash: "–",
  hellip: "…",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”",
  bull: "•",
  middot: "·",
  laquo: "«",
  raquo: "»",
  euro: "€",
  times: "×",
  divide: "÷",
  deg: "°",
  para: "¶",
  sect: "§",
};

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

const TOKEN =
  /<!--[\s\S]*?-->|<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'>]+))?)*)\s*\/?>|<![^>]*>|<\?[^>]*>|[^<]+|</g;
const ATTR = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?/g;

function attributes(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of raw.matchAll(ATTR)) out[m[1]!.toLowerCase()] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? "");
  return out;
}

export interface Readable {
  title: string;
  text: string;
}

export function htmlToText(html: string, baseUrl?: string): Readable {
  let out = "";
  let title = "";
  let inTitle = false;
  let skipping: string | undefined;
  let skipDepth = 0;
  let pre = 0;
  const lists: { ordered: boolean; n: number }[] = [];
  const links: (string | undefined)[] = [];

  const block = () => {
    out = out.replace(/[ \t]+$/, "");
    if (out !== "" && !out.endsWith("\n\n")) out += out.endsWith("\n") ? "\n" : "\n\n";
  };
  const newline = () => {
    out = out.replace(/[ \t]+$/, "");
    if (out !== "" && !out.endsWith("\n")) out += "\n";
  };
  const resolveUrl = (href: string | undefined): string | undefined => {
    if (!href || /^(javascript|data|mailto):/i.test(href) || href.startsWith("#")) return undefined;
    try {
      return new URL(href, baseUrl).href;
    } catch {
      return undefined;
    }
  };

  for (const m of html.matchAll(TOKEN)) {
    const token = m[0];
    const name = m[2]?.toLowerCase();
    const closing = m[1] === "/";
    if (skipping) {
      if (name === skipping) skipDepth += closing ? -1 : VOID.has(name) ? 0 : 1;
      if (skipDepth === 0) skipping = undefined;
      if (name === "title" && !closing)
        inTitle = true; // <title> lives in <head>
      else if (name === "title" && closing) inTitle = false;
      else if (inTitle && !name && !token.startsWith("<")) title += token;
      continue;
    }
    if (!name) {
      if (token.startsWith("<!--") || token.startsWith("<!") || token.startsWith("<?")) continue;
      const text = decodeEntities(token === "<" ? "<" : token);
      if (inTitle) {
        title += text;
        continue;
      }
      if (pre > 0) out += text;
      else {
        const collapsed = text.replace(/\s+/g, " ");
        out += out === "" || /\s$/.test(out) ? collapsed.replace(/^ /, "") : collapsed;
      }
      continue;
    }
    if (!closing && SKIP.has(name)) {
      skipping = name;
      skipDepth = 1;
      continue;
    }
    if (name === "title") {
      inTitle = !closing;
      continue;
    }
    const attrs = closing ? {} : attributes(m[3] ?? "");
    if (/^h[1-6]$/.test(name)) {
      block();
      if (!closing) out += `${"#".repeat(Number(name[1]))} `;
      continue;
    }
    if (BLOCK.has(name)) {
      block();
      continue;
    }
    switch (name) {
      case "br":
        out += "\n";
        break;
      case "hr":
        block();
        out += "---";
        block();
        break;
      case "ul":
      case "ol":
        if (closing) lists.pop();
        else lists.push({ ordered: name === "ol", n: 0 });
        block();
        break;
      case "li":
        if (!closing) {
          newline();
          const list = lists.at(-1);
          const indent = "  ".repeat(Math.max(0, lists.length - 1));
          if (list) list.n++;
          out += `${indent}${list?.ordered ? `${list.n}.` : "-"} `;
        }
        break;
      case "tr":
        newline();
        break;
      case "td":
      case "th":
        if (!closing && !out.endsWith("\n") && out !== "") out += " | ";
        break;
      case "a":
        if (closing) {
          const href = links.pop();
          if (href) out += `](${href})`;
        } else {
          const href = resolveUrl(attrs["href"]);
          links.push(href);
          if (href) out += "[";
        }
        break;
      case "strong":
      case "b":
        out += "**";
        break;
      case "em":
      case "i":
        out += "_";
        break;
      case "code":
        if (pre === 0) out += "`";
        break;
      case "pre":
        if (closing) {
          pre = Math.max(0, pre - 1);
          newline();
          out += "```";
          block();
        } else {
          block();
          pre++;
          out += "```\n";
        }
        break;
      case "img":
        if (attrs["alt"]) out += `[image: ${attrs["alt"]}]`;
        break;
      default:
        break;
    }
  }
  const text = out
    .split("\n")
    .map((l) => l.replace(/[ \t]+$/, ""))
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title: decodeEntities(title).replace(/\s+/g, " ").trim(), text };
}
