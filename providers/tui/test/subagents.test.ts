// The session tree in the terminal UI (issue 20, point 7): running sub-agents stay in the
// live area with what they are doing, their turns and spend; their start and end go to the
// scrollback; a sub-agent's permission request says which sub-agent asks.
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { runTui } from "../src/app.ts";
import { FakeConnection, settle, tty } from "./helpers.ts";

const SID = "01JTESTSESSION0000000000000";
const CHILD = "01JTESTCHILD00000000000000";

function tree(over: Record<string, unknown>) {
  return {
    sessionId: SID,
    event: {
      case: "sessionTreeUpdate" as const,
      value: {
        parentSessionId: SID,
        childSessionId: CHILD,
        status: SessionStatus.RUNNING,
        profile: "explorer",
        depth: 1,
        title: "Read calc.js and report",
        activity: "",
        turns: 0,
        costUsd: 0,
        ...over,
      },
    },
  };
}

function start(conn: FakeConnection) {
  const { input, output } = tty();
  void runTui({ connection: conn, input, output, session: { kind: "create", prompt: "go" }, env: {} });
  conn.push({
    sessionId: SID,
    requestId: "create",
    event: {
      case: "sessionCreated" as const,
      value: { info: { sessionId: SID, profile: "default", status: SessionStatus.RUNNING } },
    },
  });
  return { input, output };
}

describe("sub-agents in the terminal UI", () => {
  it("shows a running child's progress live and its end in the scrollback", async () => {
    const conn = new FakeConnection();
    const { output } = start(conn);
    conn.push(
      tree({ activity: "starting" }),
      tree({ activity: "calling filesystem.read_file", turns: 1, costUsd: 0.0123 }),
    );
    await settle();
    const live = output.visible().join("\n");
    expect(live).toMatch(/sub-agent explorer started: Read calc\.js and report/);
    expect(live).toMatch(/↳ explorer · calling filesystem\.read_file · 1 turn · \$0\.01 · Read calc\.js/);
    conn.push(tree({ status: SessionStatus.COMPLETED, turns: 2, costUsd: 0.02 }));
    await settle();
    const after = output.visible().join("\n");
    expect(after).toMatch(/✓ sub-agent explorer completed · 2 turns · \$0\.02/);
    // No longer in the live area once it ended.
    expect(after).not.toMatch(/↳ explorer · /);
  });

  it("names the sub-agent that asks for a permission", async () => {
    const conn = new FakeConnection();
    const { output } = start(conn);
    conn.push({
      sessionId: SID,
      event: {
        case: "permissionRequest",
        value: {
          planItem: {
            id: "item-1",
            toolCallId: "call-1",
            provider: "filesystem",
            toolName: "write_file",
            input: { path: "a.txt", content: "x" },
            decision: PlanDecision.ASK,
            kind: ToolKind.RESOURCE,
            risk: RiskClass.MODERATE,
            description: "Write a file",
          },
          origin: { sessionId: CHILD, profile: "writer", depth: 1, parentSessionId: SID },
        },
      },
    });
    await settle();
    const screen = output.visible().join("\n");
    expect(screen).toContain("sub-agent writer asks:");
    expect(screen).toContain("Allow filesystem.write_file to write a.txt");
  });
});
