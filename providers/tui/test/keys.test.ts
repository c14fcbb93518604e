import { describe, expect, it } from "vitest";
import { KeyDecoder } from "../src/keys.ts";

describe("KeyDecoder", () => {
  it("decodes text, controls and escape sequences in order", () => {
    const d = new KeyDecoder();
    expect(d.decode("ab\r\x7f\x1b[A\x1b[3~\x03")).toEqual([
      { name: "text", text: "ab" },
      { name: "enter" },
      { name: "backspace" },
      { name: "up" },
      { name: "delete" },
      { name: "ctrl-c" },
    ]);
  });

  it("reads a lone ESC as Escape only once nothing follows it", () => {
    const d = new KeyDecoder();
    expect(d.decode("\x1b")).toEqual([]);
    expect(d.pending).toBe(true);
    expect(d.flush()).toEqual([{ name: "escape" }]);
    expect(d.pending).toBe(false);
    expect(d.decode("\x1b\x1b")).toEqual([{ name: "escape" }]);
    expect(d.flush()).toEqual([{ name: "escape" }]);
  });

  it("completes an escape sequence split across reads instead of reading Escape", () => {
    const d = new KeyDecoder();
    expect(d.decode("x\x1b")).toEqual([{ name: "text", text: "x" }]);
    expect(d.decode("[")).toEqual([]);
    expect(d.decode("1;5")).toEqual([]);
    expect(d.decode("Dy")).toEqual([{ name: "word-left" }, { name: "text", text: "y" }]);
    expect(d.decode("\x1bO")).toEqual([]);
    expect(d.decode("A")).toEqual([{ name: "up" }]);
    // A paste marker split in two still opens a paste.
    expect(d.decode("\x1b[20")).toEqual([]);
    expect(d.decode("0~a\nb\x1b[2")).toEqual([]);
    expect(d.decode("01~")).toEqual([{ name: "paste", text: "a\nb" }]);
  });

  it("understands xterm modifiers, modifyOtherKeys, the kitty protocol and Alt prefixes", () => {
    const d = new KeyDecoder();
    // Shift-Enter three ways, Alt-Enter, Ctrl-J.
    expect(d.decode("\x1b[13;2u")).toEqual([{ name: "newline" }]);
    expect(d.decode("\x1b[27;2;13~")).toEqual([{ name: "newline" }]);
    expect(d.decode("\x1b\r")).toEqual([{ name: "newline" }]);
    expect(d.decode("\n")).toEqual([{ name: "newline" }]);
    // Plain Enter and Escape in the kitty protocol.
    expect(d.decode("\x1b[13u\x1b[27u")).toEqual([{ name: "enter" }, { name: "escape" }]);
    // Kitty text keys, Ctrl-C under kitty, Shift-Tab, Shift-Up, Ctrl-Right, Alt-b/f.
    expect(d.decode("\x1b[97u\x1b[97;2u")).toEqual([{ name: "text", text: "aA" }]);
    expect(d.decode("\x1b[99;5u")).toEqual([{ name: "ctrl-c" }]);
    expect(d.decode("\x1b[Z\x1b[1;2A\x1b[1;5C\x1bb\x1bf")).toEqual([
      { name: "backtab" },
      { name: "up", shift: true },
      { name: "word-right" },
      { name: "word-left" },
      { name: "word-right" },
    ]);
    // Focus reports and unknown sequences are not keys (and not Escape).
    expect(d.decode("\x1b[I\x1b[O\x1b[99~")).toEqual([]);
  });

  it("collects a bracketed paste across reads as one key, verbatim", () => {
    const d = new KeyDecoder();
    expect(d.decode("\x1b[200~line one\r\n")).toEqual([]);
    expect(d.decode("line two\x1b[A\x1b[201~x")).toEqual([
      { name: "paste", text: "line one\r\nline two\x1b[A" },
      { name: "text", text: "x" },
    ]);
  });
});
