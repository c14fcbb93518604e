// Which tool output the kernel masks (loop/secret-output.ts): everything a provider sends
// when its configuration holds a withheld value — result, error, output chunks, partial
// results — and nothing of a provider given none (its output is the user's own data).
import { create, type JsonObject } from "@bufbuild/protobuf";
import { SecretMask } from "@pluggableharness/config";
import {
  ToolErrorCategory,
  ToolErrorSchema,
  ToolEvent_OutputChunkSchema,
  ToolEvent_PartialResultSchema,
} from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { maskChunk, maskOutcome, maskPartial, outputMask } from "../../src/loop/secret-output.ts";
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
    expect(new TextDecoder().decode(maskChunk(mask, chunk).data)).toBe("out [redacted]\n");
    const plain = create(ToolEvent_OutputChunkSchema, { data: new TextEncoder().encode("nothing\n") });
    expect(maskChunk(mask, plain)).toBe(plain);
    const partial = create(ToolEvent_PartialResultSchema, { payload: { hits: [encodeURIComponent(PLAIN)] } });
    expect(maskPartial(mask, partial).payload).toEqual({ hits: ["[redacted]"] });
  });
});
