import { describe, expect, it } from "vitest";
import { diffLine, highlight, loadHighlighter, MarkdownStream, renderMarkdown } from "../src/markdown.ts";
import { ansiPainter, plainPainter, stripAnsi, visibleWidth } from "../src/style.ts";

const ANSWER = [
  "# Build notes",
  "",
  "The **release** build uses `esbuild` and writes one file per plugin; see [the docs](https://example.com/docs) for more detail about every flag that it accepts.",
  "",
  "- first item, which is long enough to wrap onto a second row at sixty columns",
  "- 你好世界 wide characters and an emoji 👍🏽 in a list item that wraps as well",
  "",
  "| Tool | Calls | Notes |",
  "|------|------:|-------|",
  "| bash | 12 | ran the test suite twice and the linter once |",
  "| edit | 3 | 中文说明 |",
  "",
  "```ts",
  "const answer: number = 42; // the answer",
  "```",
  "",
  "Done.",
].join("\n");

describe("markdown rendering", () => {
  for (const width of [40, 60, 120]) {
    it(`fits every row into ${width} columns by display width and breaks at words`, () => {
      const rows = renderMarkdown(ANSWER, width, ansiPainter);
      for (const r of rows) expect(visibleWidth(r)).toBeLessThanOrEqual(width);
      const plain = rows.map(stripAnsi);
      // No word is cut in prose: every word of the paragraph appears whole.
      const prose = plain.join(" ");
      for (const w of ["release", "esbuild", "accepts.", "characters", "emoji"]) expect(prose).toContain(w);
      expect(plain.some((r) => /^┌─+┬─+┬─+┐$/.test(r))).toBe(true);
      expect(plain).toContain("Build notes");
      expect(plain).not.toContain("# Build notes");
      expect(plain.join("\n")).toContain("const answer: number = 42; // the answer");
    });
  }

  it("draws a table's columns aligned, numbers right-aligned, wide cells counted as two columns", () => {
    const rows = renderMarkdown(ANSWER, 120, plainPainter);
    const table = rows.filter((r) => r.startsWith("│"));
    // The display column of every border in a row.
    const borders = (r: string) => {
      const at: number[] = [];
      let col = 0;
      for (const ch of r) {
        if (ch === "│") at.push(col);
        col += visibleWidth(ch);
      }
      return at;
    };
    const bars = table.map(borders);
    for (const b of bars) expect(b).toEqual(bars[0]);
    expect(table.find((r) => r.includes("bash"))).toMatch(/│ +12 │/);
  });

  it("highlights code by language and diffs by line", async () => {
    await loadHighlighter();
    const [line] = highlight('const s = "x";', "ts", ansiPainter);
    expect(line).toContain("\x1b[35mconst\x1b[39m");
    expect(line).toContain('\x1b[32m"x"\x1b[39m');
    expect(highlight("anything", "nosuchlanguage", plainPainter)).toEqual(["anything"]);
    expect(diffLine("+added", ansiPainter)).toBe("\x1b[32m+added\x1b[39m");
    expect(diffLine("-gone", ansiPainter)).toBe("\x1b[31m-gone\x1b[39m");
    const diff = renderMarkdown("```diff\n-old\n+new\n```", 40, ansiPainter);
    expect(diff).toContain("\x1b[31m-old\x1b[39m");
  });

  it("streamed piece by piece, commits finished blocks once and ends as the whole renders", () => {
    for (const step of [2, 17]) {
      const s = new MarkdownStream();
      const committed: string[] = [];
      for (let i = 0; i < ANSWER.length; i += step) {
        s.append(ANSWER.slice(i, i + step));
        committed.push(...s.takeSettled(60, plainPainter));
        // The live part never repeats a committed block.
        const live = s.live(60, plainPainter);
        if (committed.length > 0 && live.length > 0) expect(live[0]).toBe("");
      }
      committed.push(...s.finish(60, plainPainter));
      expect(committed).toEqual(renderMarkdown(ANSWER, 60, plainPainter));
    }
  });

  it("keeps an unclosed code fence live until it closes", () => {
    const s = new MarkdownStream();
    s.append("Intro.\n\n```py\nprint(1)\n");
    expect(s.takeSettled(60, plainPainter)).toEqual(["Intro."]);
    expect(s.live(60, plainPainter)).toEqual(["", "print(1)"]);
    s.append("```\n\nAfter.");
    expect(s.takeSettled(60, plainPainter)).toEqual(["", "print(1)"]);
  });

  it("shows code without its fences and a task item with one box, on the item's row", () => {
    const rows = renderMarkdown(
      "Plan:\n\n- [ ] write the test\n- [x] read the code\n\n```js\nconst a = 1;\n```\n\nDone.",
      60,
      plainPainter,
    );
    expect(rows).toEqual([
      "Plan:",
      "",
      "• ☐ write the test",
      "• ☑ read the code",
      "",
      "const a = 1;",
      "",
      "Done.",
    ]);
    // A loose list puts each item in a paragraph: the box is not repeated there either.
    expect(renderMarkdown("1. [ ] one\n\n2. [x] two", 60, plainPainter)).toEqual([
      "1. ☐ one",
      "",
      "2. ☑ two",
    ]);
  });
});
