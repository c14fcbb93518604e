import { create } from "@bufbuild/protobuf";
import { RenderTreeSchema } from "@pluggableharness/protocol/render";
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
});
