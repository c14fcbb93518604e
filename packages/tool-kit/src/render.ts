// RenderNode builders for Preview and Render answers.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { DiffLineOp, type RenderNodeSchema, TextStyle } from "@pluggableharness/protocol/render";
import type { Hunk } from "./diff.ts";

export type RenderNodeInit = MessageInitShape<typeof RenderNodeSchema>;

export type StyleName = "normal" | "bold" | "italic" | "code" | "dim" | "error" | "warning" | "success";

const STYLES: Record<StyleName, TextStyle> = {
  normal: TextStyle.NORMAL,
  bold: TextStyle.BOLD,
  italic: TextStyle.ITALIC,
  code: TextStyle.CODE,
  dim: TextStyle.DIM,
  error: TextStyle.ERROR,
  warning: TextStyle.WARNING,
  success: TextStyle.SUCCESS,
};

const OPS = { context: DiffLineOp.CONTEXT, add: DiffLineOp.ADD, remove: DiffLineOp.REMOVE } as const;

export const r = {
  text(content: string, style?: StyleName): RenderNodeInit {
    return { node: { case: "text", value: { content, ...(style ? { style: STYLES[style] } : {}) } } };
  },
  code(content: string, language?: string): RenderNodeInit {
    return { node: { case: "codeBlock", value: { content, ...(language ? { language } : {}) } } };
  },
  diff(hunks: readonly Hunk[]): RenderNodeInit {
    return {
      node: {
        case: "diff",
        value: {
          hunks: hunks.map((h) => ({
            oldStart: h.oldStart,
            oldLines: h.oldLines,
            newStart: h.newStart,
            newLines: h.newLines,
            lines: h.lines.map((l) => ({ op: OPS[l.op], text: l.text })),
          })),
        },
      },
    };
  },
  table(headers: readonly string[], rows: readonly (readonly string[])[]): RenderNodeInit {
    return {
      node: {
        case: "table",
        value: { headers: [...headers], rows: rows.map((cells) => ({ cells: [...cells] })) },
      },
    };
  },
  link(text: string, url: string): RenderNodeInit {
    return { node: { case: "link", value: { text, url } } };
  },
  list(items: readonly RenderNodeInit[], ordered = false): RenderNodeInit {
    return { node: { case: "list", value: { items: [...items], ordered } } };
  },
  group(children: readonly RenderNodeInit[]): RenderNodeInit {
    return { node: { case: "group", value: { children: [...children] } } };
  },
  /** A pointer to another session's transcript (a sub-agent), shown as a reference. */
  subSession(sessionId: string, summary: string): RenderNodeInit {
    return { node: { case: "subSession", value: { sessionId, summary } } };
  },
  collapsible(
    summary: string,
    children: readonly RenderNodeInit[],
    collapsedByDefault = true,
  ): RenderNodeInit {
    return {
      node: { case: "collapsible", value: { summary, children: [...children], collapsedByDefault } },
    };
  },
};
