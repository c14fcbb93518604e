// Issue 34, point 2, end to end with the real `agent`: `agent add <provider>` writes the
// required_providers entry, a provider block with every option commented (described by
// the provider's own schema) and the provider's tools into the profile; it refuses an
// unknown name with "did you mean", changes nothing on a second run, and what it wrote
// passes `agent validate` and gives `agent run` the provider's tools.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-add",
    FAKE_ANTHROPIC_URL: fake.url,
    ANTHROPIC_BASE_URL: fake.url,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const HCL = `required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "filesystem" {
  roots = ["."]
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["filesystem.*"]
}
`;

describe("agent add", () => {
  it("adds git with its options commented, idempotently; validate passes and run offers its tools", async () => {
    const dir = sb.dir("add-git");
    writeFileSync(join(dir, "agent.hcl"), HCL);
    mkdirSync(join(dir, "src"));

    const typo = await agent(["add", "gti"], { cwd: dir, env });
    expect(typo.stderr).toContain('did you mean "git"?');
    expect(typo.code).toBe(2);
    expect(readFileSync(join(dir, "agent.hcl"), "utf8")).toBe(HCL);

    // From a subdirectory: the project's agent.hcl is the one edited.
    const add = await agent(["add", "git"], { cwd: join(dir, "src"), env });
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain(`Added provider "git"`);
    expect(add.stdout).toContain(`agent_profile "default" now lists "git.*"`);
    const text = readFileSync(join(dir, "agent.hcl"), "utf8");
    expect(text).toMatch(/ {2}git = \{\n {4}source {2}= "github\.com\/pluggableharness\/provider-git"\n/);
    expect(text).toContain('tools = ["filesystem.*", "git.*"]');
    const block = text.slice(text.indexOf('provider "git" {'));
    // Every option commented, each under its description from the provider's schema.
    expect(block).toMatch(/ {2}# Run the repository's hooks[^\n]*\n(?: {2}#[^\n]*\n)* {2}# hooks = false\n/);
    expect(block).toContain("  # timeout_ms = 60000\n");
    expect(block).not.toMatch(/^ {2}[a-z_]+ =/m);
    // Everything that was there is kept byte for byte.
    expect(text.startsWith(HCL.slice(0, HCL.indexOf("}\n") - 1))).toBe(true);

    const again = await agent(["add", "git"], { cwd: dir, env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("nothing changed");
    expect(readFileSync(join(dir, "agent.hcl"), "utf8")).toBe(text);

    const v = await agent(["validate"], { cwd: dir, env });
    expect(v.stdout).toContain("Valid (3 providers checked)");
    expect(v.code, v.stdout).toBe(0);

    fake.push({ kind: "text", text: "ok" });
    const r = await agent(["run", "-p", "hi", "--output-format", "stream-json"], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    const init = records(r.stdout).find((x) => x["type"] === "init")!;
    const git = (init["tools"] as Array<{ provider: string; tool: string }>).filter(
      (t) => t.provider === "git",
    );
    expect(git.map((t) => t.tool)).toContain("git_status");

    // A frontend: no tool patterns; its optional secret stays commented, and validate passes.
    const web = await agent(["add", "web-ui"], { cwd: dir, env });
    expect(web.code, web.stderr).toBe(0);
    expect(web.stdout).not.toContain("now lists");
    const withWeb = readFileSync(join(dir, "agent.hcl"), "utf8");
    expect(withWeb).toContain('  # token = env("WEB_UI_TOKEN")\n');
    expect(withWeb).toContain('tools = ["filesystem.*", "git.*"]');
    const v2 = await agent(["validate"], { cwd: dir, env });
    expect(v2.stdout).toContain("Valid (4 providers checked)");
    expect(v2.code, v2.stdout).toBe(0);
  }, 120_000);

  it("refuses MCP servers and bad addresses without touching agent.hcl", async () => {
    const dir = sb.dir("add-refused");
    writeFileSync(join(dir, "agent.hcl"), HCL);
    const [mcp, forge, none] = await Promise.all([
      agent(["add", "mcp"], { cwd: dir, env }),
      agent(["add", "bitbucket.org/acme/provider-x"], { cwd: dir, env }),
      agent(["add", "git"], { cwd: sb.dir("add-no-project"), env }),
    ]);
    expect(mcp.stderr).toContain("agent mcp add");
    expect(mcp.code).toBe(2);
    expect(forge.stderr).toContain("is not a git-forge address");
    expect(forge.code).toBe(2);
    expect(none.stderr).toContain("run `agent init` first");
    expect(none.code).toBe(1);
    expect(readFileSync(join(dir, "agent.hcl"), "utf8")).toBe(HCL);
  }, 60_000);
});
