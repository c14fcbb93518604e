// What the compactor keeps: the tail starts only where no tool call is left without its
// result, kept assistant messages stay whole (thinking and signatures byte for byte), the
// summarised part becomes plain text, and an oversized tail loses tool output, not pairs.
import { create } from "@bufbuild/protobuf";
import {
  type ContentBlock,
  ContentBlockSchema,
  type Message,
  MessageSchema,
  Role,
} from "@pluggableharness/protocol/content";
import { describe, expect, it } from "vitest";
import {
  chooseCut,
  chunks,
  cutPoints,
  messageTokens,
  rewrite,
  SUMMARY_HEADER,
  shortenTail,
  transcript,
} from "../src/plan.ts";

const block = (b: Parameters<typeof create<typeof ContentBlockSchema>>[1]): ContentBlock =>
  create(ContentBlockSchema, b);
const text = (t: string) => block({ block: { case: "text", value: { text: t } } });
const user = (...content: ContentBlock[]) => create(MessageSchema, { role: Role.USER, content, id: "u" });
const assistant = (...content: ContentBlock[]) =>
  create(MessageSchema, { role: Role.ASSISTANT, content, id: "a" });
const use = (id: string) =>
  block({ block: { case: "toolUse", value: { id, name: "read_file", input: { path: "a.txt" } } } });
const result = (id: string, out: string) =>
  block({ block: { case: "toolResult", value: { toolUseId: id, content: [text(out)], isError: false } } });
const thinking = (t: string, signature: string) =>
  block({ block: { case: "thinking", value: { text: t, signature: new TextEncoder().encode(signature) } } });

/** prompt, then n rounds of (signed thinking + call, result). */
function loop(n: number, out = "x".repeat(400)): Message[] {
  const h: Message[] = [user(text("Fix the bug."))];
  for (let i = 0; i < n; i++) {
    h.push(assistant(thinking(`round ${i}`, `sig-${i}`), use(`c${i}`)));
    h.push(user(result(`c${i}`, out)));
  }
  return h;
}

describe("the cut", () => {
  it("never falls on a message of tool results, nor at the very start", () => {
    const h = loop(5);
    for (const p of cutPoints(h)) {
      expect(p).toBeGreaterThan(0);
      expect(h[p]!.content.some((b) => b.block.case === "toolResult")).toBe(false);
    }
    expect(cutPoints(h)).toEqual([1, 3, 5, 7, 9]);
  });

  it("keeps the longest tail that fits, and the newest round when none fits", () => {
    const h = loop(10);
    const round = messageTokens(h[1]!) + messageTokens(h[2]!);
    expect(chooseCut(h, round * 3)).toBe(h.length - 6);
    expect(chooseCut(h, 1)).toBe(h.length - 2);
    // The kernel's count above the estimate shrinks what fits.
    expect(chooseCut(h, round * 3, 2)).toBe(h.length - 2);
    expect(chooseCut([user(text("only"))], 100)).toBeUndefined();
  });
});

describe("the rewrite", () => {
  it("puts the summary first and keeps every kept message as it was", () => {
    const h = loop(6);
    const cut = chooseCut(h, 300)!;
    const out = rewrite("They fixed it.", h.slice(cut), "s1");
    expect(out[0]!.role).toBe(Role.USER);
    expect(out[0]!.content[0]!.block.value).toMatchObject({ text: `${SUMMARY_HEADER}\n\nThey fixed it.` });
    expect(out.slice(1)).toEqual(h.slice(cut));
    // Signed thinking stays on its assistant message, right before its results.
    const kept = out[1]!;
    const signed = kept.content[0]!.block;
    expect(signed.case).toBe("thinking");
    expect(new TextDecoder().decode(signed.case === "thinking" ? signed.value.signature : undefined)).toMatch(
      /^sig-/,
    );
    expect(out[2]!.content[0]!.block.case).toBe("toolResult");
  });

  it("merges the summary into a tail that starts with a prompt", () => {
    const h = [...loop(2), user(text("Now add a test."))];
    const out = rewrite("S", h.slice(5), "s2");
    expect(out).toHaveLength(1);
    expect(out[0]!.content.map((b) => b.block.case)).toEqual(["text", "text"]);
    expect(out[0]!.content[1]!.block.value).toMatchObject({ text: "Now add a test." });
  });

  it("shortens an oversized tail by clipping tool output only", () => {
    const h = loop(1, "line\n".repeat(4000)).slice(1);
    const before = messageTokens(h[0]!) + messageTokens(h[1]!);
    const short = shortenTail(h, 500);
    const after = short.reduce((n, m) => n + messageTokens(m), 0);
    expect(after).toBeLessThan(before);
    expect(after).toBeLessThanOrEqual(600);
    expect(short[0]).toEqual(h[0]); // the assistant message (thinking, signature, call) untouched
    expect(short[1]!.content[0]!.block).toMatchObject({ case: "toolResult", value: { toolUseId: "c0" } });
  });
});

describe("the transcript", () => {
  it("is plain text without reasoning, with long output clipped, split at paragraphs", () => {
    const t = transcript(loop(2, "y".repeat(5000)), 1000);
    expect(t).toContain("User:\nFix the bug.");
    expect(t).toContain("[tool call read_file");
    expect(t).toContain("characters left out");
    expect(t).not.toContain("round 0");
    const parts = chunks(t, 1500);
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((p) => p.length <= 1500)).toBe(true);
  });
});
