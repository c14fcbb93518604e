// What the model reads for each kind of call outcome (loop/gate/call.ts): a result's text,
// a denial, each error category with its presentation, output kept from a call that was
// cancelled or whose process crashed, and a result's images for a model with or without
// vision. The gate hands these blocks to the next request; gate.test.ts sees them there.
import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  OutputStream,
  ToolErrorCategory,
  ToolEvent_OutputChunkSchema,
} from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import {
  type CallRecord,
  type CallResult,
  cancelledResult,
  deniedResult,
  executedResult,
  failedResult,
  resultBlock,
  resultText,
} from "../../src/loop/gate/call.ts";
import { type ToolExecution, toolError } from "../../src/loop/turn/tool-exec.ts";

const PIXEL = Buffer.from("iVBORw0KGgo=", "base64");

function record(result: CallResult | undefined, schema: Record<string, unknown> | null = {}): CallRecord {
  return {
    index: 0,
    block: { id: "call-1", name: "tools__shot" } as CallRecord["block"],
    ...(schema
      ? {
          tool: {
            provider: { name: "tools" },
            tool: { schema: { name: "shot", kind: 2, idempotent: false, ...schema } },
          } as unknown as CallRecord["tool"],
        }
      : {}),
    args: {},
    ...(result ? { result } : {}),
    resultPersisted: false,
    hookable: true,
  };
}

function execution(
  outcome: ToolExecution["outcome"],
  output = "",
  extra: Partial<ToolExecution> = {},
): ToolExecution {
  return {
    outcome,
    output: output
      ? [
          create(ToolEvent_OutputChunkSchema, {
            stream: OutputStream.STDOUT,
            data: new TextEncoder().encode(output),
          }),
        ]
      : [],
    partials: [],
    attempts: 1,
    durationMs: 5,
    crashed: false,
    cancelled: false,
    ...extra,
  };
}

const failure = (
  category: ToolErrorCategory,
  message: string,
  output = "",
  extra: Partial<ToolExecution> = {},
) => executedResult(execution({ kind: "error", error: toolError(category, message) }, output, extra), {});

describe("what the model is told of a call", () => {
  it("a result is its text, not an error", () => {
    const r = executedResult(execution({ kind: "result", payload: { ok: true } as JsonObject }), {});
    expect(r.status).toBe("succeeded");
    expect(resultText(record(r), false)).toEqual({ content: '{"ok":true}', isError: false });
  });

  it("a denial says so and who decided, as an error", () => {
    const r = deniedResult("no_remove", 'denied by policy rule "no_remove"');
    expect(r).toMatchObject({ status: "denied", denied: true });
    expect(resultText(record(r), false)).toEqual({
      content: 'Denied: denied by policy rule "no_remove" (decided by no_remove)',
      isError: true,
    });
  });

  it("an error names its category; execution_failed is an ordinary result, others are errors", () => {
    expect(
      resultText(record(failure(ToolErrorCategory.EXECUTION_FAILED, "exit 1", "partial")), false),
    ).toEqual({
      content: "execution_failed: exit 1",
      isError: false,
    });
    expect(resultText(record(failure(ToolErrorCategory.NOT_FOUND, "no such file")), false)).toEqual({
      content: "not_found: no such file",
      isError: true,
    });
    expect(resultText(record(failedResult(toolError(99 as ToolErrorCategory, "odd"))), false)).toEqual({
      content: "unknown: odd",
      isError: true,
    });
    // Without its tool (a name the session does not serve) every error is an error result.
    expect(resultText(record(failure(ToolErrorCategory.EXECUTION_FAILED, "x"), null), false).isError).toBe(
      true,
    );
  });

  it("a cancelled call is no failure unless the turn is aborted, and keeps the output it printed", () => {
    const r = failure(ToolErrorCategory.CANCELLED, "stopped", "step 1\n", { cancelled: true });
    expect(r.status).toBe("cancelled");
    expect(resultText(record(r), false)).toEqual({
      content: "cancelled: stopped\nOutput before the call stopped:\nstep 1\n",
      isError: false,
    });
    expect(resultText(record(r), true)).toEqual({
      content: "cancelled: stopped\nOutput before the call stopped:\nstep 1\n",
      isError: true,
    });
    const never = cancelledResult();
    expect(never).toMatchObject({ status: "cancelled", denied: false });
    expect(resultText(record(never), true).content).toBe(
      "cancelled: the turn was interrupted before the call completed",
    );
  });

  it("a crashed call keeps its output; a failed one does not repeat it", () => {
    const crashed = failure(ToolErrorCategory.PROCESS_CRASHED, "the plugin died", "about to crash\n", {
      crashed: true,
    });
    expect(resultText(record(crashed), false)).toEqual({
      content: "process_crashed: the plugin died\nOutput before the call stopped:\nabout to crash\n",
      isError: true,
    });
    const failed = failure(ToolErrorCategory.TIMEOUT, "too slow", "half\n");
    expect(resultText(record(failed), false).content).toBe("timeout: too slow");
  });

  it("a result's images follow its text for a vision model, and become a note otherwise", () => {
    const payload = {
      path: "shot.png",
      images: [{ media_type: "image/png", data: PIXEL.toString("base64") }],
    };
    const r = executedResult(execution({ kind: "result", payload: payload as unknown as JsonObject }), {});
    const c = record(r, { modelImageField: "images" });

    const seen = resultBlock(c, false, { id: "vision-1", supportsVision: true });
    expect(seen.block.case).toBe("toolResult");
    const v = seen.block.value as {
      toolUseId: string;
      isError: boolean;
      content: { block: { case: string; value: Record<string, unknown> } }[];
    };
    expect(v.toolUseId).toBe("call-1");
    expect(v.isError).toBe(false);
    expect(v.content.map((b) => b.block.case)).toEqual(["text", "image"]);
    expect(v.content[1]!.block.value["mediaType"]).toBe("image/png");
    expect(v.content[1]!.block.value["source"]).toEqual({ case: "data", value: new Uint8Array(PIXEL) });

    const blind = resultBlock(c, false, { id: "text-only", supportsVision: false }).block.value as typeof v;
    expect(blind.content.map((b) => b.block.case)).toEqual(["text", "text"]);
    expect(blind.content[1]!.block.value["text"]).toContain("text-only does not take images");

    const plain = resultBlock(record(r), false, { id: "vision-1", supportsVision: true }).block
      .value as typeof v;
    expect(plain.content.map((b) => b.block.case)).toEqual(["text"]);

    const denied = resultBlock(record(deniedResult("x", "no"), { modelImageField: "images" }), false).block
      .value as typeof v;
    expect(denied.isError).toBe(true);
    expect(denied.content).toHaveLength(1);
  });
});
