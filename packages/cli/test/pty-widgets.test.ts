// Widgets through the widget protocol, in the real `agent` binary in tmux: the widgets
// provider derives a status line (model, context use against the model's window, cost,
// the tightest rate-limit window from the vendor's response headers) and the task list
// from observe-mode hooks, and the terminal UI draws both. The capture is also written
// to docs/screenshots when TUI_SCREENSHOT_DIR says where (scripts/tui-screenshot.ts).
// The task list's [done] ActionNodes are activated by keyboard (Ctrl-T, Tab, Enter) and
// the kernel runs task_update, which the widget then shows.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-t", "w");

const waitFor = (pattern: string | RegExp, timeoutMs?: number) => waitForText(pane, pattern, timeoutMs);

const HCL = `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  task      = { source = "pluggableharness/task", version = ">= 0.1.0" }
  widgets   = { source = "pluggableharness/widgets", version = ">= 0.1.0" }
}
provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
policy "allow_tasks" {
  match  = { provider = "task" }
  action = "allow"
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["task.*"]
}
`;

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

describe("widgets in the terminal UI", () => {
  it("shows the status widget and the task list the task tools feed; its [done] actions run from the keyboard", async () => {
    const repo = sb.dir("widgets");
    writeFileSync(join(repo, "agent.hcl"), HCL);
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [
        {
          kind: "tool_calls",
          text: "Planning the work.",
          calls: [
            {
              name: "task__task_create",
              args: {
                tasks: [
                  { title: "Read the parser", status: "completed" },
                  { title: "Fix the off-by-one", status: "in_progress" },
                  { title: "Add a regression test" },
                ],
              },
            },
          ],
        },
        { kind: "text", text: "The plan is in the task list: one done, one under way, one to go." },
      ],
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      TERM: "xterm-256color",
    };
    delete env["NO_COLOR"];
    const script = join(sb.home, "run-w.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join(
          "\n",
        )}\n'${AGENT_BIN}' run 'Plan the fix for the parser bug'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "w", "-x", "100", "-y", "30", script);

    const text = await waitFor("one to go.");
    // The task list, as the task tool's result left it.
    await waitFor("Tasks 1/3");
    expect(text).toMatch(/☑ Read the parser/);
    expect(text).toMatch(/◐ Fix the off-by-one/);
    expect(text).toMatch(/☐ Add a regression test/);
    // The status line: model, context against the window, cost, rate-limit headroom.
    const status = await waitFor(
      /anthropic\/claude-sonnet-5 · context \S+\/\S+ \(\d+%\) · \$\S+ · rate limit: .+% left/,
    );
    const screen = tmux("capture-pane", "-p", "-e", "-t", "w");
    if (process.env["TUI_SCREENSHOT_DIR"]) {
      writeFileSync(join(process.env["TUI_SCREENSHOT_DIR"], "tui-widgets.ansi"), screen);
      writeFileSync(join(process.env["TUI_SCREENSHOT_DIR"], "tui-widgets.txt"), status);
    }

    // The open tasks carry a [done] action; the keyboard reaches them: Ctrl-T focuses the
    // first (the task under way), Tab the next, Enter runs it through the kernel.
    expect(text).not.toMatch(/Read the parser \[done\]/);
    tmux("send-keys", "-t", "w", "C-t");
    await waitFor(
      /▸ \[done\] task\.task_update \{"id":"[^"]+","status":"completed"\}\s+action 1\/2 · Enter runs it/,
    );
    tmux("send-keys", "-t", "w", "Tab");
    await waitFor(/action 2\/2 · Enter runs it/);
    tmux("send-keys", "-t", "w", "Enter");
    await waitFor("Tasks 2/3");
    const after = await waitFor(/☑ Add a regression test/);
    expect(after).toMatch(/◐ Fix the off-by-one \[done\]/);
    expect(after).not.toMatch(/▸ \[done\]/);
    // The keys are in /help.
    tmux("send-keys", "-t", "w", "-l", "/help");
    tmux("send-keys", "-t", "w", "Enter");
    await waitFor(/Ctrl-T focuses the first/);
    tmux("send-keys", "-t", "w", "C-c");
    tmux("send-keys", "-t", "w", "C-c");
    await waitFor("AGENT_EXIT=0");
  });
});
