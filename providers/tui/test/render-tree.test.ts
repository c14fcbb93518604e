import { create } from "@bufbuild/protobuf";
import {
  DiffLineOp,
  type RenderNodeSchema,
  type RenderTree,
  RenderTreeSchema,
  TextStyle,
} from "@pluggableharness/protocol/render";
import { describe, expect, it } from "vitest";
import { memoryContentNode } from "../../../packages/kernel/src/memory/links.ts";
import { actionsOf, paintTree, treeText } from "../src/render-tree.ts";
import { ansiPainter, stripAnsi } from "../src/style.ts";

function tree(node: Parameters<typeof create<typeof RenderNodeSchema>>[1]): RenderTree {
  return create(RenderTreeSchema, { root: node });
}

const text = (content: string, style = TextStyle.UNSPECIFIED) => ({
  node: { case: "text" as const, value: { content, style } },
});

describe("RenderTree painting", () => {
  it("paints a memory record's [[references]] as links inside their line", () => {
    // What the kernel renders for a record's text (packages/kernel/src/memory/links.ts).
    const t = create(RenderTreeSchema, {
      root: memoryContentNode("Ship on Thursdays; see [[Deploy Checklist]] and [[oncall]].\nNo links here."),
    });
    expect(treeText(t).split("\n")).toEqual([
      "Ship on Thursdays; see [[Deploy Checklist]] (deploy-checklist) and [[oncall]].",
      "No links here.",
    ]);
    const painted = paintTree(t, { painter: ansiPainter });
    expect(painted).toHaveLength(2);
    // Marked as links (accent, underlined) where colour is on.
    expect(painted[0]).toContain("\x1b[4m[[Deploy Checklist]]\x1b[24m");
    expect(painted[0]).toContain("\x1b[4m[[oncall]]\x1b[24m");
    expect(stripAnsi(painted[1]!)).toBe("No links here.");
  });

  it("paints every node type as text", () => {
    const t = tree({
      node: {
        case: "group",
        value: {
          children: [
            text("plain"),
            { node: { case: "codeBlock", value: { language: "ts", content: "let x = 1;\n" } } },
            {
              node: {
                case: "diff",
                value: {
                  hunks: [
                    {
                      oldStart: 3,
                      oldLines: 2,
                      newStart: 3,
                      newLines: 2,
                      lines: [
                        { op: DiffLineOp.CONTEXT, text: "keep" },
                        { op: DiffLineOp.REMOVE, text: "old" },
                        { op: DiffLineOp.ADD, text: "new" },
                      ],
                    },
                  ],
                },
              },
            },
            {
              node: {
                case: "table",
                value: { headers: ["name", "n"], rows: [{ cells: ["alpha", "1"] }, { cells: ["b", "22"] }] },
              },
            },
            { node: { case: "link", value: { text: "docs", url: "https://example.com" } } },
            { node: { case: "list", value: { ordered: true, items: [text("first"), text("second")] } } },
            {
              node: {
                case: "collapsible",
                value: { summary: "details", collapsedByDefault: false, children: [text("inside")] },
              },
            },
            { node: { case: "subSession", value: { sessionId: "S2", summary: "child work" } } },
            {
              node: {
                case: "action",
                value: { id: "a", label: "Undo", toolName: "undo", provider: "fs", args: { n: 1 } },
              },
            },
          ],
        },
      },
    });
    expect(treeText(t).split("\n")).toEqual([
      "plain",
      "let x = 1;",
      "@@ -3,2 +3,2 @@",
      " keep",
      "-old",
      "+new",
      "name   n",
      "-----  --",
      "alpha  1",
      "b      22",
      "docs <https://example.com>",
      "1. first",
      "2. second",
      "▾ details",
      "  inside",
      "↳ session S2: child work",
      '[Undo] fs.undo {"n":1}',
    ]);
  });

  it("hides collapsed children unless asked to expand", () => {
    const t = tree({
      node: {
        case: "collapsible",
        value: { summary: "Thinking", collapsedByDefault: true, children: [text("secret plan")] },
      },
    });
    expect(treeText(t)).toBe("▸ Thinking");
    expect(treeText(t, { expand: true })).toBe("▾ Thinking\n  secret plan");
  });

  it("shows a placeholder for an empty or unknown node instead of dropping it", () => {
    expect(treeText(tree({}))).toBe("[content this terminal cannot show]");
    expect(treeText(undefined)).toBe("[content this terminal cannot show]");
  });

  it("styles text on a colour terminal without changing its visible content", () => {
    const lines = paintTree(tree(text("careful", TextStyle.WARNING)), { painter: ansiPainter });
    expect(lines[0]).toContain("\x1b[33m");
    expect(stripAnsi(lines[0]!)).toBe("careful");
  });

  it("strips control sequences a producer put in its text", () => {
    expect(treeText(tree(text("a\x1b[2Jb\x07c\r\nd")))).toBe("abc\nd");
  });

  it("draws a line of text with its actions as one row, marks the focused one, and lists them", () => {
    const done = (id: string) => ({
      node: {
        case: "action" as const,
        value: { id, label: "done", provider: "task", toolName: "task_update", args: { id } },
      },
    });
    const t = tree({
      node: {
        case: "group",
        value: {
          children: [
            text("Tasks 0/2", TextStyle.BOLD),
            { node: { case: "group", value: { children: [text("☐ one"), done("1")] } } },
            { node: { case: "group", value: { children: [text("☐ two"), done("2")] } } },
          ],
        },
      },
    });
    expect(treeText(t).split("\n")).toEqual(["Tasks 0/2", "☐ one [done]", "☐ two [done]"]);
    expect(paintTree(t, { focus: "2" })).toEqual(["Tasks 0/2", "☐ one [done]", "☐ two ▸[done]"]);
    expect(actionsOf(t.root).map((a) => a.id)).toEqual(["1", "2"]);
  });
});
