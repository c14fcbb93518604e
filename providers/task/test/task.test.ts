// The task list over the real plugin boundary: per-session lists, updates, filters,
// classification and rendering.
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { ToolResultEventSchema } from "@pluggableharness/protocol/event";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
let h: ToolHarness;

beforeAll(() => {
  h = new ToolHarness({ executable: MAIN, name: "task" });
});
afterAll(() => h.close());

const inSession = (sessionId: string) => (tool: string, args: Record<string, unknown>) =>
  h.invoke(tool, args as never, { sessionId });

describe("task provider", () => {
  it("declares create/update as low-risk resources and list as a data source", async () => {
    const tools = Object.fromEntries((await h.client.getSchema({})).tools.map((t) => [t.name, t]));
    expect(tools["task_create"]).toMatchObject({
      kind: ToolKind.RESOURCE,
      risk: RiskClass.LOW,
      idempotent: false,
    });
    expect(tools["task_update"]).toMatchObject({
      kind: ToolKind.RESOURCE,
      risk: RiskClass.LOW,
      idempotent: true,
    });
    expect(tools["task_update"]!.concurrency).toMatchObject({ safe: true, keyFields: ["id"] });
    expect(tools["task_list"]).toMatchObject({ kind: ToolKind.DATA_SOURCE, risk: RiskClass.READ_ONLY });
  });

  it("keeps one list per session and returns the whole list on every change", async () => {
    const a = inSession("session-a");
    const b = inSession("session-b");
    const created = await a("task_create", {
      tasks: [{ title: "read code" }, { title: "fix bug", description: "in x.ts" }],
    });
    expect(created.result).toEqual({
      tasks: [
        { id: "t1", title: "read code", description: "", status: "pending" },
        { id: "t2", title: "fix bug", description: "in x.ts", status: "pending" },
      ],
      changed: ["t1", "t2"],
    });
    const updated = await a("task_update", { id: "t1", status: "completed" });
    expect(updated.result!["changed"]).toEqual(["t1"]);
    expect((updated.result!["tasks"] as { status: string }[]).map((t) => t.status)).toEqual([
      "completed",
      "pending",
    ]);
    expect((await b("task_list", {})).result).toEqual({ tasks: [], changed: [] });
    const pending = await a("task_list", { status: "pending" });
    expect((pending.result!["tasks"] as { id: string }[]).map((t) => t.id)).toEqual(["t2"]);
  });

  it("classifies bad calls", async () => {
    const a = inSession("session-c");
    expect((await a("task_update", { id: "t9", status: "completed" })).error?.category).toBe(
      ToolErrorCategory.NOT_FOUND,
    );
    expect((await a("task_create", { tasks: [] })).error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect((await a("task_create", { tasks: [{ title: "x", status: "someday" }] })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
    await a("task_create", { tasks: [{ title: "x" }] });
    expect((await a("task_update", { id: "t1" })).error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    const noSession = await h.invoke("task_list", {}, { sessionId: "" });
    expect(noSession.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
  });

  it("renders the list as a checklist", async () => {
    const res = await h.client.render({
      kind: "tool_result",
      schemaVersion: "1",
      payload: toBinary(
        ToolResultEventSchema,
        create(ToolResultEventSchema, {
          toolName: "task_list",
          outcome: {
            case: "result",
            value: {
              payload: {
                tasks: [
                  { id: "t1", title: "a", description: "", status: "completed" },
                  { id: "t2", title: "b", description: "", status: "in_progress" },
                ],
                changed: [],
              },
            },
          },
        }),
      ),
    });
    const node = res.tree?.root?.node;
    expect(node?.case).toBe("collapsible");
    expect(node?.case === "collapsible" && node.value.summary).toBe("Tasks: 1/2 done");
    expect(JSON.stringify(node)).toContain("[x] a");
    expect(JSON.stringify(node)).toContain("[~] b");
  });

  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks over the %s transport",
    async (isolation) => {
      const report = await runConformance({
        isolation,
        executable: MAIN,
        samples: [
          { tool: "task_create", arguments: { tasks: [{ title: "one" }] }, expect: "result" },
          { tool: "task_update", arguments: { id: "t1", status: "in_progress" }, expect: "result" },
          { tool: "task_update", arguments: { id: "t42", status: "completed" }, expect: "not_found" },
          { tool: "task_list", arguments: {}, expect: "result" },
        ],
      });
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      expect(report.exitCode).toBe(0);
      expect(report.isolation).toBe(isolation);
    },
  );
});
