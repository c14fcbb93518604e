// The terminal experience of the real `agent` binary in a real pseudo-terminal (tmux on
// a private socket): a streamed markdown answer rendered and word-wrapped at 60 and
// then 120 columns, a pasted three-line text and an Alt-Enter newline reaching the
// model verbatim, an arrow key sent in two writes that does not interrupt, and an
// unknown slash command answered with a suggestion instead of a spinner.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "md");
const rows = () => tmux("capture-pane", "-p", "-S", "-", "-t", "md").split("\n");

async function waitFor(pattern: string | RegExp, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = pane();
    if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ANSWER = (n: number) =>
  `## Result ${n}\n\nThe change keeps every word whole when the terminal is narrow, and measures 你好 as four columns.\n\n| File | Lines |\n|---|---:|\n| style.ts | 120 |\n\n\`\`\`js\nconst ok = ${n};\n\`\`\`\n\nEnd of answer ${n}.`;

beforeAll(() => {
  sb = sandbox();
  socket = join(sb.home, "tmux.sock");
});

afterAll(async () => {
  try {
    tmux("kill-server");
  } catch {
    // already gone
  }
  await fake?.close();
  sb?.cleanup();
});

/** The text of the last user message the model was sent. */
function lastUserText(): string {
  const body = fake.requests.at(-1)?.json as { messages: { role: string; content: unknown }[] };
  const user = body.messages.filter((m) => m.role === "user").at(-1)!;
  const c = user.content;
  return typeof c === "string"
    ? c
    : (c as { type: string; text?: string }[]).map((b) => b.text ?? "").join("");
}

describe("agent run in a terminal: rendering and input", () => {
  it("renders markdown at 60 and 120 columns, keeps pasted and multi-line input verbatim", async () => {
    const repo = sb.repo("md");
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [
        { kind: "text", text: ANSWER(1), chunks: 12, chunkDelayMs: 20 },
        { kind: "text", text: "Pasted text received." },
        { kind: "text", text: ANSWER(2), chunks: 12, chunkDelayMs: 20 },
      ],
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-md.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run 'show me'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "md", "-x", "60", "-y", "40", script);

    // 60 columns: headings without #, a drawn table, the code, words never cut.
    let text = await waitFor("End of answer 1.");
    expect(text).toContain("Result 1");
    expect(text).not.toContain("## Result");
    expect(text).toMatch(/│ style\.ts +│ +120 │/);
    expect(text).not.toContain("|---|");
    expect(text).toContain("const ok = 1;");
    // The paragraph is wrapped onto several rows, and only between words: joining the
    // rows with spaces gives the sentence back (a word cut in two would not).
    const shown = rows();
    expect(shown.every((r) => [...r].length <= 60)).toBe(true);
    expect(shown).not.toContain(
      "The change keeps every word whole when the terminal is narrow, and measures 你好 as four columns.",
    );
    expect(shown.join(" ").replace(/\s+/g, " ")).toContain(
      "The change keeps every word whole when the terminal is narrow, and measures 你好 as four columns.",
    );

    // An unknown command: a suggestion, no spinner, nothing sent to the model.
    const before = fake.requests.length;
    tmux("send-keys", "-t", "md", "/hlep", "Enter");
    await waitFor("Unknown command /hlep. Did you mean /help?");
    expect(pane()).not.toContain("Thinking…");

    // A bracketed paste of three lines plus an Alt-Enter newline, then Enter.
    tmux("send-keys", "-t", "md", "-l", "\x1b[200~line one\nline two\n  line three\x1b[201~");
    tmux("send-keys", "-t", "md", "M-Enter");
    tmux("send-keys", "-t", "md", "-l", "after");
    // An arrow key sent as two tmux commands (two writes to the terminal): a cursor move,
    // not Escape. Both go in one tmux invocation so that a slow, shared machine cannot
    // stretch the gap past the escape timeout; keys.test.ts holds the split-read rule itself.
    tmux("send-keys", "-t", "md", "-l", "\x1b", ";", "send-keys", "-t", "md", "-l", "[D");
    tmux("send-keys", "-t", "md", "-l", "X");
    await waitFor("afteXr");
    expect(fake.requests.length).toBe(before);
    tmux("send-keys", "-t", "md", "Enter");
    await waitFor("Pasted text received.");
    expect(lastUserText()).toBe("line one\nline two\n  line three\nafteXr");

    // 120 columns: the next answer uses the new width (the paragraph fits one row).
    tmux("resize-window", "-t", "md", "-x", "120", "-y", "40");
    await new Promise((r) => setTimeout(r, 200));
    tmux("send-keys", "-t", "md", "again", "Enter");
    text = await waitFor("End of answer 2.");
    expect(rows()).toContain(
      "The change keeps every word whole when the terminal is narrow, and measures 你好 as four columns.",
    );
    expect(text).toMatch(/│ style\.ts +│ +120 │/);
    tmux("send-keys", "-t", "md", "C-c");
    tmux("send-keys", "-t", "md", "C-c");
    await waitFor("AGENT_EXIT=0");
  });
});
