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

  it("reads a lone ESC as the Escape key", () => {
    expect(new KeyDecoder().decode("\x1b")).toEqual([{ name: "escape" }]);
    expect(new KeyDecoder().decode("\x1b\x1b")).toEqual([{ name: "escape" }, { name: "escape" }]);
  });

  it("collects a bracketed paste across reads as one key", () => {
    const d = new KeyDecoder();
    expect(d.decode("\x1b[200~line one\n")).toEqual([]);
    expect(d.decode("line two\x1b[201~x")).toEqual([
      { name: "paste", text: "line one\nline two" },
      { name: "text", text: "x" },
    ]);
  });
});
