// `agent mcp add|list|remove` edit agent.hcl keeping everything else byte for byte, write
// secrets only as env(), and refuse what would not load; `agent mcp serve` is driven by the
// official MCP SDK's client: it lists the project's tools, runs a call, and a call the
// policy asks about is denied (--ask deny), each through the plan/apply gate.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { loadConfigSource } from "@pluggableharness/config";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMcpAdd, runMcpList, runMcpRemove } from "../src/commands/mcp.ts";
import { CliError, type Io } from "../src/io.ts";
import { addServer, removeServer } from "../src/mcp-edit.ts";
import { AGENT_BIN, type Sandbox, sandbox } from "./helpers.ts";

function captureIo(cwd: string, env: NodeJS.ProcessEnv = {}): Io & { text(): string } {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = "";
  out.on("data", (d) => {
    o += d;
  });
  err.on("data", (d) => {
    o += d;
  });
  return { out, err, env, cwd, text: () => o };
}

const ORIGINAL = `# My project.
required_providers {
  # The model.
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key = env("ANTHROPIC_API_KEY") # from the shell
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = [
    "anthropic.*",
  ]
}
`;

let sb: Sandbox;

beforeAll(() => {
  sb = sandbox();
});

afterAll(() => {
  sb?.cleanup();
});

describe("agent mcp add / remove", () => {
  it("adds the entry, the block and the profile pattern without touching the rest, and remove restores the file", async () => {
    const dir = sb.dir("edit");
    const file = join(dir, "agent.hcl");
    writeFileSync(file, ORIGINAL);
    const io = captureIo(dir, { ANTHROPIC_API_KEY: "x" });
    expect(
      await runMcpAdd(io, "github", ["npx", "-y", "@modelcontextprotocol/server-github"], {
        env: ["GITHUB_PERSONAL_ACCESS_TOKEN", "LOG_LEVEL=debug"],
        network: true,
        check: false,
      }),
    ).toBe(0);
    const added = readFileSync(file, "utf8");
    // Every original line is still there, in order, comments included.
    const kept = ORIGINAL.split("\n").filter((l) => l.trim() !== "");
    let at = 0;
    for (const l of added.split("\n")) if (l === kept[at]) at++;
    expect(at).toBe(kept.length);
    expect(added).toContain(
      '  github = {\n    source  = "pluggableharness/mcp"\n    version = ">= 0.1.0"\n  }\n}',
    );
    expect(added).toContain(
      [
        'provider "github" {',
        '  command = ["npx", "-y", "@modelcontextprotocol/server-github"]',
        "  network = true",
        "  env = {",
        '    GITHUB_PERSONAL_ACCESS_TOKEN = env("GITHUB_PERSONAL_ACCESS_TOKEN")',
        '    LOG_LEVEL                    = "debug"',
        "  }",
        "}",
      ].join("\n"),
    );
    expect(added).toContain('    "anthropic.*",\n    "github.*",\n  ]');
    expect(io.text()).toContain("Set GITHUB_PERSONAL_ACCESS_TOKEN in your environment");
    // It loads.
    const loaded = loadConfigSource(added, file, dir);
    expect(loaded.ok).toBe(true);

    expect(runMcpRemove(captureIo(dir), "github", {})).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(ORIGINAL);
  });

  it("writes a remote server's credential as an env() template", () => {
    const { text } = addServer(ORIGINAL, "agent.hcl", {
      name: "docs",
      transport: "http",
      url: "https://example.com/mcp",
      env: [],
      headers: [["Authorization", { template: "Bearer %s", env: "DOCS_TOKEN" }]],
      extra: [],
    });
    // biome-ignore lint/suspicious/noTemplateCurlyInString: HCL template syntax, not JavaScript's
    expect(text).toContain('Authorization = "Bearer ${env("DOCS_TOKEN")}"');
    expect(loadConfigSource(text, "agent.hcl", "/").ok).toBe(true);
    expect(removeServer(text, "agent.hcl", "docs")).toBe(ORIGINAL);
  });

  it("refuses a literal secret, a taken name and a bad name, leaving the file alone", async () => {
    const dir = sb.dir("refuse");
    const file = join(dir, "agent.hcl");
    writeFileSync(file, ORIGINAL);
    const io = captureIo(dir);
    await expect(
      runMcpAdd(io, "gh", ["npx", "server"], { env: ["GITHUB_TOKEN=ghp_literal"] }),
    ).rejects.toThrow(/looks like a secret/);
    await expect(
      runMcpAdd(io, "docs", ["https://example.com/mcp"], { header: ["Authorization: Bearer abc"] }),
    ).rejects.toThrow(/never written into agent.hcl/);
    await expect(runMcpAdd(io, "anthropic", ["npx", "x"], {})).rejects.toThrow(/already a provider/);
    await expect(runMcpAdd(io, "9bad", ["npx", "x"], {})).rejects.toThrow(CliError);
    expect(() => runMcpRemove(io, "nothing", {})).toThrow(/no MCP server named/);
    expect(readFileSync(file, "utf8")).toBe(ORIGINAL);
  });

  it("a literal secret written by hand is a load error at its position", () => {
    const text = addServer(ORIGINAL, "agent.hcl", {
      name: "gh",
      transport: "stdio",
      command: ["npx", "server"],
      env: [["GITHUB_TOKEN", { literal: "ghp_handwritten" }]],
      extra: [],
      headers: [],
    }).text;
    const r = loadConfigSource(text, "agent.hcl", "/");
    expect(r.ok).toBe(false);
    const d = r.ok ? undefined : r.diagnostics.find((x) => x.category === "secret_literal");
    expect(d?.detail).toContain("env.GITHUB_TOKEN");
    expect(d?.line).toBe(text.split("\n").findIndex((l) => l.includes("ghp_handwritten")) + 1);
  });

  it("list shows each server, starts it and says how many tools it has", async () => {
    const dir = sb.dir("list");
    const file = join(dir, "agent.hcl");
    const server = fileURLToPath(
      new URL("../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
    );
    writeFileSync(file, ORIGINAL);
    await runMcpAdd(captureIo(dir), "everything", [process.execPath, server, "stdio"], {
      env: ["DEMO_TOKEN"],
      check: false,
    });
    await runMcpAdd(captureIo(dir), "broken", [join(dir, "missing-server")], { check: false });
    const io = captureIo(dir, { ...sb.env, ANTHROPIC_API_KEY: "x", DEMO_TOKEN: "secret-demo-value" });
    expect(await runMcpList(io, { json: true })).toBe(0);
    const listed = JSON.parse(io.text()) as Array<Record<string, unknown>>;
    expect(listed.map((s) => s["name"])).toEqual(["everything", "broken"]);
    expect(listed[0]).toMatchObject({ transport: "stdio", status: "connected", env: ["DEMO_TOKEN"] });
    expect(listed[0]!["tools"]).toBeGreaterThan(5);
    expect(listed[1]).toMatchObject({ status: "failed" });
    expect(String(listed[1]!["error"])).toContain("missing-server");
    expect(io.text()).not.toContain("secret-demo-value");
  }, 60_000);
});

describe("agent mcp serve", () => {
  let fake: FakeVendor;
  let repo: string;

  beforeAll(async () => {
    fake = await startFakeVendor({ vendor: "anthropic", script: [] });
    repo = sb.repo("serve");
    mkdirSync(join(repo, "sub"), { recursive: true });
  });

  afterAll(async () => {
    await fake?.close();
  });

  it("lists the project's tools, runs a read, and denies what the policy asks about (--ask deny)", async () => {
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const transport = new StdioClientTransport({
      command: AGENT_BIN,
      args: ["mcp", "serve"],
      cwd: repo,
      env: env as Record<string, string>,
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (d) => {
      stderr += d;
    });
    const client = new Client({ name: "serve-test", version: "1.0.0" });
    await client.connect(transport, { timeout: 60_000 });
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining(["filesystem__read_file", "filesystem__edit_file", "exec__bash"]),
      );
      const read = tools.find((t) => t.name === "filesystem__read_file")!;
      expect(read.annotations?.readOnlyHint).toBe(true);
      expect(read.inputSchema.properties).toHaveProperty("path");
      expect(tools.find((t) => t.name === "exec__bash")!.annotations?.readOnlyHint).toBe(false);

      const ok = await client.callTool({ name: "filesystem__read_file", arguments: { path: "calc.js" } });
      expect(ok.isError).toBe(false);
      expect(JSON.stringify(ok.content)).toContain("function add");

      // The fixture's policy asks for bash; nobody can answer over MCP, so --ask deny denies it.
      const denied = await client.callTool({
        name: "exec__bash",
        arguments: { command: "echo nope > out.txt" },
      });
      expect(denied.isError).toBe(true);
      expect(JSON.stringify(denied.content)).toContain("Denied");
      expect(() => readFileSync(join(repo, "out.txt"))).toThrow();

      await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/unknown tool/);
    } finally {
      await client.close();
    }
    // Both calls are in the session file, with the gate's decisions.
    const id = /session (\S+)/.exec(stderr)?.[1];
    expect(id, stderr).toBeDefined();
    const reader = openSessionReader(id!, { dir: join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions") });
    try {
      const items = reader.planItems();
      // The policy's verdict on the plan item (ask, by the fixture's rule); --ask deny answered it.
      expect(items.map((i) => `${i.providerName}.${i.toolName}:${i.decisionText}:${i.decidedBy}`)).toEqual([
        "exec.bash:ask:ask_other_changes",
      ]);
    } finally {
      reader.close();
    }
  }, 90_000);
});
