// Step 9b for one interactive call: its question (the tool's Preview, else its description
// and arguments) goes to the attached human; the answer is the call's result.
import { create } from "@bufbuild/protobuf";
import { RenderTreeSchema, TextStyle } from "@pluggableharness/protocol/render";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import type { LoopDeps } from "../deps.ts";
import type { CallContext, HumanPort } from "../ports.ts";
import { toolError } from "../turn/tool-exec.ts";
import { type CallRecord, type CallResult, cancelledResult } from "./call.ts";
import { previewOf } from "./plan.ts";

/** What the model is told when its question cannot be answered (the documented headless rule). */
export const NO_ANSWER_RULE =
  "No answer will come: do not ask again. Go on with the most reasonable choice, and say in your final answer which assumption you made.";

export async function askInteractive(
  deps: LoopDeps,
  ctx: CallContext,
  humans: HumanPort,
  c: CallRecord,
): Promise<CallResult> {
  const { signal } = ctx;
  const tool = c.tool!;
  const schema = tool.tool.schema;
  const prompt =
    (await previewOf(deps, ctx, tool, c)) ??
    create(RenderTreeSchema, {
      root: {
        node: {
          case: "group",
          value: {
            children: [
              { node: { case: "text", value: { content: schema.description, style: TextStyle.BOLD } } },
              {
                node: {
                  case: "codeBlock",
                  value: { content: JSON.stringify(c.args, null, 2), language: "json" },
                },
              },
            ],
          },
        },
      },
    });
  const answer = await humans.question(
    c.block.id,
    {
      event: {
        case: "interactiveRequest",
        value: {
          callId: c.block.id,
          toolName: schema.name,
          prompt,
          provider: tool.provider.name,
          ...(schema.outputSchema ? { responseSchema: schema.outputSchema } : {}),
        },
      },
    },
    tool,
    signal,
  );
  if (answer.kind === "cancelled") return cancelledResult();
  if (answer.kind === "unanswered") {
    // Nobody refused anything: nobody is there. Not a denial (a headless run that asked once
    // must not exit 4 for it); the model is told to go on by its own judgement instead.
    // An operator who wants questions refused says so with a policy on the tool.
    return {
      status: "failed",
      denied: false,
      outcome: {
        kind: "error",
        error: toolError(ToolErrorCategory.EXECUTION_FAILED, `${answer.reason}. ${NO_ANSWER_RULE}`),
      },
    };
  }
  return {
    status: "succeeded",
    denied: false,
    outcome: { kind: "result", payload: answer.payload },
    appliedArgs: c.args,
  };
}
