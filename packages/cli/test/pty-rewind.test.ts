// /rewind in the real terminal UI (tmux on a private socket): two prompts that change a
// file, /rewind lists them, /rewind 2 shows the plan, y forks the session and restores the
// file, and the UI goes on in the fork with the prompt back in the editor.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { listSessions } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "rw");

async function until(pattern: string | RegExp, ms = 20_000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const text = pane();
    if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let hasTmux = true;
try {
  execFileSync("tmux", ["-V"]);
} catch {
  hasTmux = false;
}

beforeAll(async () => {
  sb = sandbox();
  socket = join(sb.home, "tmux.sock");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  try {
    tmux("kill-server");
  } catch {}
  await fake?.close();
  sb?.cleanup();
});

describe.skipIf(!hasTmux && !process.env["CI"])("/rewind in the terminal UI", () => {
  it("forks before a prompt, restores the file, and continues in the fork", async () => {
    const repo = sb.repo("tui-rewind");
    fake.push(
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__write_file", args: { path: "a.txt", content: "one\n" } }],
      },
      { kind: "text", text: "Wrote a.txt." },
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__write_file", args: { path: "a.txt", content: "two\n" } }],
      },
      { kind: "text", text: "Changed a.txt." },
      { kind: "text", text: "Answered in the fork." },
    );
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-agent-rewind.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run 'first: write a'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "rw", "-x", "120", "-y", "50", script);
    await until("Wrote a.txt.");
    tmux("send-keys", "-t", "rw", "second: change a", "Enter");
    await until("Changed a.txt.");
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n");
    const original = listSessions({
      dir: join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions"),
      log: () => {},
    }).sessions[0]!.sessionId;

    tmux("send-keys", "-t", "rw", "/rewind", "Enter");
    await until(/2\. second: change a/);
    tmux("send-keys", "-t", "rw", "/rewind 2", "Enter");
    await until("~ a.txt: restore");
    await until("Rewind? y to go ahead");
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n"); // nothing yet
    tmux("send-keys", "-t", "rw", "y", "Enter");
    const shown = await until(/Forked as ([0-9A-Z]{26}); 1 file\(s\) restored\. Continuing in the fork\./);
    const fork = /Forked as ([0-9A-Z]{26})/.exec(shown)![1]!;
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n");
    await until(`Session ${fork}`);
    // The prompt is back in the editor: Enter sends it to the fork.
    tmux("send-keys", "-t", "rw", "Enter");
    await until("Answered in the fork.");
    // Exactly one request for the fork: the run's first prompt is not sent again.
    expect(fake.requests).toHaveLength(5);
    const sent = JSON.stringify(fake.requests.at(-1)!.json);
    expect(sent).toContain("first: write a");
    expect(sent).toContain("second: change a");
    expect(sent).not.toContain("Changed a.txt.");
    const ids = listSessions({
      dir: join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions"),
      log: () => {},
    }).sessions.map((s) => s.sessionId);
    expect(ids).toContain(original);
    expect(ids).toContain(fork);
    tmux("send-keys", "-t", "rw", "C-c");
    tmux("send-keys", "-t", "rw", "C-c");
    await until("AGENT_EXIT=0");
  }, 90_000);
});
