// settings.default_frontend chooses the frontend an interactive `agent run` is handed to.
// The project declares the first-party tui (which the CLI would run in process) and the
// web-ui plugin, and names the web UI: the real binary in a real terminal (tmux) then
// draws no terminal UI, says which frontend serves the session, the web UI serves it
// with the operator's token, a list_sessions through the browser's Attach stream names
// the session the CLI started, and Ctrl-C ends the run with status 0.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";

const TOKEN = "default-frontend-token-4b8e1c";
let sb: Sandbox;
let socket: string;

const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
const pane = () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "df");

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = probe();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${pane()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function get(port: number, path: string, headers: Record<string, string>, method = "GET", body?: string) {
  return request({
    host: "127.0.0.1",
    port,
    path,
    method,
    headers: { host: `127.0.0.1:${port}`, ...headers },
  }).end(body);
}

/** Sends list_sessions over a browser connection and returns the answer's frame. */
function listSessions(port: number): Promise<string> {
  const auth = { authorization: `Bearer ${TOKEN}` };
  return new Promise((resolve, reject) => {
    let buffer = "";
    get(port, "/events", auth)
      .on("response", (r) => {
        r.setEncoding("utf8");
        r.on("data", (d: string) => {
          buffer += d;
          const frames = buffer.split("\n\n");
          buffer = frames.pop()!;
          for (const f of frames) {
            const hello = /^event: hello\ndata: (.*)$/.exec(f);
            if (hello) {
              const connection = (JSON.parse(hello[1]!) as { connection: string }).connection;
              get(
                port,
                "/send",
                { ...auth, origin: `http://127.0.0.1:${port}`, "content-type": "application/json" },
                "POST",
                JSON.stringify({ connection, event: { listSessions: { requestId: "df" } } }),
              ).on("error", reject);
            }
            if (f.includes('"requestId":"df"')) {
              r.destroy();
              resolve(f);
            }
          }
        });
      })
      .on("error", reject);
  });
}

beforeAll(() => {
  sb = sandbox();
  socket = join(sb.home, "tmux.sock");
});

afterAll(() => {
  try {
    tmux("kill-server");
  } catch {
    // already gone
  }
  sb?.cleanup();
});

describe("settings.default_frontend", () => {
  it("hands an interactive run to the frontend it names instead of the terminal UI", async () => {
    const repo = sb.repo("df");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
      .replace(
        "required_providers {",
        `required_providers {
  tui = {
    source  = "pluggableharness/tui"
    version = ">= 0.1.0"
  }
  web_ui = {
    source  = "pluggableharness/web-ui"
    version = ">= 0.1.0"
  }`,
      )
      .concat(`
provider "web_ui" {
  token = env("AGENT_WEB_TOKEN")
}

settings {
  default_frontend = "web_ui"
}
`);
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const env: Record<string, string> = {
      ...(sb.env as Record<string, string>),
      ANTHROPIC_API_KEY: "sk-ant-unused",
      FAKE_ANTHROPIC_URL: "http://127.0.0.1:9",
      FIXTURE_ROOT: repo,
      AGENT_WEB_TOKEN: TOKEN,
      TERM: "xterm-256color",
    };
    const script = join(sb.home, "run-df.sh");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${Object.entries(env)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n")}\ntrap 'true' INT\n'${AGENT_BIN}' run\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    // The shell keeps going after Ctrl-C (a trap with a command is reset in the child, so
    // agent still gets SIGINT), to print the exit status.
    tmux("new-session", "-d", "-s", "df", "-x", "120", "-y", "30", script);

    const sessionId = await waitFor(
      "the hand-over notice",
      () =>
        /session (\S+) is served by the "web_ui" frontend \(settings\.default_frontend\)/.exec(pane())?.[1],
      45_000,
    );
    // The web UI's port travels through the kernel's log into agent.log.
    const log = join(sb.env["XDG_STATE_HOME"]!, "agent", "agent.log");
    const port = Number(
      await waitFor("the web UI's port in agent.log", () => {
        const text = existsSync(log) ? readFileSync(log, "utf8") : "";
        return /web UI listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text)?.[1];
      }),
    );
    expect(readFileSync(log, "utf8")).not.toContain(TOKEN);
    const status = await new Promise<number>((resolve, reject) => {
      get(port, "/", { authorization: `Bearer ${TOKEN}` })
        .on("response", (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        })
        .on("error", reject);
    });
    expect(status).toBe(200);
    // The browser's Attach stream reaches the kernel of this run, which holds its session.
    expect(await listSessions(port)).toContain(sessionId);
    // No terminal UI was drawn: no prompt line, no status line with the model.
    expect(pane()).not.toMatch(/claude-|Thinking|›/);

    tmux("send-keys", "-t", "df", "C-c");
    await waitFor("the run to end", () => (pane().includes("AGENT_EXIT=0") ? true : undefined));
  }, 120_000);
});
