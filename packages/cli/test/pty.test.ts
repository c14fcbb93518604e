// The interactive terminal UI of the real `agent` binary, driven through a real
// pseudo-terminal (tmux, on its own private server socket): a first message, an
// approval answered with scope "session", a second matching call approved by that
// verdict without asking, streamed text, an interrupt with Esc, and Ctrl-C twice.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { listSessions, openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

function tmux(...args: string[]): string {
  return execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
}

/** The pane's whole history (scrollback and screen) as plain text. */
function screen(): string {
  return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "agent");
}

/** Polls the pane until `pattern` shows (the UI is asynchronous by nature). */
async function waitFor(pattern: string | RegExp, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = screen();
    if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern} on the terminal:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
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

describe("agent run in a terminal", () => {
  it("streams, asks for approval, remembers a session verdict, interrupts and exits", async () => {
    const repo = sb.repo("tui");
    // In this project file edits ask first.
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
      'policy "allow_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "allow"',
      'policy "ask_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "ask"',
    );
    expect(hcl).toContain("ask_file_edits");
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const story = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [
        {
          kind: "tool_calls",
          text: "I will fix add().",
          calls: [
            {
              name: "filesystem__edit_file",
              args: { path: "calc.js", old_str: "return a - b;", new_str: "return a + b;" },
            },
          ],
        },
        {
          kind: "tool_calls",
          text: "And the comment.",
          calls: [
            {
              name: "filesystem__edit_file",
              args: {
                path: "calc.js",
                old_str: "// Adds two numbers.",
                new_str: "// Adds two numbers (fixed).",
              },
            },
          ],
        },
        { kind: "text", text: "Both edits are done." },
        { kind: "text", text: story, chunks: 40, chunkDelayMs: 150 },
      ],
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
    };
    delete env["NO_COLOR"];
    const script = join(sb.home, "run-agent.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run 'Fix add() in calc.js'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "agent", "-x", "110", "-y", "40", script);
    const raw = join(sb.home, "pane.raw");
    tmux("pipe-pane", "-o", "-t", "agent", `cat >> '${raw}'`);

    // The approval prompt: the tool, its risk and the Preview diff.
    let text = await waitFor("Allow filesystem.edit_file to edit calc.js · risk moderate");
    text = await waitFor("y this call");
    expect(text).toMatch(/-\s+return a - b;/);
    expect(text).toMatch(/\+\s+return a \+ b;/);
    // What "s" or "A" would remember is shown before the answer: this file, not every edit.
    expect(text).toContain("s filesystem.edit_file on exactly calc.js for this session");
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a - b;");

    // Allow for the session: the second edit of the same file runs without asking. No
    // key is pressed after "s", so had it asked again the run would still be waiting.
    tmux("send-keys", "-t", "agent", "s");
    text = await waitFor("Both edits are done.");
    expect(text).toContain("filesystem.edit_file allowed for this session");
    expect(text).toContain("session:filesystem.edit_file[calc.js]");
    expect(text).not.toContain("Allow filesystem.edit_file");
    const calc = readFileSync(join(repo, "calc.js"), "utf8");
    expect(calc).toContain("return a + b;");
    expect(calc).toContain("// Adds two numbers (fixed).");

    // A long answer streams in; Esc interrupts it part-way.
    tmux("send-keys", "-t", "agent", "tell me a story", "Enter");
    text = await waitFor(/word3\b/);
    expect(text).not.toContain("word39");
    tmux("send-keys", "-t", "agent", "Escape");
    text = await waitFor("■ interrupted");
    expect(text).not.toContain("word39");

    // Ctrl-C twice leaves.
    tmux("send-keys", "-t", "agent", "C-c");
    await waitFor("Press Ctrl-C again to exit");
    tmux("send-keys", "-t", "agent", "C-c");
    await waitFor("AGENT_EXIT=0");

    // The differential renderer never cleared or homed the screen.
    const bytes = readFileSync(raw, "latin1");
    expect(bytes.length).toBeGreaterThan(0);
    expect(bytes).not.toContain("\x1b[2J");
    expect(bytes).not.toContain("\x1b[H");

    // What the session file says: both edits allowed, the second by the session verdict.
    const dir = join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");
    const [info] = listSessions({ dir, log: () => {} }).sessions;
    const reader = openSessionReader(info!.sessionId, { dir });
    try {
      expect(reader.meta().status).toBe(SessionStatus.CANCELLED);
      expect(reader.planItems().map((p) => p.decidedBy)).toEqual([
        expect.stringContaining("ask_file_edits"),
        "session:filesystem.edit_file[calc.js]",
      ]);
    } finally {
      reader.close();
    }
  });

  it("takes the next message after a turn failed, and goes on with the same session", async () => {
    const repo = sb.repo("tui-failed");
    const broken = await startFakeVendor({
      vendor: "anthropic",
      script: [
        { kind: "error", status: 401, errorType: "authentication_error", message: "invalid x-api-key" },
        { kind: "text", text: "Back again." },
      ],
    });
    try {
      const env: Record<string, string> = {
        ...(sb.env as Record<string, string>),
        XDG_STATE_HOME: join(sb.home, "state-tui-failed"),
        ANTHROPIC_API_KEY: "sk-ant-test",
        FAKE_ANTHROPIC_URL: broken.url,
        FIXTURE_ROOT: repo,
        TERM: "xterm-256color",
      };
      const script = join(sb.home, "run-agent-failed.sh");
      writeFileSync(
        script,
        `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
          .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
          .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
          .join("\n")}\n'${AGENT_BIN}' run 'hello'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
        { mode: 0o755 },
      );
      tmux("new-session", "-d", "-s", "failed", "-x", "110", "-y", "40", script);
      const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "failed");
      const until = async (pattern: string) => {
        const end = Date.now() + 20_000;
        while (!pane().includes(pattern)) {
          if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${pane()}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await until("✗ failed");
      tmux("send-keys", "-t", "failed", "the key is fixed now", "Enter");
      await until("Back again.");
      expect(pane()).not.toContain("session_replay_only");
      tmux("send-keys", "-t", "failed", "C-c");
      tmux("send-keys", "-t", "failed", "C-c");
      await until("AGENT_EXIT=0");
      expect(broken.requests).toHaveLength(2);
    } finally {
      await broken.close();
    }
  });
});
