// The terminal UI takes input before the session exists: the real `agent` binary in a
// pseudo-terminal (tmux on a private socket) on an `agent init` project, its model
// provider slowed by a dev override that sleeps before starting it. The prompt is painted while nothing but that provider
// has been launched (AGENT_DEBUG_LAUNCH_LOG); a message typed then is shown as queued,
// Esc takes a queued message back into the editor, and the one left queued is the first
// prompt the model receives once the session is ready.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, REPO_ROOT, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "ahead");
/** The screen as it is now (without the scrollback, where earlier frames stay). */
const visible = () => tmux("capture-pane", "-p", "-J", "-t", "ahead");
const keys = (...k: string[]) => tmux("send-keys", "-t", "ahead", ...k);

async function waitFor(pattern: string | RegExp, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const text = pane();
    if (typeof pattern === "string" ? text.includes(pattern) : pattern.test(text)) return text;
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern}:\n${text}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

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

describe("agent run in a terminal: input before the session exists", () => {
  it("paints the prompt first, queues what is typed, and sends it once the session is ready", async () => {
    // A project as `agent init` writes it: context, memory, widgets and compaction included.
    const repo = join(sb.home, "ahead");
    mkdirSync(repo);
    execFileSync("git", ["init", "-q"], { cwd: repo });
    fake = await startFakeVendor({
      vendor: "anthropic",
      script: [{ kind: "text", text: "Early bird answered." }],
    });
    // Once `slow` exists the model provider takes 4 s to start: the session cannot exist
    // before then.
    const slow = join(sb.home, "slow");
    const wrapper = join(sb.home, "slow-anthropic.sh");
    writeFileSync(
      wrapper,
      `#!/bin/sh\n[ -f '${slow}' ] && sleep 4\nexec '${process.execPath}' '${join(REPO_ROOT, "providers", "anthropic", "src", "main.ts")}' "$@"\n`,
      { mode: 0o755 },
    );
    const configDir = join(sb.env["XDG_CONFIG_HOME"]!, "agent");
    mkdirSync(configDir, { recursive: true });
    writeFileSync(join(configDir, "config.hcl"), `dev_overrides {\n  anthropic = "${wrapper}"\n}\n`);
    const launches = join(sb.home, "launches.log");
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
      AGENT_DEBUG_LAUNCH_LOG: launches,
    };
    // A warm describe cache, as after any earlier command here: kernel creation launches
    // nothing to describe, so every launch the log shows is one a session asked for.
    const init = await agent(["init"], { cwd: repo, env });
    expect(init.code).toBe(0);
    const hcl = join(repo, "agent.hcl");
    writeFileSync(
      hcl,
      readFileSync(hcl, "utf8").replace(
        'provider "anthropic" {',
        'provider "anthropic" {\n  base_url = env("FAKE_ANTHROPIC_URL")',
      ),
    );
    const warm = await agent(["providers"], { cwd: repo, env });
    expect(warm.code).toBe(0);
    rmSync(launches, { force: true });
    writeFileSync(slow, "");
    const script = join(sb.home, "run-ahead.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "ahead", "-x", "120", "-y", "40", script);
    const launched = () =>
      existsSync(launches) ? [...new Set(readFileSync(launches, "utf8").split("\n").filter(Boolean))] : [];

    // The first frame that takes input (before: the session's banner, drawn once attached).
    const first = await waitFor(/Enter queues the message|\/help for keys/);
    // Nothing the first turn can do without has been launched by then; at most the model provider.
    expect(launched().filter((n) => n !== "anthropic")).toEqual([]);
    expect(first).toContain("Starting the agent");

    // A message typed now is queued and shown as such; Esc takes it back into the editor.
    keys("-l", "take me back");
    keys("Enter");
    await waitFor("⧗ queued: take me back");
    keys("Escape");
    await waitFor("Not queued any more: back in the editor");
    expect(pane()).not.toContain("⧗ queued: take me back");
    expect(pane()).toMatch(/› take me back/);
    keys("C-u");
    keys("-l", "hello early");
    keys("Enter");
    const queued = await waitFor("⧗ queued: hello early");
    expect(queued).not.toContain("queued: take me back");
    // Still starting: the model has been sent nothing, and only the model provider is launching.
    expect(fake.requests).toHaveLength(0);
    expect(launched().filter((n) => n !== "anthropic")).toEqual([]);

    // Once the session is ready the queued message is its first prompt, sent exactly once.
    await waitFor("Early bird answered.", 30_000);
    expect(fake.requests).toHaveLength(1);
    const body = fake.requests[0]!.json as { messages: { role: string; content: unknown }[] };
    const user = body.messages.filter((m) => m.role === "user");
    const text = (c: unknown) =>
      typeof c === "string" ? c : (c as { text?: string }[]).map((b) => b.text ?? "").join("");
    expect(text(user.at(-1)!.content)).toContain("hello early");
    expect(JSON.stringify(body.messages)).not.toContain("take me back");
    expect(visible()).not.toContain("⧗ queued");
    // The rest of the profile started behind the prompt, once the model provider was up.
    expect(launched()[0]).toBe("anthropic");
    const rest = ["compactor", "memory", "project-context", "widgets", "workspace-context"];
    for (let i = 0; i < 200 && !rest.every((n) => launched().includes(n)); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(launched().slice(1).sort()).toEqual(rest);

    keys("C-c");
    keys("C-c");
    const end = await waitFor(/AGENT_EXIT=\d+/);
    expect(end).toContain("AGENT_EXIT=0");
  }, 90_000);
});
