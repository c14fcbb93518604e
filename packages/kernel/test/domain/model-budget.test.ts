// The rules that keep oversized tool traffic out of model requests (domain/model-budget.ts):
// deterministic, idempotent, within budget, never splitting a character.
import { create, type JsonObject } from "@bufbuild/protobuf";
import { MessageSchema, Role } from "@pluggableharness/protocol/content";
import { describe, expect, it } from "vitest";
import {
  budgetToolInput,
  budgetToolInputs,
  DEFAULT_RESULT_BUDGET_BYTES,
  fitResultText,
  MAX_RESULT_BUDGET_BYTES,
  MIN_RESULT_BUDGET_BYTES,
  resultBudgetBytes,
  SHARED_RESULT_FLOOR_BYTES,
  TOOL_INPUT_BUDGET_BYTES,
} from "../../src/domain/index.ts";

const bytes = (v: unknown) => Buffer.byteLength(typeof v === "string" ? v : JSON.stringify(v), "utf8");

describe("tool inputs in later requests", () => {
  it("leaves an input within budget alone (the same object)", () => {
    const input = { path: "a.txt", content: "x".repeat(TOOL_INPUT_BUDGET_BYTES - 100) };
    expect(budgetToolInput(input)).toBe(input);
  });

  it("elides the largest strings first, the same way every time, and again changes nothing", () => {
    const input = { path: "a.txt", content: "c".repeat(200_000), note: "n".repeat(10_000), keep: "short" };
    const once = budgetToolInput(input);
    expect(bytes(once)).toBeLessThanOrEqual(TOOL_INPUT_BUDGET_BYTES);
    expect(once["path"]).toBe("a.txt");
    expect(once["keep"]).toBe("short");
    // Only what was needed: the 200 KB string goes, the 10 KB one stays.
    expect(once["note"]).toBe(input.note);
    expect(String(once["content"])).toMatch(/^c{1024}\n\[… 198976 more bytes of this value are left out/);
    expect(budgetToolInput(structuredClone(input))).toEqual(once);
    expect(budgetToolInput(once)).toBe(once);
  });

  it("reaches strings nested in arrays and objects", () => {
    const input = { edits: [{ old: "o".repeat(50_000), new: "n".repeat(60_000) }] };
    const out = budgetToolInput(input) as { edits: Array<{ old: string; new: string }> };
    expect(bytes(out)).toBeLessThanOrEqual(TOOL_INPUT_BUDGET_BYTES);
    expect(out.edits[0]!.new).toContain("left out of the conversation");
  });

  it("never splits a character at the cut", () => {
    const out = budgetToolInput({ content: "é😀".repeat(40_000) });
    expect(String(out["content"])).not.toContain("\uFFFD");
    expect(String(out["content"]).startsWith("é😀")).toBe(true);
  });

  it("replaces an input that strings alone cannot shrink (numbers, many small strings) with a note", () => {
    const inputs: JsonObject[] = [
      { values: Array.from({ length: 50_000 }, (_, i) => i) },
      { lines: Array.from({ length: 100 }, () => "s".repeat(2_000)) },
    ];
    for (const input of inputs) {
      const out = budgetToolInput(input);
      expect(Object.keys(out)).toEqual(["[agent]"]);
      expect(String(out["[agent]"])).toMatch(/input \(\d+ bytes of JSON\) is left out of the conversation/);
    }
  });

  it("keeps a message without oversized inputs as the same object", () => {
    const m = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: [{ block: { case: "toolUse", value: { id: "t1", name: "x", input: { a: 1 } } } }],
    });
    expect(budgetToolInputs(m)).toBe(m);
    const big = create(MessageSchema, {
      role: Role.ASSISTANT,
      content: [
        { block: { case: "text", value: { text: "writing" } } },
        { block: { case: "toolUse", value: { id: "t2", name: "x", input: { c: "z".repeat(100_000) } } } },
      ],
    });
    const out = budgetToolInputs(big);
    expect(out).not.toBe(big);
    expect(out.content[0]).toBe(big.content[0]);
    expect(bytes(out.content[1]!.block.value)).toBeLessThan(4_096);
    // The original is untouched: the session file keeps it whole.
    expect(JSON.stringify(big.content[1]!.block.value)).toContain("z".repeat(100_000));
  });
});

describe("tool results in requests", () => {
  it("are budgeted at a quarter of the window, within fixed bounds", () => {
    expect(resultBudgetBytes(undefined)).toBe(DEFAULT_RESULT_BUDGET_BYTES);
    expect(resultBudgetBytes(0n)).toBe(DEFAULT_RESULT_BUDGET_BYTES);
    expect(resultBudgetBytes(200_000n)).toBe(200_000);
    expect(resultBudgetBytes(1_000_000n)).toBe(MAX_RESULT_BUDGET_BYTES);
    expect(resultBudgetBytes(4_000n)).toBe(MIN_RESULT_BUDGET_BYTES);
  });

  it("are shared by the results of one message, each keeping a floor", () => {
    expect(resultBudgetBytes(200_000n, 1)).toBe(200_000);
    expect(resultBudgetBytes(200_000n, 4)).toBe(50_000);
    expect(resultBudgetBytes(undefined, 2)).toBe(DEFAULT_RESULT_BUDGET_BYTES / 2);
    expect(resultBudgetBytes(200_000n, 1_000)).toBe(SHARED_RESULT_FLOOR_BYTES);
    // Nonsense counts are one share.
    expect(resultBudgetBytes(200_000n, 0)).toBe(200_000);
    expect(resultBudgetBytes(200_000n, Number.NaN)).toBe(200_000);
  });

  it("keep a result that fits, and cut one that does not to its head and tail around a note", () => {
    expect(fitResultText("small", 100)).toBe("small");
    const text = `${"h".repeat(50_000)}${"m".repeat(50_000)}${"t".repeat(50_000)}`;
    const out = fitResultText(text, 30_000);
    expect(bytes(out)).toBeLessThanOrEqual(30_000);
    expect(out.startsWith("hhhh")).toBe(true);
    expect(out.endsWith("tttt")).toBe(true);
    expect(out).toMatch(/\[… \d+ of this result's 150000 bytes are left out here/);
    expect(fitResultText(text, 30_000)).toBe(out);
    const wide = fitResultText("😀".repeat(20_000), 10_000);
    expect(wide).not.toContain("\uFFFD");
    expect(bytes(wide)).toBeLessThanOrEqual(10_000);
  });
});
