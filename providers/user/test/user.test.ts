// ask_user over the real plugin boundary: declared interactive, its Preview is the
// prompt the frontend shows, Invoke refuses to pretend there is a human, Render shows
// the answer.
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { ToolCallEventSchema, ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let h: ToolHarness;

beforeAll(() => {
  h = new ToolHarness({ executable: MAIN, name: "user" });
});
afterAll(() => h.close());

describe("ask_user", () => {
  it("is interactive and read-only, without a ConcurrencySpec", async () => {
    const [tool] = (await h.client.getSchema({})).tools;
    expect(tool).toMatchObject({
      name: "ask_user",
      kind: ToolKind.INTERACTIVE,
      risk: RiskClass.READ_ONLY,
      streaming: false,
    });
    expect(tool!.concurrency).toBeUndefined();
    expect(tool!.outputSchema?.required).toEqual(["answer"]);
  });

  it("previews the question and its options as the prompt", async () => {
    const root = await h.preview("ask_user", {
      question: "Which database?",
      header: "Storage",
      options: [{ label: "SQLite", description: "one file" }, { label: "Postgres" }],
      allow_free_text: false,
    });
    const children = root?.node.case === "group" ? root.node.value.children : [];
    const texts = JSON.stringify(children);
    expect(texts).toContain("Which database?");
    expect(texts).toContain("SQLite");
    expect(texts).toContain("Postgres");
    expect(texts).toContain("Pick one of the options.");
    expect(children.some((c) => c.node.case === "list" && c.node.value.ordered)).toBe(true);
  });

  it("rejects malformed questions", async () => {
    await expect(h.preview("ask_user", { question: "" })).rejects.toMatchObject({ code: 3 });
    const dup = await h.invoke("ask_user", { question: "?", options: [{ label: "a" }, { label: "a" }] });
    expect(dup.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
  });

  it("does not answer through Invoke: the question is routed to the frontend by the kernel", async () => {
    const res = await h.invoke("ask_user", { question: "Proceed?" });
    expect(res.events).toHaveLength(1);
    expect(res.error).toMatchObject({ category: ToolErrorCategory.EXECUTION_FAILED, retryable: false });
    expect(res.error?.details).toEqual({ reason: "interactive_only" });
  });

  it("renders the question and the recorded answer", async () => {
    const call = await h.client.render({
      kind: "tool_call",
      schemaVersion: "1",
      payload: toBinary(
        ToolCallEventSchema,
        create(ToolCallEventSchema, { call: { toolName: "ask_user", arguments: { question: "Proceed?" } } }),
      ),
    });
    expect(call.tree?.root?.node).toMatchObject({ case: "text", value: { content: "Asked: Proceed?" } });
    const result = await h.client.render({
      kind: "tool_result",
      schemaVersion: "1",
      payload: toBinary(
        ToolResultEventSchema,
        create(ToolResultEventSchema, {
          toolName: "ask_user",
          outcome: { case: "result", value: { payload: { answer: "yes" } } },
        }),
      ),
    });
    expect(JSON.stringify(result.tree)).toContain("yes");
    const unknownVersion = await h.client.render({
      kind: "tool_result",
      schemaVersion: "9",
      payload: new Uint8Array(),
    });
    expect(unknownVersion.tree).toBeUndefined();
  });

  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks over the %s transport",
    async (isolation) => {
      const report = await runConformance({
        isolation,
        executable: MAIN,
        samples: [{ tool: "ask_user", arguments: { question: "Proceed?" }, expect: "execution_failed" }],
      });
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      expect(report.exitCode).toBe(0);
      expect(report.isolation).toBe(isolation);
    },
  );
});
