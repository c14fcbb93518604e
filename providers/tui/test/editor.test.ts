import { describe, expect, it } from "vitest";
import { LineEditor } from "../src/editor.ts";
import type { Key } from "../src/keys.ts";

const type = (e: LineEditor, ...keys: (Key | string)[]) => {
  for (const k of keys) e.apply(typeof k === "string" ? { name: "text", text: k } : k);
};

describe("LineEditor", () => {
  it("keeps pasted text verbatim, newlines included, and inserts newlines", () => {
    const e = new LineEditor();
    type(e, "a", { name: "paste", text: "one\r\ntwo\nthree" }, { name: "newline" }, "b");
    expect(e.text).toBe("aone\ntwo\nthree\nb");
  });

  it("continues a line ending in a backslash instead of submitting", () => {
    const e = new LineEditor();
    type(e, "first \\");
    expect(e.continueLine()).toBe(true);
    type(e, "second");
    expect(e.text).toBe("first \nsecond");
    expect(e.continueLine()).toBe(false);
  });

  it("moves between lines with up/down and reaches history only from the first/last line", () => {
    const e = new LineEditor(["older entry"]);
    type(e, "abc", { name: "newline" }, "de");
    type(e, { name: "up" });
    expect(e.cursor).toBe(2); // column 2 of "abc"
    type(e, { name: "down" });
    expect(e.cursor).toBe(e.text.length);
    type(e, { name: "up" }, { name: "up" });
    expect(e.text).toBe("older entry");
    type(e, { name: "down" });
    expect(e.text).toBe("abc\nde"); // the draft comes back
  });

  it("searches history backwards with Ctrl-R and takes the match on Enter", () => {
    const saved: string[] = [];
    const e = new LineEditor(["git status", "npm test", "git log"], (l) => saved.push(l));
    type(e, { name: "ctrl-r" }, "git");
    expect(e.search?.match).toBe(2);
    type(e, { name: "ctrl-r" });
    expect(e.search?.match).toBe(0);
    e.apply({ name: "enter" });
    expect(e.search).toBeUndefined();
    expect(e.text).toBe("git status");
    e.remember("new one");
    expect(saved).toEqual(["new one"]);
  });

  it("deletes and moves by grapheme, so an emoji is one step", () => {
    const e = new LineEditor();
    type(e, "a👍🏽b");
    type(e, { name: "left" }, { name: "backspace" });
    expect(e.text).toBe("ab");
  });

  it("lays out wide characters in rows that fit, with the cursor where it is", () => {
    const e = new LineEditor();
    type(e, "你好世界ab");
    const l = e.layout(5);
    expect(l.rows).toEqual(["你好", "世界a", "b"]);
    expect([l.cursorRow, l.cursorCol]).toEqual([2, 1]);
  });
});
