// /memory in agent run's real terminal UI (tmux on a private socket), against the loopback
// Anthropic fake and the first-party memory and commands plugins: a pending draft with
// [[references]] is listed, shown with its references as links on their line, approved
// (the markdown file says so, and the approval shows in the transcript as the kernel's
// memory event), all without the model being asked anything.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const HCL = `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  memory    = { source = "pluggableharness/memory", version = ">= 0.1.0" }
  commands  = { source = "pluggableharness/commands", version = ">= 0.1.0" }
}
provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
provider "memory" {}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["memory.*", "commands.*"]
  max_turns = 5
}
`;

const DRAFT =
  "---\ntitle: Commit language\ntype: feedback\nstatus: pending\n---\n\nWrite commit messages in English; see [[Style Guide]] and [[release-day]].\n";

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = (name: string) => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", name);
const until = (name: string, pattern: string | RegExp, ms?: number) =>
  waitForText(() => pane(name), pattern, ms);

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

describe.skipIf(!hasTmux && !process.env["CI"])("/memory in the terminal UI", () => {
  it("lists a draft, shows its [[references]] as links, and approves it", async () => {
    const repo = sb.repo("memory");
    writeFileSync(join(repo, "agent.hcl"), HCL);
    const dir = join(repo, ".agent", "memory");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "commit-language.md"), DRAFT);
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      TERM: "xterm-256color",
    };
    const file = join(sb.home, "run.sh");
    writeFileSync(
      file,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && k !== "NO_COLOR")
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run 'hello'\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    fake.push({ kind: "text", text: "Hello there." });
    tmux("new-session", "-d", "-s", "run", "-x", "140", "-y", "50", file);
    await until("run", "Hello there.");
    const asked = fake.requests.length;
    tmux("send-keys", "-t", "run", "/memory", "Enter");
    await until("run", "1 record, 1 pending approval:");
    await until("run", "commit-language  [pending, feedback, project]  Commit language");
    tmux("send-keys", "-t", "run", "/memory show commit-language", "Enter");
    // Each reference is a link inside its sentence, with the id it opens.
    await until(
      "run",
      "Write commit messages in English; see [[Style Guide]] (style-guide) and [[release-day]].",
    );
    tmux("send-keys", "-t", "run", "/memory approve commit-language", "Enter");
    await until("run", 'Approved memory "commit-language": recall now uses it.');
    await until("run", 'Memory approved (/memory): "commit-language" — Commit language [feedback, project]');
    expect(readFileSync(join(dir, "commit-language.md"), "utf8")).toContain("status: canonical");
    // Operator commands: the model was not asked anything.
    expect(fake.requests.length).toBe(asked);
    tmux("send-keys", "-t", "run", "C-c");
    tmux("send-keys", "-t", "run", "C-c");
    await until("run", "AGENT_EXIT=0");
  }, 90_000);
});
