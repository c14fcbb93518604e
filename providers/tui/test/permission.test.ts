import { create } from "@bufbuild/protobuf";
import { ClientDecision } from "@pluggableharness/protocol/frontend";
import { PlanDecision, PlanDecisionScope, PlanItemSchema } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { runTui } from "../src/app.ts";
import { permissionAction } from "../src/permission.ts";
import { FakeConnection, settle, tty } from "./helpers.ts";

const SID = "01JTESTSESSION0000000000000";
const item = (toolName: string, input: Record<string, unknown>) =>
  create(PlanItemSchema, { id: "i", provider: "p", toolName, input: input as never });

describe("the permission prompt", () => {
  it("says in one line what the call will do", () => {
    expect(permissionAction(item("bash", { command: "npm test -- --watch=false" }))).toBe(
      "run npm test -- --watch=false",
    );
    expect(permissionAction(item("edit_file", { path: "src/a.ts", old_str: "x", new_str: "y" }))).toBe(
      "edit src/a.ts",
    );
    expect(permissionAction(item("write_file", { path: "notes.md", content: "…" }))).toBe("write notes.md");
    expect(permissionAction(item("fetch", { url: "https://example.com/x" }))).toBe(
      "fetch https://example.com/x",
    );
    expect(permissionAction(item("bash", { command: "echo a\necho b" }))).toBe("run echo a ⏎ echo b");
    expect(permissionAction(item("frob", { level: 3 }))).toBe('call frob with {"level":3}');
  });

  it("r denies with the operator's reason, which goes to the kernel", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty(100, 30);
    const run = runTui({ connection: conn, input, output, session: { kind: "create" }, env: {} });
    await conn.next("createSession");
    conn.push(
      {
        sessionId: SID,
        requestId: "create",
        event: { case: "sessionCreated", value: { info: { sessionId: SID, status: SessionStatus.RUNNING } } },
      },
      {
        sessionId: SID,
        event: {
          case: "permissionRequest",
          value: {
            planItem: {
              id: "item-9",
              toolCallId: "c9",
              provider: "exec",
              toolName: "bash",
              input: { command: "rm -r build" },
              decision: PlanDecision.ASK,
              kind: ToolKind.RESOURCE,
              risk: RiskClass.HIGH,
              rememberScope: "exec.bash running exactly `rm -r build`",
            },
          },
        },
      },
    );
    await settle();
    expect(output.visible().join("\n")).toContain("Allow exec.bash to run rm -r build · risk high");
    input.type("r");
    await settle();
    expect(output.visible().join("\n")).toContain("Why not? The model reads this.");
    input.type("the build dir is shared; use make clean\r");
    const d = await conn.next("planDecision");
    expect(d.event?.value).toMatchObject({
      planItemId: "item-9",
      decision: ClientDecision.DENY,
      scope: PlanDecisionScope.ONCE,
      reason: "the build dir is shared; use make clean",
    });
    await settle();
    expect(output.text()).toContain("exec.bash denied: the build dir is shared; use make clean");
    input.type("\x03\x03");
    await run;
  });
});
