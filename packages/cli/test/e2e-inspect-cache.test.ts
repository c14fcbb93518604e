// `agent providers` and `agent validate` start only what they must (issue 32, point 2),
// through the real binary: on a cold describe cache they launch every provider and fill
// the cache as `agent run` would; once it is warm they launch nothing: the model
// provider's configured models and the commands bridge's operations were kept for the
// accepted configuration; a block whose configuration Configure has not accepted yet
// launches that provider again, and `agent validate` and `agent run` then refuse it at
// the same file:line:col; a new command file launches the commands bridge again.
// AGENT_DEBUG_LAUNCH_LOG (inspect.ts) names each provider a command launched.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

const BASE = `
required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  memory     = { source = "pluggableharness/memory", version = ">= 0.1.0" }
  commands   = { source = "pluggableharness/commands", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = "http://127.0.0.1:9"
}

provider "filesystem" {
  roots = ["."]
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
  tools = ["filesystem.*", "memory.*"]
}
`;

let sb: Sandbox;
let env: NodeJS.ProcessEnv;
let launchLog: string;
let cache: string;

beforeAll(() => {
  sb = sandbox();
  launchLog = join(sb.home, "launches.log");
  // A describe cache of its own, cold at the start (the shared one holds other tests' entries).
  cache = sb.dir("cache");
  env = {
    ...sb.env,
    XDG_CACHE_HOME: cache,
    ANTHROPIC_API_KEY: "sk-ant-test",
    AGENT_DEBUG_LAUNCH_LOG: launchLog,
  };
});

afterAll(() => sb?.cleanup());

/** The providers launched since the last call, sorted. */
function launched(): string[] {
  if (!existsSync(launchLog)) return [];
  const names = readFileSync(launchLog, "utf8").split("\n").filter(Boolean).sort();
  rmSync(launchLog);
  return names;
}

describe("agent providers and agent validate on the describe cache", () => {
  it("launch every provider cold, none warm, and a changed block's or command file's provider again", async () => {
    const dir = sb.dir("project");
    const file = join(dir, "agent.hcl");
    writeFileSync(file, BASE);

    // Cold: everything is launched, and what it answered is cached for agent run too.
    const cold = await agent(["validate"], { cwd: dir, env });
    expect(cold.stdout).toContain("Valid (4 providers checked)");
    expect(cold.code).toBe(0);
    const described = join(cache, "agent", "describe");
    const entries = existsSync(described) ? readdirSync(described).filter((n) => n.endsWith(".json")) : [];
    expect(entries.length).toBe(4);
    expect(launched()).toEqual(["anthropic", "commands", "filesystem", "memory"]);

    // Warm: nothing runs; everything is described from the cache.
    const listed = await agent(["providers", "--json"], { cwd: dir, env });
    expect(listed.code, listed.stderr).toBe(0);
    const facts = JSON.parse(listed.stdout) as {
      name: string;
      started: boolean;
      healthy: boolean;
      tools: { name: string }[];
    }[];
    const byName = new Map(facts.map((f) => [f.name, f]));
    expect(byName.get("filesystem")).toMatchObject({ started: false, healthy: true });
    expect(byName.get("filesystem")!.tools.map((t) => t.name)).toContain("read_file");
    expect(byName.get("memory")).toMatchObject({ started: false, healthy: true });
    // The models it declares once configured, kept for this accepted block.
    expect(byName.get("anthropic")).toMatchObject({ started: false, healthy: true });
    expect((byName.get("anthropic") as unknown as { models: string[] }).models).toContain("claude-sonnet-5");
    expect(byName.get("commands")).toMatchObject({ started: false, healthy: true });
    expect(launched()).toEqual([]);
    const text = await agent(["providers"], { cwd: dir, env });
    expect(text.stdout).toMatch(
      /^memory {2}\[.*\] .* {2}not started \(described from the cache; --check starts it\)$/m,
    );
    expect(launched()).toEqual([]);

    const warm = await agent(["validate"], { cwd: dir, env });
    expect(warm.stdout).toContain("Valid (4 providers checked)");
    expect(launched()).toEqual([]);

    // A new command file changes what the commands bridge would offer: it is asked again.
    mkdirSync(join(dir, ".agent", "commands"), { recursive: true });
    writeFileSync(join(dir, ".agent", "commands", "hello.md"), "Say hello.\n");
    const newCommand = await agent(["validate"], { cwd: dir, env });
    expect(newCommand.code, newCommand.stdout).toBe(0);
    expect(launched()).toEqual(["commands"]);
    expect((await agent(["validate"], { cwd: dir, env })).code).toBe(0);
    expect(launched()).toEqual([]);

    // A configuration Configure has not seen: that provider is launched, and refused by
    // validate and run alike.
    writeFileSync(file, BASE.replace('store = "markdown"', 'store = "markdwn"'));
    const line = BASE.split("\n").findIndex((l) => l.includes("store =")) + 1;
    const where = `${file}:${line}:3: error[provider_configure]`;
    const refused = await agent(["validate"], { cwd: dir, env });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(where);
    expect(launched()).toEqual(["memory"]);
    const run = await agent(["run", "-p", "hi"], { cwd: dir, env: { ...env, AGENT_DEBUG_LAUNCH_LOG: "" } });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(where);

    // Back to the accepted block: nothing to check live; --check launches every provider.
    writeFileSync(file, BASE);
    const again = await agent(["validate"], { cwd: dir, env });
    expect(again.code).toBe(0);
    expect(launched()).toEqual([]);
    const checked = await agent(["providers", "--check"], { cwd: dir, env });
    expect(checked.code).toBe(0);
    expect(checked.stdout).toMatch(/^memory {2}\[.*\] .* {2}healthy$/m);
    expect(launched()).toEqual(["anthropic", "commands", "filesystem", "memory"]);
  }, 180_000);
});
