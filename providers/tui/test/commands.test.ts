// Slash commands in the terminal UI: the registry's commands go to the kernel; an
// unknown one is answered on the spot with suggestions, and never leaves a spinner.
import { SessionStatus } from "@pluggableharness/protocol/session";
import { Dispatch } from "@pluggableharness/protocol/slashcommand";
import { describe, expect, it } from "vitest";
import { runTui, suggest } from "../src/app.ts";
import { FakeConnection, settle, tty } from "./helpers.ts";

const SID = "01JTESTSESSION0000000000000";

async function attached(registry = true) {
  const conn = new FakeConnection();
  const { input, output } = tty(80, 30);
  const run = runTui({
    connection: conn,
    input,
    output,
    session: { kind: "attach", sessionId: SID, fresh: true },
    env: {},
  });
  await conn.next("attachSession");
  conn.push(
    {
      sessionId: SID,
      requestId: "attach",
      event: {
        case: "sessionAttached",
        value: {
          info: { sessionId: SID, status: SessionStatus.RUNNING },
          ...(registry
            ? {
                slashCommandRegistry: {
                  commands: [
                    {
                      provider: "project",
                      spec: { name: "review", dispatch: Dispatch.PROMPT_EXPANSION, template: "Review {arg}" },
                    },
                    {
                      provider: "task",
                      spec: { name: "todos", dispatch: Dispatch.DIRECT_INVOKE, toolName: "list" },
                    },
                  ],
                },
              }
            : {}),
        },
      },
    },
    { sessionId: SID, requestId: "attach", event: { case: "backfillComplete", value: {} } },
  );
  await settle();
  return { conn, input, output, run };
}

describe("slash commands", () => {
  it("suggests close names for an unknown command, sends nothing and shows no spinner", async () => {
    const { conn, input, output, run } = await attached();
    input.type("/reveiw the diff\r");
    await settle();
    const screen = output.text();
    expect(screen).toContain("Unknown command /reveiw. Did you mean /review?");
    expect(screen).not.toContain("Thinking…");
    expect(conn.sent.some((e) => e.event?.case === "slashCommand")).toBe(false);
    input.type("/review the diff\r");
    const cmd = await conn.next("slashCommand");
    expect(cmd.event?.value).toMatchObject({ name: "review", args: "the diff" });
    input.type("\x04");
    await run;
  });

  it("a command the kernel refuses ends the spinner with the kernel's message", async () => {
    const { conn, input, output, run } = await attached(false);
    input.type("/nosuch\r");
    await conn.next("slashCommand");
    await settle();
    expect(output.visible().join("\n")).toContain("Running /nosuch…");
    conn.push({
      sessionId: SID,
      event: {
        case: "error",
        value: { error: { category: 2, message: "no slash command /nosuch is registered for this session" } },
      },
    });
    await settle();
    expect(output.text()).toContain("no slash command /nosuch is registered");
    expect(output.visible().join("\n")).not.toContain("Running /nosuch…");
    input.type("\x04");
    await run;
  });

  it("/cost shows the spend without a turn", async () => {
    const { conn, input, output, run } = await attached();
    input.type("/cost\r");
    await settle();
    expect(output.text()).toMatch(/Session cost \$0\.00 · 0 tokens in · 0 out/);
    expect(conn.sent.some((e) => e.event?.case === "slashCommand")).toBe(false);
    input.type("\x04");
    await run;
  });

  it("suggest() ranks by prefix and edit distance", () => {
    expect(suggest("hlep", ["help", "exit", "cost"])).toEqual(["help"]);
    expect(suggest("mod", ["model", "compact"])).toEqual(["model"]);
    expect(suggest("zzzz", ["help", "exit"])).toEqual([]);
  });
});
