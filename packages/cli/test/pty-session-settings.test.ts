// /model and /plan outlive the run that set them, through the real `agent` binary: the
// operator switches the model and turns plan mode on in a terminal (tmux on a private
// socket), leaves, and `agent run --resume` / `--continue` go on with that model and plan
// mode, against the loopback Anthropic fake; the listing, the transcript and the replay
// say what was switched where. When the chosen model's provider has left agent.hcl, the
// resume warns and runs on the profile's model.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, type RecordedRequest, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, type Sandbox, sandbox } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "set");
const keys = (...k: string[]) => tmux("send-keys", "-t", "set", ...k);

const waitFor = (pattern: string | RegExp, timeoutMs?: number) => waitForText(pane, pattern, timeoutMs);

interface Body {
  model: string;
  tools?: { name: string }[];
}
const modelRequests = () => fake.requests.filter((r) => r.path.endsWith("/v1/messages"));
const last = (): Body => (modelRequests().at(-1) as RecordedRequest).json as Body;
const toolNames = (b: Body) => (b.tools ?? []).map((t) => t.name);

const HAIKU = "claude-haiku-4-5-20251001";

/** agent.hcl, with or without the second Anthropic provider ("backup") the operator picks. */
const hcl = (withBackup: boolean) => `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
${withBackup ? '  backup = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }\n' : ""}  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  exec = { source = "pluggableharness/exec", version = ">= 0.1.0" }
  commands = { source = "pluggableharness/commands", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
${
  withBackup
    ? `provider "backup" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
`
    : ""
}provider "filesystem" { roots = [env("FIXTURE_ROOT")] }
provider "exec" { roots = [env("FIXTURE_ROOT")] }

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["filesystem.*", "exec.*", "commands.*"]
  max_turns = 10
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

describe("a session's /model and /plan across agent run --resume", () => {
  it("resumes with the model and plan mode the operator chose; a model gone from agent.hcl warns", async () => {
    const repo = sb.repo("settings");
    writeFileSync(join(repo, "agent.hcl"), hcl(true));
    let n = 0;
    fake = await startFakeVendor({
      vendor: "anthropic",
      whenExhausted: "repeat-last",
      script: () => ({ kind: "text", text: `answer ${++n}.` }),
    });
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-settings.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\n'${AGENT_BIN}' run\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "set", "-x", "120", "-y", "50", script);
    await waitFor("/help for keys");
    keys(`/model backup/${HAIKU}`, "Enter");
    await waitFor(`Switched: the next turn uses backup/${HAIKU}.`);
    // The switch is on the record, and the terminal shows it as it happens.
    await waitFor(`Model switched to backup/${HAIKU} (/model); was anthropic/claude-sonnet-5`);
    keys("/plan", "Enter");
    await waitFor("Plan mode is on");
    await waitFor("Plan mode on (/plan)");
    keys("hello", "Enter");
    await waitFor("answer 1.");
    expect(last().model).toBe(HAIKU);
    const id = /Session (\w{26}) · profile default/.exec(pane())![1]!;
    keys("C-c");
    keys("C-c");
    await waitFor("AGENT_EXIT=0");

    // --resume: the chosen model and plan mode, as in the terminal.
    const resumed = await agent(["run", "--resume", id, "-p", "again", "--output-format", "json"], {
      cwd: repo,
      env,
    });
    expect(resumed.stderr).toBe("");
    expect(resumed.code).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ session_id: id, result: "answer 2." });
    expect(last().model).toBe(HAIKU);
    expect(toolNames(last())).toContain("filesystem__read_file");
    expect(toolNames(last())).not.toContain("exec__bash");

    // The listing reports the model in use; show and replay put each switch where it happened.
    const [list, show, replay] = await Promise.all([
      agent(["sessions", "list", "--json"], { cwd: repo, env }),
      agent(["sessions", "show", id], { cwd: repo, env }),
      agent(["sessions", "replay", id], { cwd: repo, env }),
    ]);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({ session_id: id, model: `backup/${HAIKU}`, model_overridden: true }),
    ]);
    expect(show.stdout.split("\n")[0]).toBe(
      `Session ${id} · default · model backup/${HAIKU} (chosen with /model) · completed`,
    );
    for (const out of [show, replay]) {
      expect(out.code).toBe(0);
      const text = out.stdout;
      const at = (s: string) => text.indexOf(s);
      const switched = `Model switched to backup/${HAIKU} (/model); was anthropic/claude-sonnet-5`;
      expect(at(switched)).toBeGreaterThan(-1);
      expect(at(switched)).toBeLessThan(at("Plan mode on (/plan)"));
      expect(at("Plan mode on (/plan)")).toBeLessThan(at("answer 1."));
    }
    // Replay renders what the file holds, the same every time.
    const again = await agent(["sessions", "replay", id], { cwd: repo, env });
    expect(again.stdout).toBe(replay.stdout);

    // The backup provider leaves agent.hcl: --continue warns and runs on the profile's
    // model, still in plan mode.
    writeFileSync(join(repo, "agent.hcl"), hcl(false));
    const gone = await agent(["run", "--continue", "-p", "third", "--output-format", "json"], {
      cwd: repo,
      env,
    });
    expect(gone.code).toBe(0);
    expect(gone.stderr).toBe(
      `agent: warning: the model this session was switched to, backup/${HAIKU}, is no longer available (provider "backup" is not in agent.hcl); it continues with its profile's model (anthropic/claude-sonnet-5)\n`,
    );
    expect(JSON.parse(gone.stdout)).toMatchObject({ session_id: id });
    expect(last().model).toBe("claude-sonnet-5");
    expect(toolNames(last())).not.toContain("exec__bash");
    const after = await agent(["sessions", "show", id], { cwd: repo, env });
    expect(after.stdout).toContain(
      `Model backup/${HAIKU} is no longer available (provider "backup" is not in agent.hcl): back to the profile's model`,
    );
    expect(after.stdout.split("\n")[0]).toBe(
      `Session ${id} · default · model anthropic/claude-sonnet-5 · completed`,
    );
  }, 90_000);
});
