import { create } from "@bufbuild/protobuf";
import { ContentBlockSchema } from "@pluggableharness/protocol/content";
import { describe, expect, it } from "vitest";
import { fallbackTokenCount, fallbackTokenCountOfBlocks } from "../../src/domain/tokens.ts";

describe("the CountTokens fallback heuristic", () => {
  it("counts ceil(utf8 bytes / 4) and is marked inexact", () => {
    expect(fallbackTokenCount("")).toEqual({ count: 0, exact: false });
    expect(fallbackTokenCount("abcd").count).toBe(1);
    expect(fallbackTokenCount("abcde").count).toBe(2);
  });

  it("counts UTF-8 bytes, not characters", () => {
    expect(fallbackTokenCount("é").count).toBe(1); // 2 bytes
    expect(fallbackTokenCount("日本語").count).toBe(3); // 9 bytes
    expect(fallbackTokenCount("🙂🙂").count).toBe(2); // 8 bytes
  });

  it("is not content-type aware: code and prose of equal bytes count the same", () => {
    expect(fallbackTokenCount("if (x) { y(); }").count).toBe(fallbackTokenCount("the cat sat down").count);
  });

  it("sums the text of all blocks before dividing, and non-text blocks count nothing", () => {
    const blocks = [
      create(ContentBlockSchema, { block: { case: "text", value: { text: "abc" } } }),
      create(ContentBlockSchema, { block: { case: "image", value: { mediaType: "image/png" } } }),
      // Thinking carries a text field too, but it is not a text block.
      create(ContentBlockSchema, { block: { case: "thinking", value: { text: "a long chain of thought" } } }),
      create(ContentBlockSchema, { block: { case: "text", value: { text: "abc" } } }),
    ];
    expect(fallbackTokenCountOfBlocks(blocks)).toEqual({ count: 2, exact: false });
  });
});
