// Which tool output the kernel masks (loop/turn/secret-output.ts): everything a provider sends
// when its configuration holds a withheld value — result, error, output chunks, partial
// results — and nothing of a provider given none (its output is the user's own data).
import { create, type JsonObject } from "@bufbuild/protobuf";
import { SecretMask } from "@pluggableharness/config";
import {
  OutputStream,
  ToolErrorCategory,
  ToolErrorSchema,
  ToolEvent_OutputChunkSchema,
  ToolEvent_PartialResultSchema,
} from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { ChunkMasker, maskOutcome, maskPartial, outputMask } from "../../src/loop/turn/secret-output.ts";
import type { LoadedProvider } from "../../src/plugins/providers.ts";

const PLAIN = "Zq7vK2pW9xR4mT8n";
const mask = new SecretMask([PLAIN, "another-withheld-value"]);
const provider = (config: JsonObject) => ({ config }) as unknown as LoadedProvider;
const b64 = Buffer.from(`x:${PLAIN}:y`).toString("base64");

describe("tool output masking", () => {
  it("applies to a provider whose configuration holds a withheld value, wherever it sits", () => {
    expect(outputMask(mask, provider({ env: { PLAIN } }))).toBe(mask);
    expect(outputMask(mask, provider({ headers: { Authorization: `Bearer ${PLAIN}` } }))).toBe(mask);
    expect(outputMask(mask, provider({ roots: ["/project"], max_read_bytes: 1 }))).toBeUndefined();
    expect(outputMask(new SecretMask([]), provider({ env: { PLAIN } }))).toBeUndefined();
  });

  it("masks the result payload and the error, keeping what holds no secret as it was", () => {
    const payload = { text: `token ${b64}`, content: [{ type: "text", text: PLAIN }], n: 3 };
    const masked = maskOutcome(mask, { kind: "result", payload } as const);
    expect(JSON.stringify(masked)).not.toContain(PLAIN);
    expect(JSON.stringify(masked)).not.toContain(b64.slice(4, 20));
    expect((masked.payload as { n: number }).n).toBe(3);
    const clean = { kind: "result", payload: { text: "nothing here" } } as const;
    expect(maskOutcome(mask, clean)).toBe(clean);

    const error = create(ToolErrorSchema, {
      category: ToolErrorCategory.EXECUTION_FAILED,
      message: `failed: ${[...PLAIN].reverse().join("")}`,
      details: { raw: Buffer.from(PLAIN).toString("hex") },
    });
    const e = maskOutcome(mask, { kind: "error", error } as const);
    expect(e.error.message).toBe("failed: [redacted]");
    expect(e.error.details).toEqual({ raw: "[redacted]" });
    expect(e.error.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    // The original is not changed.
    expect(error.message).toContain("failed: n8Tm");
  });

  it("masks output chunks and partial results", () => {
    const chunk = create(ToolEvent_OutputChunkSchema, { data: new TextEncoder().encode(`out ${PLAIN}\n`) });
    expect(streamed([chunk]).get(OutputStream.UNSPECIFIED)).toBe("out [redacted]\n");
    const partial = create(ToolEvent_PartialResultSchema, { payload: { hits: [encodeURIComponent(PLAIN)] } });
    expect(maskPartial(mask, partial).payload).toEqual({ hits: ["[redacted]"] });
  });

  it("masks a value split over two chunks, at every split point, in any form", () => {
    const long = "x".repeat(300);
    for (const form of [PLAIN, b64, Buffer.from(PLAIN).toString("hex"), `é${PLAIN}é`]) {
      const whole = Buffer.from(`${long} before ${form} after ${long}`);
      for (let at = 1; at < whole.length; at += 7) {
        const out = streamed([chunkOf(whole.subarray(0, at)), chunkOf(whole.subarray(at))]);
        const text = out.get(OutputStream.STDOUT)!;
        expect(text, `${form} split at ${at}`).not.toContain(PLAIN.slice(0, 8));
        expect(text, `${form} split at ${at}`).not.toContain(form.slice(2, 12));
        expect(text).toContain(" before ");
        expect(text).toContain(" after ");
        expect(text.startsWith(long)).toBe(true);
        expect(text.endsWith(long)).toBe(true);
      }
    }
  });

  it("passes output on as it comes, holds back only a short tail per stream, and loses nothing", () => {
    const m = new ChunkMasker(mask);
    const first = m.push(chunkOf(Buffer.from("a".repeat(1000))));
    expect(first).toBeDefined();
    const passed = first!.data.length;
    // Most of it at once; what is held is about as long as the longest form.
    expect(passed).toBeGreaterThan(1000 - mask.longest - 10);
    expect(passed).toBeLessThan(1000);
    // Another stream is held apart; a value split between two streams is two harmless halves.
    expect(m.push(chunkOf(Buffer.from("err"), OutputStream.STDERR))).toBeUndefined();
    const rest = m.flush();
    expect(rest.map((c) => [c.stream, c.data.length])).toEqual([
      [OutputStream.STDOUT, 1000 - passed],
      [OutputStream.STDERR, 3],
    ]);
    // A UTF-8 character split over two chunks comes out whole.
    const utf8 = Buffer.from("ÜÜÜ");
    expect(streamed([chunkOf(utf8.subarray(0, 3)), chunkOf(utf8.subarray(3))]).get(OutputStream.STDOUT)).toBe(
      "ÜÜÜ",
    );
  });
});

function chunkOf(data: Uint8Array, stream = OutputStream.STDOUT) {
  return create(ToolEvent_OutputChunkSchema, { stream, data });
}

/** The text each stream passes on, chunks pushed in order then flushed. */
function streamed(chunks: ReturnType<typeof chunkOf>[]): Map<OutputStream, string> {
  const m = new ChunkMasker(mask);
  const out = new Map<OutputStream, string>();
  const decoder = new TextDecoder();
  const add = (c: ReturnType<typeof chunkOf>) =>
    out.set(c.stream, (out.get(c.stream) ?? "") + decoder.decode(c.data));
  for (const c of chunks) {
    const passed = m.push(c);
    if (passed) add(passed);
  }
  for (const c of m.flush()) add(c);
  return out;
}
