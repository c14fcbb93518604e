// End-to-end: the real `agent` binary runs headless against a loopback fake Anthropic whose
// scripted model calls a tool of a real MCP server (@modelcontextprotocol/server-everything,
// bridged by provider-mcp over stdio in the sandbox); the tool's result reaches the next
// model request, and the secret the server was given appears in no output, log or session
// file.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "../../../packages/cli/test/helpers.ts";
import { EVERYTHING } from "./servers.ts";

const CANARY = "mcp-canary-7c1f9e2a4b";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

function config(command: string[] = [process.execPath, EVERYTHING, "stdio"]): string {
  return `
required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  everything = {
    source  = "pluggableharness/mcp"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "everything" {
  command = ${JSON.stringify(command)}
  env = {
    DEMO_TOKEN = env("MCP_DEMO_TOKEN")
  }
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["everything.*"]
  max_turns = 6
}
`;
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.dir("project");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  // A cache of its own: the first run describes the bridge cold (in a worker, then moved to
  // a sandboxed process), the second finds the cache warm.
  env = {
    ...sb.env,
    XDG_CACHE_HOME: sb.dir("cache"),
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    MCP_DEMO_TOKEN: CANARY,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

describe("agent run -p with an MCP server", () => {
  it("the model calls an MCP tool (asked, allowed headless) and its result reaches the next request", async () => {
    writeFileSync(join(repo, "agent.hcl"), config());
    fake.push(
      {
        kind: "tool_calls",
        text: "Echoing.",
        calls: [{ name: "everything__echo", args: { message: "hello mcp" } }],
      },
      { kind: "tool_calls", text: "Env.", calls: [{ name: "everything__get-env", args: {} }] },
      { kind: "text", text: "Done." },
    );
    const before = fake.requests.length;
    const r = await agent(
      ["run", "-p", "echo something", "--output-format", "stream-json", "--headless-ask", "allow"],
      {
        cwd: repo,
        env,
        timeoutMs: 90_000,
      },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const recs = records(r.stdout);
    const init = recs[0]!;
    const tools = init["tools"] as Array<Record<string, string>>;
    expect(tools.find((t) => t["name"] === "everything__echo")).toEqual({
      name: "everything__echo",
      provider: "everything",
      tool: "echo",
      kind: "resource",
      risk: "high",
    });
    expect(tools.find((t) => t["name"] === "everything__read_resource")).toMatchObject({
      kind: "data_source",
    });
    // Asked (the default policy asks for a resource), answered by --headless-ask.
    const decisions = recs.filter((x) => x["type"] === "plan_decision");
    expect(decisions[0]).toMatchObject({ decision: "allow" });
    expect(JSON.stringify(decisions[0])).toContain("headless");
    // The tool result is in the request after the call.
    const second = JSON.stringify(fake.requests[before + 1]!.json);
    expect(second).toContain("Echo: hello mcp");
    // get-env's answer held the secret the server was given: masked before it left the bridge.
    const third = JSON.stringify(fake.requests[before + 2]!.json);
    expect(third).toContain("DEMO_TOKEN");
    expect(third).not.toContain(CANARY);
    expect(r.stdout).not.toContain(CANARY);
    for (const f of filesUnder(sb.home)) {
      expect(readFileSync(f).includes(CANARY), `${f} holds the secret`).toBe(false);
    }
  }, 120_000);

  it("a server that dies mid-call is process_crashed; the next call restarts it", async () => {
    // A proxy in front of the real server that exits when asked to echo "crash".
    const proxy = join(repo, "crashing-proxy.cjs");
    writeFileSync(
      proxy,
      `const { spawn } = require("node:child_process");
const c = spawn(${JSON.stringify(process.execPath)}, [${JSON.stringify(EVERYTHING)}, "stdio"], { stdio: ["pipe", "inherit", "inherit"] });
process.stdin.on("data", (d) => {
  if (d.toString().includes('"message":"crash"')) process.exit(3);
  c.stdin.write(d);
});
process.stdin.on("end", () => c.stdin.end());
c.on("exit", (code) => process.exit(code ?? 1));
`,
    );
    writeFileSync(join(repo, "agent.hcl"), config([process.execPath, proxy]));
    fake.push(
      {
        kind: "tool_calls",
        text: "Crash it.",
        calls: [{ name: "everything__echo", args: { message: "crash" } }],
      },
      {
        kind: "tool_calls",
        text: "Again.",
        calls: [{ name: "everything__echo", args: { message: "back again" } }],
      },
      { kind: "text", text: "Done." },
    );
    const before = fake.requests.length;
    const r = await agent(
      ["run", "-p", "crash and recover", "--output-format", "stream-json", "--headless-ask", "allow"],
      {
        cwd: repo,
        env,
        timeoutMs: 90_000,
      },
    );
    expect(r.code).toBe(0);
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    expect(results).toHaveLength(2);
    expect(JSON.stringify(results[0])).toContain("process_crashed");
    expect(JSON.stringify(fake.requests[before + 1]!.json)).toContain("process_crashed");
    // The bridge was relaunched with its server: the second call worked.
    expect(JSON.stringify(fake.requests[before + 2]!.json)).toContain("Echo: back again");
  }, 120_000);
});
