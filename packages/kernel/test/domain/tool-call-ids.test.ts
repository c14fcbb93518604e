import { create } from "@bufbuild/protobuf";
import { type Message, MessageSchema, Role } from "@pluggableharness/protocol/content";
import { describe, expect, it } from "vitest";
import { withVendorToolCallIds } from "../../src/domain/tool-call-ids.ts";

const use = (id: string, vendorId = "") => ({
  block: { case: "toolUse" as const, value: { id, name: "read", input: {}, vendorId } },
});
const result = (toolUseId: string) => ({
  block: { case: "toolResult" as const, value: { toolUseId, content: [], isError: false } },
});
const text = (t: string) => ({ block: { case: "text" as const, value: { text: t } } });
const msg = (role: Role, ...content: unknown[]): Message =>
  create(MessageSchema, { role, content: content as never, id: `m${Math.random()}` });

const ids = (messages: Message[]) =>
  messages.flatMap((m) =>
    m.content.flatMap((b) =>
      b.block.case === "toolUse"
        ? [`use ${b.block.value.id}${b.block.value.vendorId ? ` (${b.block.value.vendorId})` : ""}`]
        : b.block.case === "toolResult"
          ? [`result ${b.block.value.toolUseId}`]
          : [],
    ),
  );

describe("withVendorToolCallIds", () => {
  it("gives each tool_use and the tool_result answering it the vendor's id back", () => {
    const history = [
      msg(Role.USER, text("go")),
      msg(Role.ASSISTANT, use("K1", "toolu_1"), use("K2", "call_2")),
      msg(Role.USER, result("K2"), result("K1"), text("and?")),
    ];
    const sent = withVendorToolCallIds(history);
    expect(ids(sent)).toEqual(["use toolu_1", "use call_2", "result call_2", "result toolu_1"]);
    // nothing changed in place, and a message without tool blocks is passed as it is
    expect(ids(history)).toEqual(["use K1 (toolu_1)", "use K2 (call_2)", "result K2", "result K1"]);
    expect(sent[0]).toBe(history[0]);
    expect(sent[2]!.content[2]).toBe(history[2]!.content[2]);
    expect(sent.map((m) => m.id)).toEqual(history.map((m) => m.id));
  });

  it("leaves calls without a vendor_id (sessions from before kernel ids, kernel-made calls) as they are", () => {
    const old = [
      msg(Role.ASSISTANT, use("toolu_old")),
      msg(Role.USER, result("toolu_old")),
      msg(Role.ASSISTANT, use("K9", "toolu_new")),
      msg(Role.USER, result("K9"), result("unknown")),
    ];
    const sent = withVendorToolCallIds(old);
    expect(ids(sent)).toEqual([
      "use toolu_old",
      "result toolu_old",
      "use toolu_new",
      "result toolu_new",
      "result unknown",
    ]);
    expect(sent[0]).toBe(old[0]);
    expect(sent[1]).toBe(old[1]);
    expect(withVendorToolCallIds(old.slice(0, 2))).toEqual(old.slice(0, 2));
  });
});
