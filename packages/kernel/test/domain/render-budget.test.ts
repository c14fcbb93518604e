import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { type RenderNode, type RenderNodeSchema, RenderTreeSchema } from "@pluggableharness/protocol/render";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { capRenderTree } from "../../src/domain/index.ts";

const diffTree = (lines: number) =>
  create(RenderTreeSchema, {
    root: {
      node: {
        case: "group",
        value: {
          children: [
            { node: { case: "text", value: { content: "Create big.txt" } } },
            {
              node: {
                case: "diff",
                value: {
                  hunks: [
                    {
                      oldStart: 0,
                      oldLines: 0,
                      newStart: 1,
                      newLines: lines,
                      lines: Array.from({ length: lines }, () => ({ op: 2, text: "x".repeat(99) })),
                    },
                  ],
                },
              },
            },
          ],
        },
      },
    },
  });

describe("capRenderTree", () => {
  it("leaves a tree within the budget alone", () => {
    const t = diffTree(10);
    expect(capRenderTree(t, 10_000)).toBe(t);
  });

  it("cuts a huge preview to the budget, in document order, and says how much is left out", () => {
    const cut = capRenderTree(diffTree(100_000), 1_000);
    const text = JSON.stringify(cut);
    expect(text.length).toBeLessThan(10_000);
    expect(text).toContain("Create big.txt");
    expect(text).toMatch(/the rest of this preview \(9,899,\d{3} more characters\) is not shown/);
  });

  it("any tree of text, code, diffs, lists, groups and collapsibles keeps exactly its first budget characters", () => {
    type NodeInit = MessageInitShape<typeof RenderNodeSchema>;
    const str = fc.string({ unit: fc.constantFrom("a", "b", "c"), maxLength: 12 });
    const { node } = fc.letrec<{ node: NodeInit }>((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        str.map((content): NodeInit => ({ node: { case: "text", value: { content } } })),
        str.map((content): NodeInit => ({ node: { case: "codeBlock", value: { content, language: "ts" } } })),
        fc.array(fc.array(str, { maxLength: 3 }), { maxLength: 3 }).map(
          (hunks): NodeInit => ({
            node: {
              case: "diff",
              value: { hunks: hunks.map((lines) => ({ lines: lines.map((text) => ({ op: 2, text })) })) },
            },
          }),
        ),
        fc
          .array(tie("node"), { maxLength: 3 })
          .map((items): NodeInit => ({ node: { case: "list", value: { items } } })),
        fc
          .array(tie("node"), { maxLength: 3 })
          .map((children): NodeInit => ({ node: { case: "group", value: { children } } })),
        fc.tuple(str, fc.array(tie("node"), { maxLength: 3 })).map(
          ([summary, children]): NodeInit => ({
            node: { case: "collapsible", value: { summary, children } },
          }),
        ),
      ),
    }));
    // The text a reader sees, in document order (what the budget counts).
    const flat = (n: RenderNode | undefined): string => {
      const v = n?.node;
      switch (v?.case) {
        case "text":
        case "codeBlock":
          return v.value.content;
        case "diff":
          return v.value.hunks.map((h) => h.lines.map((l) => l.text).join("")).join("");
        case "list":
          return v.value.items.map(flat).join("");
        case "group":
          return v.value.children.map(flat).join("");
        case "collapsible":
          return v.value.summary + v.value.children.map(flat).join("");
        default:
          return "";
      }
    };
    fc.assert(
      fc.property(node, fc.nat(60), (init, budget) => {
        const tree = create(RenderTreeSchema, { root: init });
        const all = flat(tree.root);
        const cut = capRenderTree(tree, budget);
        if (all.length <= budget) {
          expect(cut).toBe(tree);
          return;
        }
        const v = cut.root?.node;
        if (v?.case !== "group") throw new Error("a cut tree is a group ending in a note");
        const children = v.value.children;
        const note = flat(children.at(-1));
        expect(note).toBe(`… the rest of this preview (${all.length - budget} more characters) is not shown`);
        expect(children.slice(0, -1).map(flat).join("")).toBe(all.slice(0, budget));
        // The kept part keeps the original's shape: its root is the same kind of node.
        if (children.length === 2) expect(children[0]!.node.case).toBe(tree.root!.node.case);
      }),
    );
  });
});
