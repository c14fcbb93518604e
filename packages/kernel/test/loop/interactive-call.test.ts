// One interactive call (loop/gate/interactive.ts): what the human is asked (the tool's
// Preview, else its description and arguments), with the answer's schema, and what each
// answer becomes. The human side (frontends, headless answers) is gate.test.ts's.
import { TextStyle } from "@pluggableharness/protocol/render";
import { ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import type { LoopDeps } from "../../src/loop/deps.ts";
import type { CallRecord } from "../../src/loop/gate/call.ts";
import { askInteractive, NO_ANSWER_RULE } from "../../src/loop/gate/interactive.ts";
import type { CallContext, HumanPort } from "../../src/loop/ports.ts";

const OUTPUT_SCHEMA = { type: "object", properties: { answer: { type: "string" } } };

type Answer =
  | { kind: "cancelled" }
  | { kind: "unanswered"; reason: string }
  | { kind: "answered"; payload: unknown };

function setup(answer: Answer, outputSchema: unknown = OUTPUT_SCHEMA) {
  const asked: Array<{
    callId: string;
    request: { event: { case: string; value: Record<string, unknown> } };
  }> = [];
  const tool = {
    provider: { name: "tools", previewSupported: new Set<string>() },
    tool: {
      schema: {
        name: "confirm",
        kind: ToolKind.INTERACTIVE,
        description: "Asks the user to confirm.",
        ...(outputSchema ? { outputSchema } : {}),
      },
    },
  };
  const humans = {
    question: async (callId: string, request: never) => {
      asked.push({ callId, request });
      return answer;
    },
  } as unknown as HumanPort;
  const ctx = { sessionId: "s1", turnId: "turn-1", signal: new AbortController().signal } as CallContext;
  const c = {
    index: 0,
    block: { id: "call-9", name: "tools__confirm" },
    tool,
    args: { question: "go on?", level: 2 },
    resultPersisted: false,
    hookable: true,
  } as unknown as CallRecord;
  const deps = {} as LoopDeps;
  return { asked, run: () => askInteractive(deps, ctx, humans, c) };
}

describe("an interactive call", () => {
  it("without a Preview asks with the tool's description and the arguments, and the answer's schema", async () => {
    const { asked, run } = setup({ kind: "answered", payload: { answer: "yes" } });
    const r = await run();
    expect(asked).toHaveLength(1);
    expect(asked[0]!.callId).toBe("call-9");
    const req = asked[0]!.request.event;
    expect(req.case).toBe("interactiveRequest");
    expect(req.value["callId"]).toBe("call-9");
    expect(req.value["toolName"]).toBe("confirm");
    expect(req.value["provider"]).toBe("tools");
    expect(req.value["responseSchema"]).toEqual(OUTPUT_SCHEMA);
    const prompt = req.value["prompt"] as { root: unknown };
    expect(prompt.root).toMatchObject({
      node: {
        case: "group",
        value: {
          children: [
            {
              node: { case: "text", value: { content: "Asks the user to confirm.", style: TextStyle.BOLD } },
            },
            {
              node: {
                case: "codeBlock",
                value: {
                  content: JSON.stringify({ question: "go on?", level: 2 }, null, 2),
                  language: "json",
                },
              },
            },
          ],
        },
      },
    });
    expect(r).toEqual({
      status: "succeeded",
      denied: false,
      outcome: { kind: "result", payload: { answer: "yes" } },
      appliedArgs: { question: "go on?", level: 2 },
    });
  });

  it("sends no response schema for a tool without one", async () => {
    const { asked, run } = setup({ kind: "answered", payload: {} }, null);
    await run();
    expect(asked[0]!.request.event.value).not.toHaveProperty("responseSchema");
  });

  it("an unanswered question is no denial: the model is told to go on; a cancelled one is cancelled", async () => {
    const unanswered = await setup({ kind: "unanswered", reason: "no one is attached to answer" }).run();
    expect(unanswered.status).toBe("failed");
    expect(unanswered.denied).toBe(false);
    expect(unanswered.outcome).toMatchObject({
      kind: "error",
      error: {
        category: ToolErrorCategory.EXECUTION_FAILED,
        message: `no one is attached to answer. ${NO_ANSWER_RULE}`,
      },
    });
    const cancelled = await setup({ kind: "cancelled" }).run();
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.denied).toBe(false);
    expect(cancelled.outcome).toMatchObject({
      kind: "error",
      error: { category: ToolErrorCategory.CANCELLED },
    });
  });
});
