import { ClientDecision, StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { PlanDecision, PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { DiffLineOp, Region } from "@pluggableharness/protocol/render";
import { SchemaType } from "@pluggableharness/protocol/schema";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { RiskClass, ToolKind } from "@pluggableharness/protocol/tool";
import { describe, expect, it } from "vitest";
import { runTui } from "../src/app.ts";
import { FakeConnection, FakeInput, PlainOutput, settle, tty } from "./helpers.ts";

const SID = "01JTESTSESSION0000000000000";

function created() {
  return {
    sessionId: SID,
    requestId: "create",
    event: {
      case: "sessionCreated" as const,
      value: { info: { sessionId: SID, profile: "default", status: SessionStatus.RUNNING } },
    },
  };
}

const editItem = {
  id: "item-1",
  toolCallId: "call-1",
  provider: "filesystem",
  toolName: "edit_file",
  input: { path: "a.txt", old_str: "1", new_str: "2" },
  decision: PlanDecision.ASK,
  kind: ToolKind.RESOURCE,
  risk: RiskClass.MODERATE,
  description: "Replace text in a file",
  rememberScope: 'filesystem.edit_file on "a.txt"',
  preview: {
    root: {
      node: {
        case: "diff" as const,
        value: {
          hunks: [
            {
              oldStart: 1,
              oldLines: 1,
              newStart: 1,
              newLines: 1,
              lines: [
                { op: DiffLineOp.REMOVE, text: "value = 1" },
                { op: DiffLineOp.ADD, text: "value = 2" },
              ],
            },
          ],
        },
      },
    },
  },
};

function delta(text: string, kind = StreamDeltaKind.TEXT, targetId = "msg-1") {
  return { sessionId: SID, event: { case: "streamDelta" as const, value: { targetId, text, kind } } };
}

function status(s: SessionStatus, previous = SessionStatus.RUNNING, detail = "") {
  return {
    sessionId: SID,
    event: { case: "sessionStatusUpdate" as const, value: { status: s, previousStatus: previous, detail } },
  };
}

describe("terminal UI on a TTY", () => {
  it("creates a session with the prompt, streams text live and commits it at the end of the turn", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "hello there", profile: "p1" },
      model: "fake/m1",
      env: {},
    });
    const create = await conn.next("createSession");
    expect(create.event?.value).toMatchObject({
      profile: "p1",
      initialPrompt: [{ block: { case: "text", value: { text: "hello there" } } }],
    });
    expect(input.raw).toBe(true);
    conn.push(created(), delta("Hel"), delta("lo, wor"));
    await settle();
    expect(output.text()).toContain("Hello, wor");
    const bytesBefore = output.bytes();
    conn.push(delta("ld!"));
    await settle();
    // A token redraws one row, not the region.
    expect(output.bytes() - bytesBefore).toBeLessThan(120);
    conn.push(
      {
        sessionId: SID,
        event: {
          case: "usageUpdate",
          value: {
            providerName: "fake",
            modelId: "m2",
            inputTokens: 1200n,
            outputTokens: 34n,
            sessionCostUsd: 0.0123,
            contextTokens: 12_000n,
            contextCeiling: 200_000n,
          },
        },
      },
      status(SessionStatus.COMPLETED),
    );
    await settle();
    const screen = output.text();
    expect(screen).toContain("Hello, world!");
    expect(screen).toContain("✓ done");
    // The widgets provider's status format: model · context · cost.
    expect(screen).toMatch(/fake\/m2 · context 12k\/200k \(6%\) · \$0\.01/);
    input.type("\x03");
    await settle();
    expect(output.text()).toContain("Press Ctrl-C again to exit");
    input.type("\x03");
    const result = await run;
    expect(result).toEqual({ sessionId: SID, status: SessionStatus.COMPLETED });
    expect(conn.closed).toBe(true);
    expect(input.raw).toBe(false);
  });

  it("shows a permission request with risk and preview diff, and answers with scope session", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "edit it" },
      env: {},
    });
    conn.push(
      created(),
      delta("I'll edit a.txt."),
      {
        sessionId: SID,
        event: {
          case: "planReady",
          value: { plan: { turnId: "t1", items: [{ ...editItem, decision: PlanDecision.PENDING }] } },
        },
      },
      { sessionId: SID, event: { case: "permissionRequest", value: { planItem: editItem } } },
    );
    await settle();
    const screen = output.text();
    // One line of what happens and its risk; no tool description, no raw JSON.
    expect(screen).toContain("Allow filesystem.edit_file to edit a.txt · risk moderate");
    expect(screen).not.toContain("Replace text in a file");
    expect(screen).not.toContain('"old_str"');
    expect(screen).toContain("-value = 1");
    expect(screen).toContain("+value = 2");
    expect(screen).toContain('y this call · s filesystem.edit_file on "a.txt" for this session · A always');
    input.type("s");
    const decision = await conn.next("planDecision");
    expect(decision).toMatchObject({
      sessionId: SID,
      event: {
        value: { planItemId: "item-1", decision: ClientDecision.ALLOW, scope: PlanDecisionScope.SESSION },
      },
    });
    await settle();
    expect(output.visible().join("\n")).not.toContain("Allow filesystem.edit_file");
    expect(output.text()).toContain("filesystem.edit_file allowed for this session");
    input.type("\x03\x03");
    await run;
  });

  it("edits arguments as JSON and sends them as corrected input", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "x" },
      env: {},
    });
    conn.push(created(), {
      sessionId: SID,
      event: { case: "permissionRequest", value: { planItem: editItem } },
    });
    await settle();
    input.type("e");
    await settle();
    expect(output.text()).toContain('{"path":"a.txt","old_str":"1","new_str":"2"}');
    // Replace the whole line with a corrected object.
    input.type("\x15");
    input.type('{"path":"b.txt","old_str":"1","new_str":"3"}');
    input.type("\r");
    const decision = await conn.next("planDecision");
    expect(decision.event?.value).toMatchObject({
      decision: ClientDecision.ALLOW,
      scope: PlanDecisionScope.ONCE,
      correctedInput: { path: "b.txt", old_str: "1", new_str: "3" },
    });
    input.type("\x03\x03");
    await run;
  });

  it("Esc interrupts the running turn", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "long job" },
      env: {},
    });
    conn.push(created(), delta("working", StreamDeltaKind.TOOL_OUTPUT, "call-9"));
    await settle();
    expect(output.text()).toContain("│ working");
    input.type("\x1b");
    const ev = await conn.next("interrupt");
    expect(ev.sessionId).toBe(SID);
    conn.push(status(SessionStatus.CANCELLED));
    await settle();
    expect(output.text()).toContain("■ interrupted");
    input.type("\x03\x03");
    expect((await run).status).toBe(SessionStatus.CANCELLED);
  });

  it("shows thinking collapsed, and Ctrl-O expands it", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "q" },
      env: {},
    });
    conn.push(created(), delta("step one\nstep two\nstep three", StreamDeltaKind.THINKING, "th-1"));
    await settle();
    expect(output.text()).toContain("Thinking… (3 lines)");
    expect(output.text()).not.toContain("step two");
    conn.push(delta("Answer.", StreamDeltaKind.TEXT, "msg-2"));
    await settle();
    expect(output.text()).toContain("▸ Thought for 3 lines");
    expect(output.text()).not.toContain("step two");
    input.type("\x0f");
    await settle();
    expect(output.text()).toContain("step two");
    input.type("\x03\x03");
    await run;
  });

  it("asks an interactive question in the overlay and sends the typed answer", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "q" },
      env: {},
    });
    conn.push(created(), {
      sessionId: SID,
      event: {
        case: "interactiveRequest",
        value: {
          callId: "ask-1",
          toolName: "ask_user",
          provider: "user",
          prompt: { root: { node: { case: "text", value: { content: "Which color?" } } } },
          responseSchema: {
            type: SchemaType.OBJECT,
            properties: [{ name: "reply", schema: { type: SchemaType.STRING } }],
            required: ["reply"],
          },
        },
      },
    });
    await settle();
    expect(output.text()).toContain("Question from user.ask_user");
    expect(output.text()).toContain("Which color?");
    input.type("blue\r");
    const ev = await conn.next("interactiveResponse");
    expect(ev.event?.value).toMatchObject({ callId: "ask-1", response: { reply: "blue" } });
    input.type("\x03\x03");
    await run;
  });

  it("sends typed messages and shows rate-limit warnings and errors", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({ connection: conn, input, output, session: { kind: "create" }, env: {} });
    conn.push(created());
    await settle();
    input.type("second question\r");
    const msg = await conn.next("userMessage");
    expect(msg.event?.value).toMatchObject({
      content: [{ block: { case: "text", value: { text: "second question" } } }],
    });
    conn.push(
      {
        sessionId: SID,
        event: {
          case: "render",
          value: {
            content: {
              region: Region.TOP_BAR,
              replace: true,
              content: {
                root: { node: { case: "text", value: { content: "rate limited, retrying in 2s" } } },
              },
            },
          },
        },
      },
      {
        sessionId: SID,
        event: { case: "error", value: { error: { category: 9, message: "session is replay-only" } } },
      },
    );
    await settle();
    expect(output.text()).toContain("⚠ rate limited, retrying in 2s");
    expect(output.text()).toContain("✗ session_replay_only: session is replay-only");
    input.type("\x04");
    await run;
  });

  it("attaches to a session made for it and sends the first message once attached", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "resume", sessionId: SID, fresh: true, prompt: "first task" },
      env: {},
    });
    await conn.next("resumeSession");
    expect(conn.sent.some((e) => e.event?.case === "userMessage")).toBe(false);
    conn.push(
      {
        sessionId: SID,
        requestId: "resume",
        event: {
          case: "sessionAttached",
          value: { info: { sessionId: SID, profile: "default", status: SessionStatus.RUNNING } },
        },
      },
      {
        sessionId: SID,
        requestId: "resume",
        event: { case: "backfillComplete", value: { lastSequence: 0n } },
      },
    );
    const msg = await conn.next("userMessage");
    expect(msg).toMatchObject({
      sessionId: SID,
      event: { value: { content: [{ block: { value: { text: "first task" } } }] } },
    });
    await settle();
    expect(output.text()).toContain(`Session ${SID} · profile default`);
    expect(output.text()).not.toContain("end of history");
    input.type("\x03\x03");
    await run;
  });

  it("resumes a session, painting the backfilled renders", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "resume", sessionId: SID },
      env: {},
    });
    const ev = await conn.next("resumeSession");
    expect(ev.event?.value).toMatchObject({ sessionId: SID });
    conn.push(
      {
        sessionId: SID,
        requestId: "resume",
        event: {
          case: "sessionAttached",
          value: { info: { sessionId: SID, status: SessionStatus.COMPLETED } },
        },
      },
      {
        sessionId: SID,
        event: {
          case: "render",
          value: {
            content: {
              region: Region.MAIN_CHAT,
              content: { root: { node: { case: "text", value: { content: "an earlier answer" } } } },
            },
          },
        },
      },
      {
        sessionId: SID,
        requestId: "resume",
        event: { case: "backfillComplete", value: { lastSequence: 7n } },
      },
    );
    await settle();
    expect(output.text()).toContain("an earlier answer");
    expect(output.text()).toContain("end of history");
    conn.close();
    expect((await run).sessionId).toBe(SID);
  });
});

describe("terminal UI after a rewind", () => {
  it("follows session_rewound to the fork: detach, resume, the prompt back in the editor", async () => {
    const FORK = "01JTESTFORK00000000000000000";
    const conn = new FakeConnection();
    const { input, output } = tty(100, 30);
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "resume", sessionId: SID },
      env: {},
    });
    await conn.next("resumeSession");
    const attached = (id: string) => ({
      sessionId: id,
      requestId: "resume",
      event: {
        case: "sessionAttached" as const,
        value: { info: { sessionId: id, status: SessionStatus.COMPLETED } },
      },
    });
    const backfilled = (id: string) => ({
      sessionId: id,
      requestId: "resume",
      event: { case: "backfillComplete" as const, value: { lastSequence: 1n } },
    });
    conn.push(attached(SID), backfilled(SID), {
      sessionId: SID,
      event: {
        case: "sessionRewound",
        value: { forkSessionId: FORK, promptText: "second: change a", anchorMessageId: "M2" },
      },
    });
    const detach = await conn.next("detachSession");
    expect(detach.event?.value).toMatchObject({ sessionId: SID });
    const resume = await conn.next("resumeSession");
    expect(resume.event?.value).toMatchObject({ sessionId: FORK });
    conn.push(
      attached(FORK),
      // A late event of the session it left is not shown.
      {
        sessionId: SID,
        event: {
          case: "render",
          value: {
            content: { content: { root: { node: { case: "text", value: { content: "late old" } } } } },
          },
        },
      },
      backfilled(FORK),
    );
    await settle();
    const shown = output.text();
    expect(shown).toContain(`Rewound: continuing in ${FORK}.`);
    expect(shown).toContain(`Session ${FORK}`);
    expect(shown).not.toContain("late old");
    expect(shown).toContain("› second: change a");
    // Enter sends the prompt to the fork.
    input.type("\r");
    const msg = await conn.next("userMessage");
    expect(msg).toMatchObject({
      sessionId: FORK,
      event: { value: { content: [{ block: { value: { text: "second: change a" } } }] } },
    });
    conn.close();
    expect((await run).sessionId).toBe(FORK);
  });
});

describe("terminal UI without a TTY", () => {
  it("prints plain text and answers prompts from input lines", async () => {
    const conn = new FakeConnection();
    const input = new FakeInput(false);
    const output = new PlainOutput();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "go" },
      env: {},
    });
    await conn.next("createSession");
    input.type("s\n");
    conn.push(created(), delta("Editing now."), {
      sessionId: SID,
      event: { case: "permissionRequest", value: { planItem: editItem } },
    });
    const decision = await conn.next("planDecision");
    expect(decision.event?.value).toMatchObject({
      scope: PlanDecisionScope.SESSION,
      decision: ClientDecision.ALLOW,
    });
    conn.push(status(SessionStatus.COMPLETED));
    input.emit("end");
    const result = await run;
    expect(result.status).toBe(SessionStatus.COMPLETED);
    expect(output.text).toContain("Editing now.");
    expect(output.text).toContain("Allow filesystem.edit_file to edit a.txt · risk moderate");
    expect(output.text).toContain("+value = 2");
    // No escape sequences at all when not on a terminal.
    expect(output.text).not.toContain("\x1b");
  });

  it("denies a pending permission when input has ended, instead of hanging", async () => {
    const conn = new FakeConnection();
    const input = new FakeInput(false);
    const output = new PlainOutput();
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create", prompt: "go" },
      env: {},
    });
    input.emit("end");
    conn.push(created(), {
      sessionId: SID,
      event: { case: "permissionRequest", value: { planItem: editItem } },
    });
    const decision = await conn.next("planDecision");
    expect(decision.event?.value).toMatchObject({ decision: ClientDecision.DENY });
    conn.push(status(SessionStatus.COMPLETED));
    await run;
  });
});
