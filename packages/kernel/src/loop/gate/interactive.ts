// Step 9b for one interactive call: its question (the tool's Preview, else its description
// and arguments) goes to the attached human; the answer is the call's result.
import { create } from "@bufbuild/protobuf";
import { RenderTreeSchema, TextStyle } from "@pluggableharness/protocol/render";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import type { LoopDeps } from "../deps.ts";
import type { Session } from "../session.ts";
import { toolError } from "../tool-exec.ts";
import { type CallRecord, type CallResult, cancelledResult } from "./call.ts";
import { previewOf } from "./plan.ts";

export async function askInteractive(
  deps: LoopDeps,
  session: Session,
  turnId: string,
  c: CallRecord,
  signal: AbortSignal,
): Promise<CallResult> {
  const tool = c.tool!;
  const schema = tool.tool.schema;
  const prompt =
    (await previewOf(deps, session, turnId, tool, c, signal)) ??
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
  const answer = await session.humans.question(
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
    return {
      status: "denied",
      denied: true,
      outcome: { kind: "error", error: toolError(ToolErrorCategory.PERMISSION_DENIED, answer.reason) },
    };
  }
  return {
    status: "succeeded",
    denied: false,
    outcome: { kind: "result", payload: answer.payload },
    appliedArgs: c.args,
  };
}
