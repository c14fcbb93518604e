import { isMemorySlug, MEMORY_ID_MAX, memorySlug } from "@pluggableharness/plugin-sdk";
import { describe, expect, it } from "vitest";

describe("memory record ids", () => {
  it("slugs text to kebab case, folding accents and trimming dashes", () => {
    expect(memorySlug("Operator role!")).toBe("operator-role");
    expect(memorySlug("  Café  Über--Größe ")).toBe("cafe-uber-gro-e");
    expect(memorySlug("!!!")).toBe("memory");
  });

  it("caps a slug at the id limit without a trailing dash", () => {
    const s = memorySlug(`${"a".repeat(MEMORY_ID_MAX - 1)} b`);
    expect(s.length).toBeLessThanOrEqual(MEMORY_ID_MAX);
    expect(s.endsWith("-")).toBe(false);
  });

  it("recognises ids already in slug form", () => {
    expect(isMemorySlug("operator-role")).toBe(true);
    expect(isMemorySlug("Operator")).toBe(false);
    expect(isMemorySlug("a--b")).toBe(false);
    expect(isMemorySlug("a".repeat(MEMORY_ID_MAX + 1))).toBe(false);
  });
});
