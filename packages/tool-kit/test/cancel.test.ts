// What the ToolService adapter emits once the kernel cancels a call: never a result
// claiming success, only a partial_result marked cancelled, and the operation's report
// sent through the kernel's Log callback. Driven in-process, so every event the plugin
// produces after the cancel is visible (over gRPC the client no longer sees them).
import { create, type JsonObject } from "@bufbuild/protobuf";
import type { PluginContext } from "@pluggableharness/plugin-sdk";
import { InvokeRequestSchema, type InvokeResponse } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { s } from "../src/schema.ts";
import { type ToolDefinition, toolService } from "../src/tool.ts";

interface Logged {
  level: string;
  message: string;
  fields?: JsonObject;
}

function context(signal: AbortSignal, logged: Logged[]): PluginContext {
  const noop = () => {};
  const log = { name: "t", trace: noop, debug: noop, info: noop, warn: noop, error: noop, fatal: noop };
  return {
    signal,
    callContext: undefined,
    log: { ...log, named: () => log },
    kernel: {
      log: async (level: string, message: string, fields?: JsonObject) => {
        logged.push({ level, message, ...(fields ? { fields } : {}) });
      },
    },
  } as unknown as PluginContext;
}

const resource = (invoke: ToolDefinition["invoke"]): ToolDefinition => ({
  name: "mutate",
  kind: "resource",
  risk: "low",
  description: "changes something",
  input: s.object({}),
  output: s.object({ done: s.boolean() }, ["done"]),
  streaming: true,
  concurrency: { safe: false },
  idempotent: false,
  invoke,
});

async function run(tool: ToolDefinition, ac: AbortController, logged: Logged[]): Promise<InvokeResponse[]> {
  const impl = toolService({ tools: [tool] }).implementation as {
    invoke(req: unknown, ctx: PluginContext): AsyncGenerator<InvokeResponse>;
  };
  const req = create(InvokeRequestSchema, { call: { id: "call-7", toolName: tool.name, arguments: {} } });
  const out: InvokeResponse[] = [];
  for await (const res of impl.invoke(req, context(ac.signal, logged))) out.push(res);
  return out;
}

describe("cancellation in the tool adapter", () => {
  it("never sends a result claiming success after a cancelled operation, even when the work then completes", async () => {
    const ac = new AbortController();
    const logged: Logged[] = [];
    const events = await run(
      resource(async (_args, ctx) => {
        ctx.report({ step: "half written" });
        ac.abort();
        // The operation finishes anyway once the cancel has landed.
        return { done: true };
      }),
      ac,
      logged,
    );
    const cases = events.map((e) => e.event?.event.case);
    expect(cases).not.toContain("result");
    expect(cases).toEqual(["partialResult"]);
    const last = events.at(-1)!.event!.event;
    expect(last.case === "partialResult" && last.value.payload).toEqual({
      cancelled: true,
      step: "half written",
    });
    expect(logged).toEqual([
      {
        level: "warn",
        message: "tool call cancelled",
        fields: { call_id: "call-7", tool_name: "mutate", report: { step: "half written" } },
      },
    ]);
  });

  it("stops a streaming operation at the cancel: its cleanup runs and no result follows the chunks", async () => {
    const ac = new AbortController();
    const logged: Logged[] = [];
    let cleanedUp = false;
    const events = await run(
      resource(async function* (_args, ctx) {
        try {
          yield { event: { case: "outputChunk", value: { data: new TextEncoder().encode("one\n") } } };
          ctx.report({ chunks: 1 });
          ac.abort();
          yield { event: { case: "outputChunk", value: { data: new TextEncoder().encode("two\n") } } };
          return { done: true };
        } finally {
          cleanedUp = true;
        }
      }),
      ac,
      logged,
    );
    expect(cleanedUp).toBe(true);
    const cases = events.map((e) => e.event?.event.case);
    expect(cases).not.toContain("result");
    expect(cases[0]).toBe("outputChunk");
    expect(logged.map((l) => l.fields?.["report"])).toEqual([{ chunks: 1 }]);
  });
});
