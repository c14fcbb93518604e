// RenderTree (the protobuf JSON form) to DOM. Text always goes in as text nodes; only
// assistant prose goes through marked, with raw HTML in it escaped and link targets
// limited to http(s)/mailto, so nothing a model writes becomes markup or script (the
// page's Content-Security-Policy forbids inline script on top of that).
import { Marked } from "/vendor/marked.js";

const escapeHtml = (s) =>
  String(s).replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c],
  );

const safeUrl = (href) => {
  try {
    const u = new URL(href, location.href);
    return u.protocol === "http:" || u.protocol === "https:" || u.protocol === "mailto:" ? u.href : "";
  } catch {
    return "";
  }
};

const markdown = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    html(token) {
      return escapeHtml(token.text);
    },
    link(token) {
      const href = safeUrl(token.href);
      const text = this.parser.parseInline(token.tokens);
      return href
        ? `<a href="${escapeHtml(href)}" rel="noreferrer noopener" target="_blank">${text}</a>`
        : text;
    },
    image(token) {
      return escapeHtml(token.text || "");
    },
  },
});

/** Markdown text as a DOM fragment (safe: see above). */
export function markdownElement(text) {
  const div = document.createElement("div");
  div.className = "md";
  div.innerHTML = markdown.parse(text);
  return div;
}

const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

const STYLE = {
  TEXT_STYLE_BOLD: "bold",
  TEXT_STYLE_ITALIC: "italic",
  TEXT_STYLE_CODE: "code",
  TEXT_STYLE_DIM: "dim",
  TEXT_STYLE_ERROR: "error",
  TEXT_STYLE_WARNING: "warning",
  TEXT_STYLE_SUCCESS: "success",
};

/** A DiffNode as a table-free, screen-reader-friendly listing (+/- spoken as added/removed). */
export function diffElement(diff) {
  const wrap = el("div", "diff");
  wrap.setAttribute("role", "group");
  wrap.setAttribute("aria-label", "diff");
  for (const h of diff.hunks ?? []) {
    const head = el(
      "div",
      "hunk",
      `@@ -${h.oldStart ?? 0},${h.oldLines ?? 0} +${h.newStart ?? 0},${h.newLines ?? 0} @@`,
    );
    wrap.append(head);
    const pre = el("pre");
    for (const l of h.lines ?? []) {
      const op = l.op === "DIFF_LINE_OP_ADD" ? "add" : l.op === "DIFF_LINE_OP_REMOVE" ? "del" : "ctx";
      const line = el("span", `dl ${op}`);
      const mark = el("span", "mark", op === "add" ? "+" : op === "del" ? "-" : " ");
      mark.setAttribute("aria-label", op === "add" ? "added" : op === "del" ? "removed" : "");
      line.append(mark, document.createTextNode(l.text ?? ""));
      pre.append(line, document.createTextNode("\n"));
    }
    wrap.append(pre);
  }
  return wrap;
}

/**
 * One RenderNode. `ctx.onSession(id)` opens a sub-session; `ctx.onAction(node)` fires an
 * action; `ctx.markdown(textNode)` says whether a plain text node is prose to render as markdown.
 */
export function renderNode(node, ctx = {}) {
  if (!node) return document.createTextNode("");
  if (node.text) {
    const t = node.text;
    if (ctx.markdown && (!t.style || t.style === "TEXT_STYLE_UNSPECIFIED" || t.style === "TEXT_STYLE_NORMAL"))
      return markdownElement(t.content ?? "");
    const cls = STYLE[t.style];
    if (cls === "code") return el("code", "", t.content ?? "");
    return el(
      cls === "bold" ? "strong" : cls === "italic" ? "em" : "span",
      `t ${cls ?? ""}`,
      t.content ?? "",
    );
  }
  if (node.codeBlock) {
    const pre = el("pre", "code");
    const code = el(
      "code",
      node.codeBlock.language ? `lang-${node.codeBlock.language}` : "",
      node.codeBlock.content ?? "",
    );
    pre.append(code);
    return pre;
  }
  if (node.diff) return diffElement(node.diff);
  if (node.table) {
    const table = el("table");
    const thead = el("thead");
    const hr = el("tr");
    for (const h of node.table.headers ?? []) hr.append(el("th", "", h));
    thead.append(hr);
    const tbody = el("tbody");
    for (const r of node.table.rows ?? []) {
      const tr = el("tr");
      for (const c of r.cells ?? []) tr.append(el("td", "", c));
      tbody.append(tr);
    }
    table.append(thead, tbody);
    return table;
  }
  if (node.link) {
    // A reference to a memory record ([[name]] in its text): a link that puts
    // "/memory show <id>" in the composer (app.js), never a navigation.
    const memory = /^memory:([a-z0-9-]{1,64})$/.exec(node.link.url ?? "");
    if (memory) {
      const a = el("a", "memory-link", node.link.text || memory[1]);
      a.href = `#memory:${memory[1]}`;
      a.dataset.memoryId = memory[1];
      a.title = `memory record ${memory[1]}`;
      return a;
    }
    const href = safeUrl(node.link.url ?? "");
    if (!href) return el("span", "", node.link.text || node.link.url || "");
    const a = el("a", "", node.link.text || node.link.url);
    a.href = href;
    a.rel = "noreferrer noopener";
    a.target = "_blank";
    return a;
  }
  if (node.list) {
    const list = el(node.list.ordered ? "ol" : "ul");
    for (const item of node.list.items ?? []) {
      const li = el("li");
      li.append(renderNode(item, ctx));
      list.append(li);
    }
    return list;
  }
  if (node.group) {
    // One-line texts with their buttons (a task and its "done") read as one row; text with
    // links in it (a memory record's line) reads as one line, not markdown.
    const kids = node.group.children ?? [];
    const row = kids.some((c) => c?.action) && kids.every((c) => c?.action || c?.text);
    const inline = !row && kids.some((c) => c?.link) && kids.every((c) => c?.link || c?.text);
    const div = el("div", row ? "group row" : inline ? "group inline" : "group");
    for (const c of kids) div.append(renderNode(c, inline ? { ...ctx, markdown: false } : ctx));
    return div;
  }
  if (node.collapsible) {
    const d = el("details", "collapsible");
    if (!node.collapsible.collapsedByDefault) d.open = true;
    d.append(el("summary", "", node.collapsible.summary ?? ""));
    for (const c of node.collapsible.children ?? []) d.append(renderNode(c, { ...ctx, markdown: false }));
    return d;
  }
  if (node.subSession) {
    const b = el(
      "button",
      "subsession",
      `↳ ${node.subSession.summary || "sub-agent"} (${node.subSession.sessionId})`,
    );
    b.type = "button";
    b.addEventListener("click", () => ctx.onSession?.(node.subSession.sessionId));
    return b;
  }
  if (node.action) {
    const b = el("button", "action", node.action.label || node.action.toolName);
    b.type = "button";
    // Says what it runs: the kernel still applies policy, which may ask first.
    b.title = `${node.action.provider}.${node.action.toolName} ${JSON.stringify(node.action.args ?? {})}`;
    b.addEventListener("click", () => ctx.onAction?.(node.action));
    return b;
  }
  return document.createTextNode("");
}

/** Whether a render is an assistant message (the kernel's renderer: a group headed by bold "Assistant"). */
export function isAssistantMessage(tree) {
  const root = tree?.root;
  const head = root?.group?.children?.[0]?.text;
  return !!head && head.style === "TEXT_STYLE_BOLD" && (head.content ?? "").startsWith("Assistant");
}

/** A whole RenderTree; an assistant message's prose as markdown. */
export function renderTree(tree, ctx = {}) {
  const root = tree?.root;
  if (!root) return document.createTextNode("");
  if (isAssistantMessage(tree)) {
    const div = el("div", "group assistant");
    const [head, ...rest] = root.group.children;
    div.append(renderNode(head, ctx));
    for (const c of rest) div.append(renderNode(c, { ...ctx, markdown: true }));
    return div;
  }
  return renderNode(root, ctx);
}
