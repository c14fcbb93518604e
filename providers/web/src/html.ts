// HTML reduced to readable Markdown for the model, with turndown (and the domino DOM it
// parses with). A hand-written reducer used to do this and was quadratic in the page size
// (a 2 MiB page took minutes); turndown walks the parsed tree once.
//
// Choices on top of turndown's defaults: non-content elements are dropped, Markdown
// characters in the page's text are not backslash-escaped (the model reads the text, it
// does not re-render it), links resolve against the page's URL and only http(s) links keep
// their target, images become "[image: alt]", and table rows become "a | b" lines.
import TurndownService from "turndown";

const DROPPED = [
  "script",
  "style",
  "noscript",
  "template",
  "svg",
  "iframe",
  "object",
  "canvas",
  "head",
  "title",
  "select",
] as const;

/** The slice of a DOM node the rules below read. */
interface DomNode {
  nodeName: string;
  getAttribute(name: string): string | null;
  textContent: string | null;
  firstChild: DomNode | null;
  parentNode: DomNode | null;
}

export interface Readable {
  title: string;
  text: string;
}

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

/** Entities in the small texts turndown does not see (the title). */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[name.toLowerCase()] ?? whole;
  });
}

function service(baseUrl: string | undefined): TurndownService {
  const td = new TurndownService({
    headingStyle: "atx",
    codeBlockStyle: "fenced",
    emDelimiter: "_",
    strongDelimiter: "**",
    bulletListMarker: "-",
    hr: "---",
  });
  td.escape = (text: string) => text;
  td.remove([...DROPPED]);
  td.addRule("link", {
    filter: "a",
    replacement(content, node) {
      const href = (node as unknown as DomNode).getAttribute("href");
      const target = resolveUrl(href ?? undefined, baseUrl);
      return target && content.trim() !== "" ? `[${content}](${target})` : content;
    },
  });
  td.addRule("image", {
    filter: "img",
    replacement(_content, node) {
      const alt = (node as unknown as DomNode).getAttribute("alt");
      return alt ? `[image: ${alt}]` : "";
    },
  });
  td.addRule("listItem", {
    filter: "li",
    replacement(content, node) {
      const el = node as unknown as DomNode;
      const parent = el.parentNode;
      let marker = "-";
      if (parent?.nodeName === "OL") {
        const start = Number(parent.getAttribute("start") ?? "1");
        marker = `${(Number.isFinite(start) ? start : 1) + indexAmongItems(el)}.`;
      }
      const body = content.replace(/^\n+/, "").replace(/\n+$/, "\n").replace(/\n/gm, "\n  ");
      return `${marker} ${body}${body.endsWith("\n") ? "" : "\n"}`;
    },
  });
  td.addRule("preWithoutCode", {
    filter: (node) => node.nodeName === "PRE" && (node.firstChild as DomNode | null)?.nodeName !== "CODE",
    replacement(_content, node) {
      return `\n\n\`\`\`\n${(node as unknown as DomNode).textContent ?? ""}\n\`\`\`\n\n`;
    },
  });
  td.addRule("tableCell", {
    filter: ["th", "td"],
    replacement(content, node) {
      const first = previousElement(node as unknown as DomNode) === null;
      return `${first ? "" : " | "}${content.replace(/\s+/g, " ").trim()}`;
    },
  });
  td.addRule("tableRow", {
    filter: "tr",
    replacement: (content) => `\n${content}\n`,
  });
  return td;
}

function indexAmongItems(li: DomNode): number {
  let n = 0;
  for (let sib = previousElement(li); sib; sib = previousElement(sib)) if (sib.nodeName === "LI") n++;
  return n;
}

function previousElement(node: DomNode): DomNode | null {
  return (node as unknown as { previousElementSibling: DomNode | null }).previousElementSibling;
}

function resolveUrl(href: string | undefined, baseUrl: string | undefined): string | undefined {
  if (!href || href.startsWith("#")) return undefined;
  try {
    const url = new URL(href, baseUrl);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

const TITLE = /<title\b[^>]*>([^<]*)<\/title>/i;

export function htmlToText(html: string, baseUrl?: string): Readable {
  const title = decodeEntities(TITLE.exec(html)?.[1] ?? "")
    .replace(/\s+/g, " ")
    .trim();
  const text = service(baseUrl)
    .turndown(html)
    .replace(/\u00a0/g, " ")
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return { title, text };
}
