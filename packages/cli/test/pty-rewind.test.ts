// /rewind, the commands provider's, in real terminal UIs (tmux on a private socket) against
// the loopback Anthropic fake: in the one `agent run` runs in its own process, and in
// `agent attach` to a session of a real `agent serve`, with a protocol client subscribed
// too. Two prompts change a file; /rewind lists them; /rewind 2 shows the plan and changes
// nothing (no file, no new session); /rewind 2 confirm forks the session and restores the
// file; every frontend goes on in the fork, the prompt back in the terminal's editor. A
// model calling the rewind tool itself is refused and changes nothing.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { listSessions } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dial } from "../src/serve/client.ts";
import { AGENT_BIN, agent, records, type Sandbox, sandbox, servedTarget } from "./helpers.ts";
import { waitForText } from "./tmux.ts";

let sb: Sandbox;
let fake: FakeVendor;
let socket: string;
let server: ChildProcess | undefined;

const HCL = `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  commands = { source = "pluggableharness/commands", version = ">= 0.1.0" }
}
provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}
provider "filesystem" { roots = [env("FIXTURE_ROOT")] }
policy "allow_everything" {
  match  = {}
  action = "allow"
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["filesystem.*", "commands.*"]
  max_turns = 10
}
`;

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

function project(name: string): { repo: string; env: Record<string, string> } {
  const repo = sb.repo(name);
  writeFileSync(join(repo, "agent.hcl"), HCL);
  const env: Record<string, string> = {
    ...(sb.env as Record<string, string>),
    XDG_RUNTIME_DIR: sb.dir(`run-${name}`),
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
    TERM: "xterm-256color",
  };
  return { repo, env };
}

/** A shell script for tmux: the environment, then `command` in the project. */
function script(name: string, repo: string, env: Record<string, string>, command: string): string {
  const file = join(sb.home, `${name}.sh`);
  writeFileSync(
    file,
    `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
      .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && k !== "NO_COLOR")
      .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
      .join("\n")}\n${command}\necho "AGENT_EXIT=$?"\nsleep 600\n`,
    { mode: 0o755 },
  );
  return file;
}

const sessionIds = () =>
  listSessions({ dir: join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions"), log: () => {} }).sessions.map(
    (s) => s.sessionId,
  );

const twoTurns = () =>
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
  );

/**
 * In terminal `name`: /rewind, a confirm before any plan was shown (it shows the plan),
 * /rewind 2 (nothing changes), /rewind 2 confirm; the fork's id.
 */
async function rewindInTerminal(name: string, repo: string): Promise<string> {
  const before = sessionIds();
  tmux("send-keys", "-t", name, "/rewind", "Enter");
  await until(name, /2\. second: change a/);
  // A confirm of a plan never shown shows it instead.
  tmux("send-keys", "-t", name, "/rewind 2 confirm", "Enter");
  await until(name, "This is what the rewind does; it has not been shown before.");
  await until(name, "~ a.txt: restore");
  expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n");
  expect(sessionIds().sort()).toEqual(before.sort());
  tmux("send-keys", "-t", name, "/rewind 2", "Enter");
  await until(name, /To go ahead: \/rewind 2 confirm[\s\S]*To go ahead: \/rewind 2 confirm/);
  // The plans are all that happened.
  expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("two\n");
  expect(sessionIds().sort()).toEqual(before.sort());
  tmux("send-keys", "-t", name, "/rewind 2 confirm", "Enter");
  const shown = await until(name, /Forked as ([0-9A-Z]{26}); 1 file\(s\) restored\./);
  const fork = /Forked as ([0-9A-Z]{26})/.exec(shown)![1]!;
  expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n");
  await until(name, `Rewound: continuing in ${fork}.`);
  await until(name, `Session ${fork}`);
  return fork;
}

/** The fork's one request: the history up to the second prompt, which is sent again. */
function expectForkRequest(requestsBefore: number): void {
  expect(fake.requests).toHaveLength(requestsBefore + 1);
  const sent = JSON.stringify(fake.requests.at(-1)!.json);
  expect(sent).toContain("first: write a");
  expect(sent).toContain("second: change a");
  expect(sent).not.toContain("Changed a.txt.");
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
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server!.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await fake?.close();
  sb?.cleanup();
});

describe.skipIf(!hasTmux && !process.env["CI"])("/rewind from the commands provider", () => {
  it("in agent run's terminal UI: plan first, confirm forks and restores, the UI goes on in the fork", async () => {
    const { repo, env } = project("in-process");
    twoTurns();
    tmux(
      "new-session",
      "-d",
      "-s",
      "run",
      "-x",
      "120",
      "-y",
      "50",
      script("run", repo, env, `'${AGENT_BIN}' run 'first: write a'`),
    );
    await until("run", "Wrote a.txt.");
    tmux("send-keys", "-t", "run", "second: change a", "Enter");
    await until("run", "Changed a.txt.");
    const original = sessionIds()[0]!;
    const requests = fake.requests.length;
    const fork = await rewindInTerminal("run", repo);
    // The prompt is back in the editor: Enter sends it to the fork.
    fake.push({ kind: "text", text: "Answered in the fork." });
    tmux("send-keys", "-t", "run", "Enter");
    await until("run", "Answered in the fork.");
    expectForkRequest(requests);
    expect(sessionIds()).toEqual(expect.arrayContaining([original, fork]));
    tmux("send-keys", "-t", "run", "C-c");
    tmux("send-keys", "-t", "run", "C-c");
    await until("run", "AGENT_EXIT=0");
  }, 90_000);

  it("in agent attach to a served session: files restored, the TUI and a protocol client go on in the fork", async () => {
    const { repo, env } = project("served");
    server = spawn(AGENT_BIN, ["serve"], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"] });
    let banner = "";
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`agent serve did not start:\n${banner}`)), 45_000);
      server!.stdout!.on("data", (d: Buffer) => {
        banner += d.toString();
        if (/on unix:\S+/.test(banner)) {
          clearTimeout(t);
          resolve();
        }
      });
      server!.once("exit", (code) => reject(new Error(`agent serve exited ${code}:\n${banner}`)));
    });
    const unix = /on unix:(\S+)/.exec(banner)![1]!;
    // A protocol client creates the session and stays subscribed to it.
    const client = dial(servedTarget(unix));
    const events: ServerEvent[] = [];
    void (async () => {
      for await (const e of client.connection.events) events.push(e);
    })();
    const waitFor = async (pred: (e: ServerEvent) => boolean, what: string) => {
      const end = Date.now() + 30_000;
      for (;;) {
        const found = events.find(pred);
        if (found) return found;
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      twoTurns();
      client.connection.send({
        event: {
          case: "createSession",
          value: {
            requestId: "c",
            initialPrompt: [{ block: { case: "text", value: { text: "first: write a" } } }],
          },
        },
      });
      const created = await waitFor((e) => e.event.case === "sessionCreated", "session_created");
      const id = created.sessionId;
      await waitFor(
        (e) => e.event.case === "sessionStatusUpdate" && e.event.value.status === SessionStatus.COMPLETED,
        "the first turn's end",
      );
      tmux(
        "new-session",
        "-d",
        "-s",
        "attach",
        "-x",
        "120",
        "-y",
        "50",
        script("attach", repo, env, `'${AGENT_BIN}' attach ${id}`),
      );
      await until("attach", "Wrote a.txt.");
      tmux("send-keys", "-t", "attach", "second: change a", "Enter");
      await until("attach", "Changed a.txt.");
      const requests = fake.requests.length;
      const fork = await rewindInTerminal("attach", repo);
      // The protocol client was told too, after the command's result.
      const told = await waitFor((e) => e.event.case === "sessionRewound", "session_rewound");
      expect(told.sessionId).toBe(id);
      expect(told.event.value).toMatchObject({ forkSessionId: fork, promptText: "second: change a" });
      fake.push({ kind: "text", text: "Answered in the fork." });
      tmux("send-keys", "-t", "attach", "Enter");
      await until("attach", "Answered in the fork.");
      expectForkRequest(requests);
      tmux("send-keys", "-t", "attach", "C-c");
      tmux("send-keys", "-t", "attach", "C-c");
      await until("attach", "AGENT_EXIT=0");
    } finally {
      client.close();
    }
  }, 120_000);

  it("refuses a model that calls the rewind tool: nothing changes", async () => {
    const { repo, env } = project("model");
    fake.push(
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__write_file", args: { path: "a.txt", content: "one\n" } }],
      },
      { kind: "tool_calls", calls: [{ name: "commands__rewind", args: { to: "1" } }] },
      { kind: "tool_calls", calls: [{ name: "commands__rewind", args: { to: "1 confirm" } }] },
      { kind: "text", text: "Tried." },
    );
    const before = sessionIds();
    const requests = fake.requests.length;
    const r = await agent(["run", "-p", "first: write a", "--output-format", "stream-json"], {
      cwd: repo,
      env,
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(0);
    const id = String(records(r.stdout)[0]!["session_id"]);
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n");
    expect(sessionIds().sort()).toEqual([...before, id].sort());
    // Both calls came back to the model as errors: the tool is not one it may call.
    const answered = fake.requests.slice(requests + 2).map((q) => JSON.stringify(q.json));
    expect(answered).toHaveLength(2);
    for (const a of answered) expect(a).toContain('no tool named \\"commands__rewind\\"');
  }, 90_000);
});
