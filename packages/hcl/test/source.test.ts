import { describe, expect, it } from "vitest";
import { parseFile } from "../src/index.ts";
import { decodeUtf8, firstLoneSurrogate, SourceFile, utf8Length } from "../src/source.ts";

describe("SourceFile positions", () => {
  it("counts lines from 1, columns in grapheme clusters and bytes in UTF-8", () => {
    // "é" decomposed (2 code units, 3 bytes, 1 cluster); a flag (4 code units, 8 bytes, 1 cluster).
    const text = "ab\ne\u0301\u{1F1EB}\u{1F1F7}x\n";
    const src = new SourceFile("f.hcl", text);
    expect(src.pos(0)).toEqual({ line: 1, column: 1, byte: 0 });
    expect(src.pos(2)).toEqual({ line: 1, column: 3, byte: 2 }); // the newline itself
    expect(src.pos(3)).toEqual({ line: 2, column: 1, byte: 3 });
    expect(src.pos(5)).toEqual({ line: 2, column: 2, byte: 6 }); // after é
    expect(src.pos(9)).toEqual({ line: 2, column: 3, byte: 14 }); // after the flag
    expect(src.pos(10)).toEqual({ line: 2, column: 4, byte: 15 });
    expect(src.pos(text.length)).toEqual({ line: 3, column: 1, byte: 16 });
  });

  it("counts a tab as one column and CR of CRLF as a column of its line", () => {
    const src = new SourceFile("f.hcl", "\t\tx\r\ny");
    expect(src.pos(2)).toEqual({ line: 1, column: 3, byte: 2 });
    expect(src.pos(3)).toEqual({ line: 1, column: 4, byte: 3 });
    expect(src.pos(5)).toEqual({ line: 2, column: 1, byte: 5 });
  });

  it("skips a leading BOM for columns but not for bytes", () => {
    const src = new SourceFile("f.hcl", "\uFEFFab");
    expect(src.pos(0)).toEqual({ line: 1, column: 1, byte: 0 });
    expect(src.pos(1)).toEqual({ line: 1, column: 1, byte: 3 });
    expect(src.pos(2)).toEqual({ line: 1, column: 2, byte: 4 });
  });

  it("clamps out-of-range indices and builds ranges with the filename", () => {
    const src = new SourceFile("dir/f.hcl", "abc");
    expect(src.pos(99)).toEqual({ line: 1, column: 4, byte: 3 });
    expect(src.range(1, 2)).toEqual({
      filename: "dir/f.hcl",
      start: { line: 1, column: 2, byte: 1 },
      end: { line: 1, column: 3, byte: 2 },
    });
  });
});

describe("UTF-8", () => {
  it("measures UTF-8 lengths", () => {
    expect(utf8Length("a")).toBe(1);
    expect(utf8Length("é")).toBe(2);
    expect(utf8Length("€")).toBe(3);
    expect(utf8Length("😀")).toBe(4);
  });

  it("decodes valid bytes and locates the first invalid one", () => {
    expect(decodeUtf8(new TextEncoder().encode("héllo"))).toBe("héllo");
    const cases: Array<[number[], number]> = [
      [[0x61, 0xff], 1], // never valid
      [[0x61, 0xc0, 0x80], 1], // overlong
      [[0x61, 0xe0, 0x80, 0x80], 1], // overlong 3-byte
      [[0x61, 0xed, 0xa0, 0x80], 1], // surrogate
      [[0x61, 0xf4, 0x90, 0x80, 0x80], 1], // past U+10FFFF
      [[0x61, 0x62, 0xe2, 0x82], 2], // truncated
      [[0xc3, 0xa9, 0x80], 2], // stray continuation
    ];
    for (const [bytes, at] of cases) {
      const r = decodeUtf8(new Uint8Array(bytes));
      expect(typeof r, `bytes ${bytes}`).toBe("object");
      expect((r as { byte: number }).byte, `bytes ${bytes}`).toBe(at);
    }
  });

  it("keeps a BOM in decoded text so byte offsets stay true", () => {
    expect(decodeUtf8(new Uint8Array([0xef, 0xbb, 0xbf, 0x61]))).toBe("\uFEFFa");
  });

  it("finds lone surrogates", () => {
    expect(firstLoneSurrogate("a😀b")).toBe(-1);
    expect(firstLoneSurrogate("ab\uD800")).toBe(2);
    expect(firstLoneSurrogate("\uDC00")).toBe(0);
  });

  it("counts grapheme clusters within each token, as hcl/v2 does", () => {
    // A combining accent after a space: one cluster in running text, but the space is not part
    // of the invalid-character token that starts at the accent, so the accent is a column.
    const text = 'a = \u0301x"\n';
    const { diagnostics } = parseFile(text, "t.hcl");
    const first = diagnostics[0]!;
    expect(first.code).toBe("invalid-character");
    expect([first.subject.start.column, first.subject.end.column]).toEqual([5, 6]);
    const src = new SourceFile("t.hcl", "a \u0301b");
    expect(src.pos(3).column).toBe(3); // without token boundaries: " \u0301" is one cluster
    src.setBreaks([2, 3]);
    expect(src.pos(3).column).toBe(4);
  });
});
