// A streamed answer on a TTY: markdown rendered while it streams, finished blocks in
// the scrollback once, the final message render not repeating them.

import { StreamDeltaKind } from "@pluggableharness/protocol/frontend";
import { Region, TextStyle } from "@pluggableharness/protocol/render";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { describe, expect, it } from "vitest";
import { runTui } from "../src/app.ts";
import { FakeConnection, settle, tty } from "./helpers.ts";

const SID = "01JTESTSESSION0000000000000";
const ANSWER =
  "## Summary\n\nThe tests **pass** now; the failing one compared widths of 你好 wrongly and words were split mid-word before.\n\n| File | Lines |\n|---|---:|\n| style.ts | 120 |\n| app.ts | 990 |\n\n```js\nconst ok = true;\n```\n\nThat is all.";

async function streamAt(columns: number) {
  const conn = new FakeConnection();
  const { input, output } = tty(columns, 40);
  const run = runTui({ connection: conn, input, output, session: { kind: "create", prompt: "go" }, env: {} });
  await conn.next("createSession");
  conn.push({
    sessionId: SID,
    requestId: "create",
    event: { case: "sessionCreated", value: { info: { sessionId: SID, status: SessionStatus.RUNNING } } },
  });
  const seenLive: string[] = [];
  for (let i = 0; i < ANSWER.length; i += 9) {
    conn.push({
      sessionId: SID,
      event: {
        case: "streamDelta",
        value: { targetId: "m1", text: ANSWER.slice(i, i + 9), kind: StreamDeltaKind.TEXT },
      },
    });
    await settle(2);
    seenLive.push(output.visible().join("\n"));
  }
  conn.push(
    {
      sessionId: SID,
      event: {
        case: "render",
        value: {
          content: {
            region: Region.MAIN_CHAT,
            content: {
              root: {
                node: {
                  case: "group",
                  value: {
                    children: [
                      { node: { case: "text", value: { content: "Assistant", style: TextStyle.BOLD } } },
                      { node: { case: "text", value: { content: ANSWER } } },
                    ],
                  },
                },
              },
            },
          },
        },
      },
    },
    {
      sessionId: SID,
      event: {
        case: "sessionStatusUpdate",
        value: { status: SessionStatus.RUNNING, previousStatus: SessionStatus.RUNNING },
      },
    },
  );
  await settle();
  const text = output.text();
  input.type("\x03\x03");
  await run;
  return { text, seenLive, output };
}

describe("a streamed markdown answer", () => {
  for (const columns of [60, 120]) {
    it(`renders headings, a table and a code block, wrapped at ${columns} columns, once`, async () => {
      const { text, seenLive } = await streamAt(columns);
      const rows = text.split("\n");
      // The emulator pads a wide character with a blank cell, so a row's cells are its characters.
      for (const r of rows) expect([...r].length, r).toBeLessThan(columns);
      expect(rows.filter((r) => r === "Summary")).toHaveLength(1);
      expect(text).not.toContain("## Summary");
      expect(text).not.toContain("|---|");
      expect(rows.filter((r) => /^│ style\.ts +│ +120 │$/.test(r))).toHaveLength(1);
      expect(rows.filter((r) => r === "const ok = true;")).toHaveLength(1);
      expect(rows.filter((r) => r === "That is all.")).toHaveLength(1);
      // Words are never split across rows.
      for (const r of rows) expect(r).not.toMatch(/mid-$|^word/);
      expect(text.replace(/\n/g, " ")).toContain("split mid-word before.");
      // While streaming, the table was already drawn as a table, not as pipes.
      expect(seenLive.some((s) => s.includes("│ style.ts"))).toBe(true);
      expect(seenLive.some((s) => /\| *style\.ts/.test(s))).toBe(false);
    });
  }
});
