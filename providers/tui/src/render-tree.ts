// Paints a RenderTree as lines of text. Every node type has a treatment, and an
// unknown or empty node becomes a visible placeholder instead of vanishing, as the
// render tree's graceful-fallback rule requires. With the plain painter the result
// is the transcript text the CLI prints for headless runs and replays.
import type { JsonValue } from "@bufbuild/protobuf";
import {
  type ActionNode,
  DiffLineOp,
  type RenderNode,
  type RenderTree,
  TextStyle,
} from "@pluggableharness/protocol/render";
import { highlight } from "./markdown.ts";
import { type Painter, plainPainter, sanitize, type Tone } from "./style.ts";

export interface PaintOptions {
  painter?: Painter;
  /** Show the children of collapsible nodes even when they are collapsed by default. */
  expand?: boolean;
  /** The id of the action drawn as focused (Ctrl-T in the terminal UI). */
  focus?: string;
}

const STYLE_TONES: Partial<Record<TextStyle, Tone>> = {
  [TextStyle.BOLD]: "bold",
  [TextStyle.ITALIC]: "italic",
  [TextStyle.CODE]: "code",
  [TextStyle.DIM]: "dim",
  [TextStyle.ERROR]: "error",
  [TextStyle.WARNING]: "warning",
  [TextStyle.SUCCESS]: "success",
};

function textLines(text: string): string[] {
  return sanitize(text.replace(/\r\n?/g, "\n")).split("\n");
}

function indent(lines: string[], prefix: string, rest = " ".repeat(prefix.length)): string[] {
  return lines.map((l, i) => (i === 0 ? prefix : rest) + l);
}

function jsonText(value: JsonValue): string {
  return JSON.stringify(value);
}

function button(a: ActionNode, opts: PaintOptions): string {
  const p = opts.painter ?? plainPainter;
  const label = `[${sanitize(a.label || a.toolName)}]`;
  return a.id !== "" && a.id === opts.focus
    ? `${p.paint("▸", "accent")}${p.paint(label, "bold", "accent")}`
    : p.paint(label, "inverse");
}

/**
 * A group of one-line texts and actions (a task line with its "done" button) is drawn
 * as one row; undefined when the group holds anything else or no action.
 */
function row(children: readonly RenderNode[], opts: PaintOptions): string | undefined {
  if (!children.some((c) => c.node.case === "action")) return undefined;
  const parts: string[] = [];
  for (const c of children) {
    const n = c.node;
    if (n.case === "action") parts.push(button(n.value, opts));
    else if (n.case === "text" && !/[\r\n]/.test(n.value.content)) parts.push(paintNode(c, opts)[0] ?? "");
    else return undefined;
  }
  return parts.join(" ");
}

/** The actions of a tree, in the order they are drawn. */
export function actionsOf(node: RenderNode | undefined, depth = 0): ActionNode[] {
  const n = node?.node;
  if (!n || depth > 64) return [];
  if (n.case === "action") return n.value.id && n.value.provider && n.value.toolName ? [n.value] : [];
  if (n.case === "group" || n.case === "collapsible")
    return n.value.children.flatMap((c) => actionsOf(c, depth + 1));
  if (n.case === "list") return n.value.items.flatMap((c) => actionsOf(c, depth + 1));
  return [];
}

/** Lines for one node; never throws on odd content. */
export function paintNode(node: RenderNode | undefined, opts: PaintOptions = {}): string[] {
  const p = opts.painter ?? plainPainter;
  const n = node?.node;
  switch (n?.case) {
    case "text": {
      const tone = STYLE_TONES[n.value.style];
      return textLines(n.value.content).map((l) => (tone ? p.paint(l, tone) : l));
    }
    case "codeBlock": {
      const lang = n.value.language ?? "";
      const body = highlight(n.value.content.replace(/\r\n?/g, "\n").replace(/\n$/, ""), lang, p);
      // Highlighted, without fences: the same as code in an answer (markdown.ts).
      return body;
    }
    case "diff": {
      const out: string[] = [];
      for (const h of n.value.hunks) {
        out.push(p.paint(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`, "accent"));
        for (const line of h.lines) {
          for (const t of textLines(line.text)) {
            if (line.op === DiffLineOp.ADD) out.push(p.paint(`+${t}`, "added"));
            else if (line.op === DiffLineOp.REMOVE) out.push(p.paint(`-${t}`, "removed"));
            else out.push(` ${t}`);
          }
        }
      }
      return out.length > 0 ? out : [p.paint("(empty diff)", "dim")];
    }
    case "table": {
      const rows = [n.value.headers, ...n.value.rows.map((r) => r.cells)].map((r) =>
        r.map((c) => sanitize(c.replace(/\n/g, " "))),
      );
      const cols = Math.max(0, ...rows.map((r) => r.length));
      const widths = Array.from({ length: cols }, (_, i) =>
        Math.max(0, ...rows.map((r) => (r[i] ?? "").length)),
      );
      const fmt = (r: string[]) =>
        widths
          .map((w, i) => (r[i] ?? "").padEnd(w))
          .join("  ")
          .trimEnd();
      const out: string[] = [];
      if (n.value.headers.length > 0) {
        out.push(p.paint(fmt(rows[0]!), "bold"));
        out.push(widths.map((w) => "-".repeat(w)).join("  "));
      }
      for (const r of rows.slice(1)) out.push(fmt(r));
      return out;
    }
    case "link": {
      const text = sanitize(n.value.text || n.value.url);
      // A reference to a memory record: the name, marked as a link, and the record's id
      // when the name differs from it (what `/memory show <id>` takes).
      const memory = /^memory:(.+)$/.exec(n.value.url);
      if (memory) {
        const id = sanitize(memory[1]!);
        return [`${p.paint(`[[${text}]]`, "accent", "underline")}${id !== text ? ` (${id})` : ""}`];
      }
      return [n.value.url && n.value.url !== n.value.text ? `${text} <${sanitize(n.value.url)}>` : text];
    }
    case "list": {
      const out: string[] = [];
      n.value.items.forEach((item, i) => {
        const marker = n.value.ordered ? `${i + 1}. ` : "- ";
        out.push(...indent(paintNode(item, opts), marker));
      });
      return out;
    }
    case "group": {
      // A row of text and buttons (a task with its [done]) is one line, the buttons joined by
      // spaces; so is a run of text with links in it (a memory record's line with
      // [[references]]), as it was written. Any other group stacks its children.
      const kids = n.value.children;
      const buttons = row(kids, opts);
      if (buttons !== undefined) return [buttons];
      const inline =
        kids.some((c) => c.node.case === "link") &&
        kids.every(
          (c) => (c.node.case === "text" && !c.node.value.content.includes("\n")) || c.node.case === "link",
        );
      if (inline) return [kids.map((c) => paintNode(c, opts).join("")).join("")];
      return kids.flatMap((c) => paintNode(c, opts));
    }
    case "collapsible": {
      const collapsed = n.value.collapsedByDefault && !opts.expand;
      const head = `${collapsed ? "▸" : "▾"} ${sanitize(n.value.summary)}`;
      if (collapsed) return [p.paint(head, "dim")];
      return [
        p.paint(head, "dim"),
        ...indent(
          n.value.children.flatMap((c) => paintNode(c, opts)),
          "  ",
        ),
      ];
    }
    case "subSession":
      return [
        p.paint(
          `↳ session ${n.value.sessionId}${n.value.summary ? `: ${sanitize(n.value.summary)}` : ""}`,
          "accent",
        ),
      ];
    case "action": {
      const args = n.value.args ? ` ${jsonText(n.value.args)}` : "";
      return [
        button(n.value, opts) + p.paint(sanitize(` ${n.value.provider}.${n.value.toolName}${args}`), "dim"),
      ];
    }
    default:
      return [p.paint("[content this terminal cannot show]", "dim")];
  }
}

export function paintTree(tree: RenderTree | undefined, opts: PaintOptions = {}): string[] {
  return paintNode(tree?.root, opts);
}

/** The plain-text form of a tree, as printed by headless runs and replays. */
export function treeText(tree: RenderTree | undefined, opts: Omit<PaintOptions, "painter"> = {}): string {
  return paintTree(tree, { ...opts, painter: plainPainter }).join("\n");
}
