import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { applyHunks, diffLines, formatUnified, parseUnified, splitLines } from "../src/diff.ts";

describe("diffLines", () => {
  it("produces unified hunks with three lines of context", () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
    const after = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n";
    const hunks = diffLines(before, after);
    expect(hunks).toEqual([
      {
        oldStart: 2,
        oldLines: 7,
        newStart: 2,
        newLines: 7,
        lines: [
          { op: "context", text: "2" },
          { op: "context", text: "3" },
          { op: "context", text: "4" },
          { op: "remove", text: "5" },
          { op: "add", text: "five" },
          { op: "context", text: "6" },
          { op: "context", text: "7" },
          { op: "context", text: "8" },
        ],
      },
    ]);
    expect(formatUnified("f.txt", hunks)).toBe(
      "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
    );
  });

  it("marks a missing final newline and numbers empty sides like git", () => {
    const hunks = diffLines("", "a\nb");
    expect(hunks[0]).toMatchObject({ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2 });
    const text = formatUnified("x", hunks);
    expect(text).toContain("+b\n\\ No newline at end of file\n");
    expect(parseUnified(text)).toEqual(hunks);
    expect(diffLines("same\n", "same\n")).toEqual([]);
    expect(splitLines("a\nb")).toEqual(["a\n", "b"]);
  });

  it("round-trips: applying the hunks (also after format and parse) gives the new text", () => {
    const line = fc.constantFrom("a", "b", "c", "", "  x", "d;");
    const text = fc
      .array(line, { maxLength: 30 })
      .chain((lines) =>
        fc.boolean().map((eol) => (lines.length === 0 ? "" : lines.join("\n") + (eol ? "\n" : ""))),
      );
    fc.assert(
      fc.property(text, text, fc.integer({ min: 0, max: 4 }), (before, after, context) => {
        const hunks = diffLines(before, after, context);
        expect(applyHunks(before, hunks)).toBe(after);
        expect(applyHunks(before, parseUnified(formatUnified("f", hunks)))).toBe(after);
      }),
      { numRuns: 300 },
    );
  });

  it("refuses hunks that do not match", () => {
    const hunks = diffLines("a\nb\n", "a\nc\n");
    expect(() => applyHunks("x\ny\n", hunks)).toThrow(/does not apply/);
  });
});
