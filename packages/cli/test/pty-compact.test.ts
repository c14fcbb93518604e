// The transcript of the real `agent` binary in a real pseudo-terminal (tmux on a private
// socket), zero-config against the loopback Anthropic fake, as compact as a user of
// Claude Code expects: the context providers' contributions are not printed before
// every model call, a tool call is one line with its arguments summarised (no JSON, no
// internal call ids), an operator's slash command stays out of the model's
// conversation, and leaving prints how to resume the session.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "tx");
const waitFor = (pattern: string | RegExp, timeoutMs?: number) => waitForText(pane, pattern, timeoutMs);

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

describe("agent run in a terminal: a compact transcript", () => {
  it("hides context contributions, summarises tool arguments and prints a resume hint", async () => {
    const repo = sb.repo("tx");
    // Zero-config: the defaults a newcomer gets, context providers included.
    rmSync(join(repo, "agent.hcl"));
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [
        { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
        { kind: "text", text: "The file exports add." },
        { kind: "error", status: 400, message: "prompt is malformed" },
        {
          kind: "text",
          text: "A long answer that is interrupted. ".repeat(40),
          chunks: 40,
          chunkDelayMs: 200,
        },
        {
          kind: "tool_calls",
          calls: [
            {
              name: "user__ask_user",
              args: {
                question: "Which database?",
                options: [{ label: "SQLite" }, { label: "Postgres", description: "the server one" }],
              },
            },
          ],
        },
        { kind: "text", text: "Postgres it is." },
        { kind: "text", text: "Still add." },
      ],
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      ANTHROPIC_BASE_URL: fake.url,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-tx.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join(
          "\n",
        )}\n'${AGENT_BIN}' run 'what does calc.js do'\necho "AGENT_EXIT=$?"\n'${AGENT_BIN}' run --continue --verbose\necho "VERBOSE_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "tx", "-x", "100", "-y", "50", script);

    let text = await waitFor("The file exports add.", 30_000);
    // Three context providers contributed before each of the two model calls: none of it
    // is printed without --verbose.
    expect(text).not.toContain("Context from");
    // The call in one line, its argument by value: no JSON, no fence, no call id.
    expect(text).toContain("→ filesystem.read_file calc.js");
    expect(text).not.toContain('"path"');
    expect(text).not.toContain("```");
    expect(text).not.toMatch(/toolu_|call_[0-9a-z]/i);
    // A failed turn is reported once.
    tmux("send-keys", "-t", "tx", "break it", "Enter");
    text = await waitFor("✗ failed");
    // The vendor's message appears once: in the turn's record, not again on the status line.
    await new Promise((r) => setTimeout(r, 200));
    expect(pane().split("prompt is malformed").length - 1).toBe(1);
    // Esc interrupts; the "Interrupting…" notice goes once the turn has stopped.
    tmux("send-keys", "-t", "tx", "go on", "Enter");
    await waitFor("A long answer");
    tmux("send-keys", "-t", "tx", "Escape");
    await waitFor("■ interrupted");
    await new Promise((r) => setTimeout(r, 300));
    expect(pane()).not.toContain("Interrupting…");
    // An operator-only slash command answers the operator and is not put in the
    // model's conversation.
    tmux("send-keys", "-t", "tx", "/cost", "Enter");
    await waitFor("Session cost");
    // The answer is shown without echoing the command's tool call.
    expect(pane()).not.toContain("→ commands.cost");
    // An ask_user option is chosen by its number.
    tmux("send-keys", "-t", "tx", "pick one", "Enter");
    await waitFor("Type 1-2 and Enter to choose an option");
    tmux("send-keys", "-t", "tx", "2", "Enter");
    await waitFor("Postgres it is.");
    // The model is told the option itself, and which one it was.
    const sentBack = (fake.requests.at(-1)!.json as { messages: { content: unknown }[] }).messages.at(-1);
    expect(JSON.stringify(sentBack)).toContain('{\\"option_index\\":1}\\nPostgres');
    expect(pane()).toContain("↳ 2. Postgres");
    const sent = fake.requests.map((r) => (r.json as { messages: unknown[] }).messages);
    expect(JSON.stringify(sent)).not.toContain("slash command /cost");
    tmux("send-keys", "-t", "tx", "C-c");
    tmux("send-keys", "-t", "tx", "C-c");
    text = await waitFor("AGENT_EXIT=0");
    // Leaving says how to come back, with the session's id.
    const id = /Session (\w{26}) /.exec(text)?.[1];
    expect(id).toBeDefined();
    expect(text).toContain(`To continue this session: agent run --resume ${id}`);

    // Typed while `agent run --continue --verbose` is still starting: kept, and sent
    // once the session is ready.
    tmux("send-keys", "-t", "tx", "again", "Enter");
    text = await waitFor("Still add.", 30_000);
    const body = fake.requests.at(-1)?.json as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(body.messages.filter((m) => m.role === "user").at(-1))).toContain("again");
    // --verbose shows the contributions: in the resumed session's backfill, and before
    // the new call.
    expect(text.slice(0, text.lastIndexOf("again"))).toMatch(
      /Context from workspace-context — \d+\/\d+ tokens/,
    );
    expect(text.slice(text.lastIndexOf("again"))).toMatch(/Context from workspace-context — \d+\/\d+ tokens/);
    tmux("send-keys", "-t", "tx", "C-c");
    tmux("send-keys", "-t", "tx", "C-c");
    await waitFor("VERBOSE_EXIT=0");
  }, 90_000);
});
