// `agent sessions replay` after a provider upgrade: a session recorded with a forge
// provider's 0.1.0 keeps rendering with 0.1.0's own Render once agent.hcl has moved to
// 0.2.0 (the old build is still in the download cache); once `providers prune --force`
// deletes that build, replay names what is missing and how to download it again, and
// following that advice makes the session replayable again.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeForge, startFakeForge } from "@pluggableharness/fake-forge";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const SOURCE = "github.com/acme/provider-stamp";

let sb: Sandbox;
let forge: FakeForge;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;
let author: string;
let project: string;

/** A tool whose Render says which build drew it. */
const STAMP_MAIN = `import { r, s, serveTools } from "@pluggableharness/tool-kit";
import pkg from "../package.json" with { type: "json" };
await serveTools(pkg, {
  tools: [{
    name: "stamp", kind: "data_source", risk: "read_only", description: "echo a word",
    input: s.object({ word: s.string("a word") }, ["word"]),
    output: s.object({ word: s.string() }, ["word"]),
    streaming: false, concurrency: { safe: true }, idempotent: true,
    async invoke(args) { return { word: args.word }; },
    render(input) { return r.text(input.kind + " drawn by stamp " + pkg.version); },
  }],
});
`;

async function release(version: string) {
  const pkgFile = join(author, "package.json");
  writeFileSync(pkgFile, JSON.stringify({ ...JSON.parse(readFileSync(pkgFile, "utf8")), version }, null, 2));
  const built = await agent(["plugin", "build", "--platform", "linux_amd64"], {
    cwd: author,
    env,
    timeoutMs: 60_000,
  });
  expect(built.code, built.stderr).toBe(0);
  const dir = join(author, "dist", "release");
  forge.publish({
    source: SOURCE,
    tag: `v${version}`,
    assets: {
      [`provider-stamp_${version}_linux_amd64.tar.gz`]: readFileSync(
        join(dir, `provider-stamp_${version}_linux_amd64.tar.gz`),
      ),
      [`provider-stamp_${version}_checksums.txt`]: readFileSync(
        join(dir, `provider-stamp_${version}_checksums.txt`),
      ),
    },
  });
}

const config = (constraint: string) => `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  stamp = {
    source  = "${SOURCE}"
    version = "${constraint}"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

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
  tools     = ["stamp.*"]
  max_turns = 4
}
`;

const replay = (id: string) => agent(["sessions", "replay", id], { cwd: project, env });

beforeAll(async () => {
  sb = sandbox();
  forge = await startFakeForge({});
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    XDG_CACHE_HOME: join(sb.home, "cache"),
    AGENT_GITHUB_API_URL: forge.githubApi,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
  };
  const work = sb.dir("author");
  const made = await agent(["plugin", "new", "provider-stamp", "--source", SOURCE], { cwd: work, env });
  expect(made.code, made.stderr).toBe(0);
  author = join(work, "provider-stamp");
  writeFileSync(join(author, "src", "main.ts"), STAMP_MAIN);
  await release("0.1.0");
  await release("0.2.0");
  project = sb.dir("project");
}, 120_000);

afterAll(async () => {
  await fake?.close();
  await forge?.close().catch(() => {});
  sb?.cleanup();
});

describe("replay across a provider upgrade", () => {
  it("renders with the build that wrote the session, then names a build that is gone and how to get it", async () => {
    // A session recorded with stamp 0.1.0.
    writeFileSync(join(project, "agent.hcl"), config("0.1.0"));
    fake.push(
      { kind: "tool_calls", calls: [{ name: "stamp__stamp", args: { word: "hello" } }] },
      { kind: "text", text: "Stamped." },
    );
    const run = await agent(["run", "-p", "stamp hello", "--output-format", "stream-json"], {
      cwd: project,
      env,
    });
    expect(run.code, run.stderr).toBe(0);
    const id = records(run.stdout)[0]!["session_id"] as string;
    expect(id).toMatch(/^[0-9A-Z]{26}$/);

    // The project moves to 0.2.0: replay still draws with 0.1.0's Render, from the cache.
    writeFileSync(join(project, "agent.hcl"), config("0.2.0"));
    const moved = await agent(["providers", "upgrade", "stamp"], { cwd: project, env });
    expect(moved.code, moved.stderr).toBe(0);
    expect(readFileSync(join(project, ".agent", "agent.lock.hcl"), "utf8")).toContain(
      'version     = "0.2.0"',
    );
    const upgraded = await replay(id);
    expect(upgraded.stderr).toBe("");
    expect(upgraded.code).toBe(0);
    expect(upgraded.stdout).toContain("tool_call drawn by stamp 0.1.0");
    expect(upgraded.stdout).toContain("tool_result drawn by stamp 0.1.0");
    expect(upgraded.stdout).not.toContain("drawn by stamp 0.2.0");
    expect(upgraded.stdout).toContain("Stamped.");

    // The old build deleted on purpose: replay says exactly what is missing and how to get it.
    const pruned = await agent(["providers", "prune", "--force"], { cwd: project, env });
    expect(pruned.stdout).toMatch(/removed {2}github\.com\/acme\/provider-stamp 0\.1\.0 \(linux_amd64\)/);
    const gone = await replay(id);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toBe("");
    expect(gone.stderr).toMatch(
      new RegExp(
        `cannot replay session ${id}: no build of these producers is installed or cached:\\n  tool provider-stamp 0\\.1\\.0 \\(first used at event \\d+\\): no cached build\\n`,
      ),
    );
    expect(gone.stderr).toContain(`stamp = { source = "${SOURCE}", version = "0.1.0" }`);
    expect(gone.stderr).toContain("run `agent providers upgrade stamp`");

    // The advice works: pinned back and upgraded (downloaded), then moved forward again.
    writeFileSync(join(project, "agent.hcl"), config("0.1.0"));
    const back = await agent(["providers", "upgrade", "stamp"], { cwd: project, env });
    expect(back.code, back.stderr).toBe(0);
    writeFileSync(join(project, "agent.hcl"), config("0.2.0"));
    const forward = await agent(["providers", "upgrade", "stamp"], { cwd: project, env });
    expect(forward.code, forward.stderr).toBe(0);
    expect(readFileSync(join(project, ".agent", "agent.lock.hcl"), "utf8")).toContain(
      'version     = "0.2.0"',
    );
    const again = await replay(id);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("tool_result drawn by stamp 0.1.0");
  }, 120_000);
});
