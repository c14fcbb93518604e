import { create } from "@bufbuild/protobuf";
import {
  type ContentBlock,
  ContentBlockSchema,
  MessageSchema,
  Role,
} from "@pluggableharness/protocol/content";
import type { ToolSchema } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { checkDone, TurnDoneTracker } from "../../src/domain/done.ts";
import { resource, tool } from "./fixtures.ts";

const schemas = new Map<string, ToolSchema>([
  ["read_file", tool()],
  ["write_file", resource()],
  ["finish", resource({ name: "finish", terminatesTurn: true })],
]);
const resolve = (name: string) => schemas.get(name);

function assistant(...blocks: ({ text: string } | { use: string; id: string })[]) {
  return create(MessageSchema, {
    role: Role.ASSISTANT,
    content: blocks.map(
      (b): ContentBlock =>
        "text" in b
          ? create(ContentBlockSchema, { block: { case: "text", value: { text: b.text } } })
          : create(ContentBlockSchema, {
              block: { case: "toolUse", value: { id: b.id, name: b.use, input: {} } },
            }),
    ),
  });
}

describe("done detection", () => {
  it("a message without tool_use blocks ends the loop", () => {
    const check = checkDone(assistant({ text: "all done" }), resolve);
    expect(check.kind).toBe("done_no_tool_calls");
    expect(new TurnDoneTracker(check).done).toBe(true);
  });

  it("a message with tool_use blocks continues the loop", () => {
    const check = checkDone(assistant({ use: "read_file", id: "1" }), resolve);
    expect(check).toMatchObject({ kind: "continue", terminatingCallIds: [] });
    const t = new TurnDoneTracker(check);
    expect(t.postToolCallFired("1")).toBe(false);
  });

  it("a terminates_turn call ends the loop right after its post-tool-call hook, even with other calls in the message", () => {
    const check = checkDone(
      assistant({ use: "read_file", id: "1" }, { use: "finish", id: "2" }, { use: "write_file", id: "3" }),
      resolve,
    );
    expect(check).toMatchObject({ kind: "continue", terminatingCallIds: ["2"] });
    const t = new TurnDoneTracker(check);
    expect(t.postToolCallFired("1")).toBe(false);
    expect(t.postToolCallFired("2")).toBe(true);
    expect(t.done).toBe(true);
  });

  it("a terminates_turn call ends the loop whatever its outcome, once its hook fired", () => {
    const check = checkDone(assistant({ use: "finish", id: "9" }, { use: "read_file", id: "8" }), resolve);
    const t = new TurnDoneTracker(check);
    expect(t.done).toBe(false);
    expect(t.postToolCallFired("8")).toBe(false);
    expect(t.postToolCallFired("9")).toBe(true);
  });

  it("a call to a tool no provider declares never terminates the turn", () => {
    const check = checkDone(assistant({ use: "nosuch", id: "1" }), () => undefined);
    expect(check).toEqual({
      kind: "continue",
      toolUses: [{ id: "1", name: "nosuch" }],
      terminatingCallIds: [],
    });
  });

  it("terminates_turn is honoured only on a resource", () => {
    const odd = new Map<string, ToolSchema>([["peek", tool({ name: "peek", terminatesTurn: true })]]);
    const check = checkDone(assistant({ use: "peek", id: "1" }), (n) => odd.get(n));
    expect(check).toMatchObject({ terminatingCallIds: [] });
  });
});
