// The streaming clipper: a message under the limits comes out as the same JSON value, fed
// in any pieces; one over them comes out bounded, still valid JSON-RPC/MCP, with what was
// cut reported by path; what is not JSON is refused like JSON.parse refuses it. The remote
// transports' fetch clips JSON bodies and event streams the same way.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CLIP_KEY, clipJson, JsonClipper, parseClipped } from "../src/clip.ts";
import { clippingFetch } from "../src/http.ts";

const LIMITS = { maxString: 1024, maxTotal: 64 * 1024 };

function feed(text: string, cuts: number[], limits = LIMITS) {
  const c = new JsonClipper(limits);
  let at = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    c.write(text.slice(at, cut));
    at = Math.max(at, cut);
  }
  c.write(text.slice(at));
  const json = c.end();
  return { json, report: c.report };
}

const response = (result: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 7, result });

describe("JsonClipper", () => {
  it("gives back any small JSON value unchanged, however the text is split", () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.boolean(),
        (value, cuts, pretty) => {
          const text = JSON.stringify(value, null, pretty ? 2 : undefined);
          const r = feed(
            text,
            cuts.map((c) => c % (text.length + 1)),
          );
          expect(r.report.invalid).toBe(false);
          expect(JSON.parse(r.json!)).toEqual(JSON.parse(text));
          expect(r.report.cutStrings + r.report.droppedItems).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("refuses what JSON.parse refuses", () => {
    const bad = [
      "",
      "{",
      '{"a":}',
      "[1,]",
      '{"a" 1}',
      "nul",
      '"\\x"',
      "[1] 2",
      "{}}",
      '"abc',
      "01x",
      "[1 2]",
      "{'a':1}",
    ];
    for (const t of bad) {
      expect(() => JSON.parse(t), t).toThrow();
      expect(clipJson(t, LIMITS).json, t).toBeUndefined();
    }
    // Random strings, and valid JSON with one character dropped, doubled or replaced.
    const nearJson = fc
      .tuple(
        fc.jsonValue({ maxDepth: 3 }),
        fc.nat(),
        fc.constantFrom("drop", "double", "swap"),
        fc.string({ minLength: 1, maxLength: 1 }),
      )
      .map(([v, at, how, c]) => {
        const t = JSON.stringify(v);
        const i = at % Math.max(1, t.length);
        return how === "drop"
          ? t.slice(0, i) + t.slice(i + 1)
          : how === "double"
            ? t.slice(0, i) + t[i] + t.slice(i)
            : t.slice(0, i) + c + t.slice(i + 1);
      });
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 30 }), nearJson), (t) => {
        let ok = true;
        try {
          JSON.parse(t);
        } catch {
          ok = false;
        }
        const r = clipJson(t, LIMITS);
        const parsed = r.json === undefined ? undefined : parseClipped(r.json, r.report);
        if (!ok) expect(parsed).toBeUndefined();
        else expect(parsed).toEqual(JSON.parse(t));
      }),
      { numRuns: 3000 },
    );
  });

  it("cuts a 50 MiB text to the limit, fed in pipe-sized pieces, and reports its real length", () => {
    const text = `START${"a".repeat(50 * 1024 * 1024)}END`;
    const msg = response({ content: [{ type: "text", text }] });
    const c = new JsonClipper({ maxString: 1 << 20, maxTotal: 1 << 20 });
    for (let i = 0; i < msg.length; i += 65536) c.write(msg.slice(i, i + 65536));
    const json = c.end()!;
    expect(json.length).toBeLessThan((1 << 20) + 200);
    const parsed = parseClipped(json, c.report) as { id: number; result: Record<string, unknown> };
    expect(parsed.id).toBe(7);
    const block = (parsed.result["content"] as Array<{ type: string; text: string }>)[0]!;
    expect(block.type).toBe("text");
    expect(block.text.startsWith("STARTaaa")).toBe(true);
    expect(parsed.result[CLIP_KEY]).toEqual({
      cuts: [{ path: ["content", 0, "text"], length: text.length }],
      drops: [],
      dropped_chars: text.length - block.text.length,
    });
  });

  it("drops elements past the total, keeping each kept block whole and valid", () => {
    const blocks = Array.from({ length: 20_000 }, (_, i) => ({
      type: "text",
      text: `block ${i} ${"b".repeat(100)}`,
    }));
    const r = clipJson(response({ content: blocks, isError: false }), LIMITS);
    const parsed = parseClipped(r.json!, r.report) as { result: Record<string, unknown> };
    const kept = parsed.result["content"] as Array<{ type: string; text: string }>;
    expect(kept.length).toBeGreaterThan(100);
    expect(kept.length).toBeLessThan(1000);
    expect(kept.every((b, i) => b.type === "text" && b.text === blocks[i]!.text)).toBe(true);
    expect(parsed.result["isError"]).toBe(false);
    expect(parsed.result[CLIP_KEY]).toMatchObject({
      cuts: [],
      drops: [{ path: ["content"], count: 20_000 - kept.length }],
    });
    expect(r.json!.length).toBeLessThan(LIMITS.maxTotal + 1024);
  });

  it("cuts base64 data to whole groups and keeps the members after it", () => {
    const data = Buffer.alloc(3_000_001, 9).toString("base64");
    const r = clipJson(response({ content: [{ type: "image", data, mimeType: "image/png" }] }), LIMITS);
    const parsed = parseClipped(r.json!, r.report) as { result: Record<string, unknown> };
    const img = (parsed.result["content"] as Array<Record<string, string>>)[0]!;
    expect(img["mimeType"]).toBe("image/png");
    expect(img["data"]!.length % 4).toBe(0);
    expect(() => atob(img["data"]!)).not.toThrow();
    expect((parsed.result[CLIP_KEY] as { cuts: unknown[] }).cuts).toEqual([
      { path: ["content", 0, "data"], length: data.length },
    ]);
  });

  it("bounds a message of a hundred thousand members, keeping what JSON-RPC needs", () => {
    const wide: Record<string, string> = {};
    for (let i = 0; i < 100_000; i++) wide[`k${i}`] = "v".repeat(20);
    const text = `{"jsonrpc":"2.0","result":{"structuredContent":${JSON.stringify(wide)},"content":[]},"id":3}`;
    const r = clipJson(text, LIMITS);
    expect(r.json!.length).toBeLessThan(LIMITS.maxTotal + 300 * 1024);
    const parsed = parseClipped(r.json!, r.report) as Record<string, unknown>;
    expect(parsed["id"]).toBe(3);
    expect(parsed["jsonrpc"]).toBe("2.0");
    expect((parsed["result"] as Record<string, unknown>)["content"]).toEqual([]);
    expect(r.report.droppedItems).toBeGreaterThan(0);
  });

  it("never takes the bridge's report from the server, and limits depth, numbers and keys", () => {
    const spoof = clipJson(
      response({ content: [], [CLIP_KEY]: { cuts: [{ path: ["x"], length: 1 }] } }),
      LIMITS,
    );
    expect((parseClipped(spoof.json!, spoof.report) as { result: object }).result).toEqual({ content: [] });
    expect(clipJson(`${"[".repeat(100_000)}${"]".repeat(100_000)}`, LIMITS).json).toBeUndefined();
    const big = clipJson(`{"id":${"9".repeat(10_000)}}`, LIMITS);
    expect(JSON.parse(big.json!)).toEqual({ id: 0 });
    const key = clipJson(JSON.stringify({ ["k".repeat(100_000)]: 1 }), LIMITS);
    expect(Object.keys(JSON.parse(key.json!))[0]!.length).toBe(256);
  });

  it("counts an escape as one character and never cuts one in half", () => {
    const s = "\\u00e9\\n".repeat(2000);
    const r = clipJson(`{"text":"${s}"}`, { maxString: 1001, maxTotal: 64 * 1024 });
    const text = (JSON.parse(r.json!) as { text: string }).text;
    expect(text.length).toBe(1001);
    expect(text.startsWith("é\né\n")).toBe(true);
    expect(r.report.cuts).toEqual([{ path: ["text"], length: 4000 }]);
  });
});

/** A response whose body arrives in the given pieces (bytes split anywhere, even inside a character). */
function streamed(pieces: (string | Uint8Array)[], type: string): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of pieces) c.enqueue(typeof p === "string" ? enc.encode(p) : p);
      c.close();
    },
  });
  return new Response(body, { headers: { "content-type": type, "content-length": "123" } });
}

/** Splits text's UTF-8 bytes into pieces of `size` bytes. */
function bytePieces(text: string, size: number): Uint8Array[] {
  const b = new TextEncoder().encode(text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < b.length; i += size) out.push(b.subarray(i, i + size));
  return out;
}

describe("clippingFetch (the remote transports)", () => {
  const limits = { maxString: 4096, maxTotal: 16 * 1024 };
  const via = (res: Response) => clippingFetch(limits, async () => res)("http://x.test/mcp");

  it("clips a JSON body as it streams and reports the real length", async () => {
    const text = `é${"j".repeat(5_000_000)}`;
    const res = await via(
      streamed(
        bytePieces(response({ content: [{ type: "text", text }] }), 65_537),
        "application/json; charset=utf-8",
      ),
    );
    expect(res.headers.get("content-length")).toBeNull();
    const body = await res.text();
    expect(body.length).toBeLessThan(limits.maxTotal + 500);
    const parsed = JSON.parse(body) as { result: Record<string, unknown> };
    expect((parsed.result["content"] as Array<{ text: string }>)[0]!.text.startsWith("éjjj")).toBe(true);
    expect(parsed.result[CLIP_KEY]).toMatchObject({
      cuts: [{ path: ["content", 0, "text"], length: text.length }],
    });
  });

  it("clips each event of a stream, keeps its other fields, and passes non-JSON data as it was", async () => {
    const big = response({ content: [{ type: "text", text: `ü${"s".repeat(200_000)}` }] });
    const small = JSON.stringify({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progress: 1 },
    });
    const cut = small.indexOf(',"method"') + 1;
    const stream = [
      "event: endpoint\r\ndata: /messages?sessionId=abc\r\n\r\n",
      `: a comment\nid: 7\nevent: message\ndata: ${big}\n\n`,
      // One value over two data lines (split between tokens: the lines are joined by a newline).
      `data: ${small.slice(0, cut)}\ndata: ${small.slice(cut)}\n\n`,
      `data:${small}\n\n`,
    ].join("");
    for (const size of [1, 7, 4096]) {
      const res = await via(streamed(bytePieces(stream, size), "text/event-stream"));
      const events = (await res.text()).split("\n\n").filter((e) => e !== "");
      expect(events).toHaveLength(4);
      expect(events[0]).toBe("event: endpoint\ndata: /messages?sessionId=abc");
      const lines = events[1]!.split("\n");
      expect(lines.slice(0, 3)).toEqual([": a comment", "id: 7", "event: message"]);
      const msg = JSON.parse(lines[3]!.slice("data: ".length)) as {
        id: number;
        result: Record<string, unknown>;
      };
      expect(msg.id).toBe(7);
      expect(msg.result[CLIP_KEY]).toMatchObject({
        cuts: [{ path: ["content", 0, "text"], length: 200_001 }],
      });
      expect(events[1]!.length).toBeLessThan(limits.maxTotal + 500);
      expect(JSON.parse(events[2]!.slice("data: ".length))).toEqual(JSON.parse(small));
      expect(JSON.parse(events[3]!.slice("data: ".length))).toEqual(JSON.parse(small));
    }
  });

  it("passes other bodies (error pages) on, cut after the clip limit", async () => {
    const res = await via(streamed(["plain text"], "text/plain"));
    expect(await res.text()).toBe("plain text");
    const page = await via(streamed(bytePieces("<html>".repeat(100_000), 1000), "text/html"));
    expect((await page.text()).length).toBe(limits.maxTotal);
  });
});
