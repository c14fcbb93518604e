// No single failure stops a project (issue 34, points 5 and 6), through the real binary:
// MCP servers that cannot start (a missing command, a missing module under /tmp, a refused
// URL) are warned about by `agent mcp add`, explained by `agent mcp list`, and leave
// `agent validate` valid and `agent run` running without their tools, while a misspelt
// provider name in a profile is still an error; and a provider block its own Configure
// refuses stops `agent run` exactly as it stops `agent validate`, warm describe cache or not.
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent as run, type Sandbox, sandbox } from "./helpers.ts";
import { installedAgent } from "./installed.ts";

// Against the packed CLI installed globally, as a user has it.
let bin: string;
const agent = (args: readonly string[], o: Parameters<typeof run>[1]) => run(args, { ...o, bin });

const BASE = `
required_providers {
  anthropic = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  memory    = { source = "pluggableharness/memory", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_URL")
}

provider "memory" {
  store = "markdown"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["memory.*"]
}
`;

/** A local port nothing listens on. */
async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

let sb: Sandbox;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: () => ({ kind: "text", text: "OK" }) });
  const inst = await installedAgent();
  bin = inst.bin;
  env = inst.env({ ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_URL: fake.url });
}, 330_000);

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("MCP servers that cannot start", () => {
  it("are warned about, explained, and never stop validate or run", async () => {
    const dir = sb.dir("mcp");
    writeFileSync(join(dir, "agent.hcl"), BASE);
    // The sandbox's home is under /tmp: the module's path is where a private /tmp hides things.
    const missingModule = join(sb.home, "server", "index.js");
    const url = `http://127.0.0.1:${await refusedPort()}/mcp`;

    const gone = await agent(["mcp", "add", "gone", "--", "/nonexistent/server"], { cwd: dir, env });
    expect(gone.code).toBe(0);
    expect(gone.stderr).toContain('MCP server "gone" did not start');
    expect(gone.stderr).toContain("the command /nonexistent/server was not found");
    const local = await agent(["mcp", "add", "local", "--", "node", missingModule], { cwd: dir, env });
    expect(local.code).toBe(0);
    expect(local.stderr).toContain(`the server's module ${missingModule} was not found`);
    const remote = await agent(["mcp", "add", "remote", url], { cwd: dir, env });
    expect(remote.code).toBe(0);
    expect(remote.stderr).toContain('MCP server "remote" did not start');
    expect(remote.stderr).toContain("ECONNREFUSED");
    expect(readFileSync(join(dir, "agent.hcl"), "utf8")).toContain('"gone.*", "local.*", "remote.*"');

    const listed = await agent(["mcp", "list"], { cwd: dir, env });
    expect(listed.code).toBe(0);
    const line = (name: string) => listed.stdout.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    expect(line("gone")).toContain("failed: ");
    expect(line("local")).toContain(`${missingModule} was not found (MODULE_NOT_FOUND)`);
    expect(line("local")).toContain("private /tmp");
    expect(line("remote")).toContain("ECONNREFUSED");

    const validated = await agent(["validate"], { cwd: dir, env });
    expect(validated.stdout).not.toContain("error[");
    expect(validated.code).toBe(0);

    const run = await agent(["run", "-p", "hi"], { cwd: dir, env, timeoutMs: 90_000 });
    expect(run.stderr).not.toContain("unknown_tool");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("OK\n");
    for (const name of ["gone", "local", "remote"]) {
      // Said once each.
      expect(run.stderr.split(`MCP server "${name}" is unavailable`).length - 1).toBe(1);
    }
    // The model is offered none of their tools.
    const request = fake.requests.at(-1)!.json as { tools?: Array<{ name: string }> };
    expect((request.tools ?? []).some((t) => /^(gone|local|remote)__/.test(t.name))).toBe(false);

    // A misspelt provider name is still a configuration error at its position.
    const text = readFileSync(join(dir, "agent.hcl"), "utf8").replace('"gone.*"', '"gnoe.*"');
    writeFileSync(join(dir, "agent.hcl"), text);
    const at = `${join(dir, "agent.hcl")}:${text.split("\n").findIndex((l) => l.includes('"gnoe.*"')) + 1}:`;
    const typo = await agent(["validate"], { cwd: dir, env });
    expect(typo.code).toBe(1);
    expect(typo.stdout).toContain(`${at}`);
    expect(typo.stdout).toMatch(/error\[unknown_provider\].*"gnoe"/);
    const typoRun = await agent(["run", "-p", "hi"], { cwd: dir, env });
    expect(typoRun.code).toBe(1);
    expect(typoRun.stderr).toMatch(/error\[unknown_provider\].*"gnoe"/);
  }, 240_000);
});

describe("run refuses what validate refuses", () => {
  it("a memory store Configure rejects stops both, with the same file:line:col", async () => {
    const dir = sb.dir("memory");
    const file = join(dir, "agent.hcl");
    writeFileSync(file, BASE);
    // A good run first: the describe cache now holds the memory provider (it would stay dormant).
    const good = await agent(["run", "-p", "hi"], { cwd: dir, env });
    expect(good.code).toBe(0);

    writeFileSync(file, BASE.replace('store = "markdown"', 'store = "markdwn"'));
    const line = BASE.split("\n").findIndex((l) => l.includes("store =")) + 1;
    const where = `${file}:${line}:3: error[provider_configure]`;
    const before = fake.requests.length;
    const run = await agent(["run", "-p", "hi"], { cwd: dir, env });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(where);
    expect(run.stderr).toContain('not "markdwn"');
    expect(fake.requests.length).toBe(before); // refused before any model call

    const validated = await agent(["validate"], { cwd: dir, env });
    expect(validated.code).toBe(1);
    expect(validated.stdout).toContain(where);
    expect(validated.stdout).toContain('not "markdwn"');
    // Reported once, though the provider is configured for two categories.
    expect(validated.stdout.split(where).length - 1).toBe(1);
  }, 120_000);
});
