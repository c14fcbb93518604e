import { describe, expect, it } from "vitest";
import { normalizeTurn, splitText } from "../src/normalize.ts";
import { Prng } from "../src/prng.ts";
import { goDuration, rfc3339 } from "../src/ratelimits.ts";
import { route } from "../src/router.ts";

describe("goDuration", () => {
  it("formats like Go's time.Duration", () => {
    expect([0, 0.12, 1, 1.5, 6, 360, 3725].map(goDuration)).toEqual([
      "0s",
      "120ms",
      "1s",
      "1.5s",
      "6s",
      "6m0s",
      "1h2m5s",
    ]);
  });
});

describe("rfc3339", () => {
  it("renders whole seconds with Z", () => {
    expect(rfc3339(Date.UTC(2025, 1, 24, 22, 25, 31, 200))).toBe("2025-02-24T22:25:32Z");
  });
});

describe("splitText", () => {
  it("splits into n non-empty pieces without breaking surrogate pairs", () => {
    expect(splitText("abcdef", 3)).toEqual(["ab", "cd", "ef"]);
    expect(splitText("ab", 5)).toEqual(["a", "b"]);
    expect(splitText("", 3)).toEqual([""]);
    expect(splitText("🚀🚀🚀", 3)).toEqual(["🚀", "🚀", "🚀"]);
  });
});

describe("normalizeTurn", () => {
  it("defaults the stop reason from the content and usage from the deltas", () => {
    const t = normalizeTurn({ kind: "tool_calls", calls: [{ name: "f", args: { a: 1 }, fragments: 3 }] });
    expect(t.stopReason).toBe("tool_use");
    expect(t.usage.outputTokens).toBe(3);
    expect(t.usage.inputTokens).toBe(10);
    const r = normalizeTurn({ kind: "turn", blocks: [], refusal: { explanation: "no" } });
    expect(r.stopReason).toBe("refusal");
  });

  it("uses a string args value verbatim as the argument JSON", () => {
    const t = normalizeTurn({ kind: "tool_calls", calls: [{ name: "f", args: '{"broken"', fragments: 2 }] });
    expect(t.blocks[0]).toMatchObject({ argsJson: '{"broken"', fragments: ['{"br', 'oken"'] });
  });
});

describe("Prng", () => {
  it("is deterministic per seed", () => {
    expect(new Prng(7).base62(20)).toBe(new Prng(7).base62(20));
    expect(new Prng(7).base62(20)).not.toBe(new Prng(8).base62(20));
  });
});

describe("route", () => {
  it("routes by suffix and vendor prefix", () => {
    expect(route("combined", "POST", "/mistral/v1/chat/completions", "openai-chat")).toMatchObject({
      vendor: "mistral",
      endpoint: "chat",
      path: "/v1/chat/completions",
    });
    expect(
      route("combined", "POST", "/v1beta/models/gemini-2.5-pro:generateContent", "openai-chat"),
    ).toMatchObject({ vendor: "gemini", endpoint: "gemini", pathModel: "gemini-2.5-pro" });
    expect(route("anthropic", "POST", "/v1/chat/completions", "openai-chat").endpoint).toBe("other");
    expect(route("xai", "POST", "/v1/responses", "openai-chat")).toMatchObject({
      vendor: "xai",
      endpoint: "responses",
    });
    expect(route("combined", "GET", "/v1/messages", "openai-chat").endpoint).toBe("other");
  });
});
