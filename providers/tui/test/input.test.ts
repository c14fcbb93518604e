// The prompt box on a TTY: multi-line entries, pasted text kept verbatim, escape
// sequences split across reads, history search — as ClientEvents the kernel receives.
import { StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { describe, expect, it } from "vitest";
import { runTui } from "../src/app.ts";
import { FakeConnection, settle, tty } from "./helpers.ts";

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

async function idleUi(columns = 80) {
  const conn = new FakeConnection();
  const { input, output } = tty(columns, 30);
  const run = runTui({ connection: conn, input, output, session: { kind: "create" }, env: {} });
  await conn.next("createSession");
  conn.push(created());
  await settle();
  return { conn, input, output, run };
}

function messageText(e: { event?: { value?: unknown } }): string {
  const v = e.event?.value as { content: { block: { value: { text: string } } }[] };
  return v.content.map((b) => b.block.value.text).join("");
}

describe("the prompt box", () => {
  it("Alt-Enter, Shift-Enter (kitty and modifyOtherKeys), Ctrl-J and \\+Enter make newlines; Enter sends", async () => {
    const { conn, input, output, run } = await idleUi();
    input.type("one");
    input.type("\x1b\r");
    input.type("two\x1b[13;2uthree\x1b[27;2;13~four\nfive\\");
    input.type("\r");
    input.type("six");
    await settle();
    // Still being edited, every line on screen under the prompt.
    expect(conn.sent.some((e) => e.event?.case === "userMessage")).toBe(false);
    const shown = output.visible().join("\n");
    expect(shown).toContain("› one\n  two\n  three\n  four\n  five\n  six");
    input.type("\r");
    expect(messageText(await conn.next("userMessage"))).toBe("one\ntwo\nthree\nfour\nfive\nsix");
    input.type("\x03\x03");
    await run;
  });

  it("a bracketed paste of three lines arrives verbatim and does not send on its newlines", async () => {
    const { conn, input, run } = await idleUi();
    input.type("\x1b[200~first line\r\n  second\tline\nthird");
    input.type(" line\x1b[201~");
    await settle();
    expect(conn.sent.some((e) => e.event?.case === "userMessage")).toBe(false);
    input.type("\r");
    expect(messageText(await conn.next("userMessage"))).toBe("first line\n  second\tline\nthird line");
    input.type("\x03\x03");
    await run;
  });

  it("an arrow key split across reads during a turn moves the cursor and does not interrupt", async () => {
    const { conn, input, output, run } = await idleUi();
    input.type("hello\r");
    await conn.next("userMessage");
    conn.push({
      sessionId: SID,
      event: { case: "streamDelta", value: { targetId: "m", text: "…", kind: StreamDeltaKind.TEXT } },
    });
    await settle();
    input.type("ab");
    input.type("\x1b");
    // The rest in a later read (the next turn of the event loop): a fixed 10 ms wait could
    // outlast the Escape timeout on a loaded machine.
    await new Promise((r) => setImmediate(r));
    input.type("[D");
    input.type("X");
    // Well past the Escape timeout: nothing was read as Escape.
    await new Promise((r) => setTimeout(r, 150));
    expect(conn.sent.some((e) => e.event?.case === "interrupt")).toBe(false);
    expect(output.visible().join("\n")).toContain("› aXb");
    // A lone Escape still interrupts.
    input.type("\x1b");
    const ev = await conn.next("interrupt");
    expect(ev.sessionId).toBe(SID);
    input.type("\x03\x03");
    await run;
  });

  it("Ctrl-R finds an earlier entry and Enter takes it into the editor", async () => {
    const conn = new FakeConnection();
    const { input, output } = tty(80, 30);
    const saved: string[] = [];
    const run = runTui({
      connection: conn,
      input,
      output,
      session: { kind: "create" },
      env: {},
      history: { entries: ["explain the build", "run the tests"], append: (l) => saved.push(l) },
    });
    await conn.next("createSession");
    conn.push(created());
    await settle();
    input.type("\x12build");
    await settle();
    expect(output.visible().join("\n")).toContain("(history search) build");
    input.type("\r");
    await settle();
    expect(output.visible().join("\n")).toContain("› explain the build");
    input.type(" again\r");
    expect(messageText(await conn.next("userMessage"))).toBe("explain the build again");
    expect(saved).toEqual(["explain the build again"]);
    input.type("\x03\x03");
    await run;
  });
});
