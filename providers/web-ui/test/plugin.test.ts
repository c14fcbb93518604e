// The web UI as a plugin declared in agent.hcl: the kernel launches it, Configure hands it
// the operator's token (a sensitive attribute, from env()), and each browser connection
// is a FrontendService.Attach stream over the go-plugin broker. Checked over HTTP: the
// event stream greets, a list_sessions round trip comes back through the kernel, and the
// token is required; the log names the port but not the token.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, type Sandbox, sandbox } from "../../../packages/cli/test/helpers.ts";

const TOKEN = "plugin-token-7c1e5b9a3d2f4e6a";
let sb: Sandbox;
let server: ChildProcess;
let port = 0;
let logFile = "";

function http(path: string, headers: Record<string, string>, method = "GET", body?: string) {
  return request({
    host: "127.0.0.1",
    port,
    path,
    method,
    headers: { host: `127.0.0.1:${port}`, ...headers },
  }).end(body);
}

beforeAll(async () => {
  sb = sandbox();
  const repo = sb.repo("plugin");
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
    .replace(
      "required_providers {",
      'required_providers {\n  web_ui = {\n    source  = "pluggableharness/web-ui"\n    version = ">= 0.1.0"\n  }',
    )
    .concat('\nprovider "web_ui" {\n  token = env("AGENT_WEB_TOKEN")\n}\n');
  writeFileSync(join(repo, "agent.hcl"), hcl);
  const env = {
    ...sb.env,
    XDG_RUNTIME_DIR: sb.dir("run"),
    ANTHROPIC_API_KEY: "sk-ant-unused",
    FAKE_ANTHROPIC_URL: "http://127.0.0.1:9",
    FIXTURE_ROOT: repo,
    AGENT_WEB_TOKEN: TOKEN,
  };
  logFile = join(sb.env["XDG_STATE_HOME"]!, "agent", "serve.log");
  server = spawn(AGENT_BIN, ["serve"], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  server.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  server.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`agent serve did not start:\n${out}`)), 45_000);
    server.stdout!.on("data", () => {
      if (out.includes("agent serve: listening")) {
        clearTimeout(t);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`agent serve exited ${code}:\n${out}`)));
  });
  // The plugin's log line names the port. It travels through the kernel's log callback, so
  // it may reach serve.log a little after the server says it listens: wait for it.
  const deadline = Date.now() + 20_000;
  let m: RegExpExecArray | null = null;
  while (!m) {
    const text = existsSync(logFile) ? readFileSync(logFile, "utf8") : "";
    m = /web UI listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text);
    if (m) break;
    if (Date.now() > deadline) throw new Error(`the web UI never logged its port:\n${text}\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  port = Number(m[1]);
}, 60_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  sb?.cleanup();
});

describe("the web-ui plugin", () => {
  it("serves the UI with the operator's token and bridges the browser to Attach", async () => {
    expect(port).toBeGreaterThan(0);
    expect(readFileSync(logFile, "utf8")).not.toContain(TOKEN);
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        http("/", headers)
          .on("response", (r) => {
            r.resume();
            resolve(r.statusCode ?? 0);
          })
          .on("error", reject);
      });
    expect(await status({})).toBe(401);
    expect(await status({ authorization: `Bearer ${TOKEN}` })).toBe(200);

    // An event stream (one Attach stream), then list_sessions through it.
    const events = await new Promise<string[]>((resolve, reject) => {
      const seen: string[] = [];
      let buffer = "";
      http("/events", { authorization: `Bearer ${TOKEN}` })
        .on("response", (r) => {
          r.setEncoding("utf8");
          r.on("data", (d: string) => {
            buffer += d;
            const frames = buffer.split("\n\n");
            buffer = frames.pop()!;
            for (const f of frames) {
              seen.push(f);
              const hello = /^event: hello\ndata: (.*)$/.exec(f);
              if (hello) {
                const connection = (JSON.parse(hello[1]!) as { connection: string }).connection;
                http(
                  "/send",
                  {
                    authorization: `Bearer ${TOKEN}`,
                    origin: `http://127.0.0.1:${port}`,
                    "content-type": "application/json",
                  },
                  "POST",
                  JSON.stringify({ connection, event: { listSessions: { requestId: "via-plugin" } } }),
                ).on("error", reject);
              }
              if (f.includes('"requestId":"via-plugin"')) {
                r.destroy();
                resolve(seen);
              }
            }
          });
        })
        .on("error", reject);
    });
    const answer = events.find((f) => f.includes("via-plugin"))!;
    expect(JSON.parse(answer.replace(/^data: /, ""))).toMatchObject({
      requestId: "via-plugin",
      sessionList: {},
    });
  });
});
