// Issue 34, point 3, end to end with the real `agent`: agent.hcl is found upward from the
// working directory (as git finds .git), up to the repository root and never past it.
// A run started in src/ uses the project's configuration, roots, policies and .agent/
// while its relative paths start in src/; the kernel's own files found upward stay
// protected; validate says which file it checked; a nested repository is a boundary.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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
  // ANTHROPIC_BASE_URL too: a run that misses the project falls back to zero-config, on the fake.
  env = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-project-dir",
    FAKE_ANTHROPIC_URL: fake.url,
    ANTHROPIC_BASE_URL: fake.url,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

// An "always" approval the project's .agent/ holds: edit_file would otherwise ask (and a
// headless run deny).
const ALWAYS = `policy "always:default:filesystem.edit_file" {
  match   = { provider = "filesystem", tool_name = "edit_file" }
  action  = "allow"
  profile = "default"
}
`;

// Relative roots: the directory of agent.hcl, wherever the session starts.
const PROJECT_HCL = `required_providers {
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

policy "project_allows_writes" {
  match  = { provider = "filesystem", tool_name = "write_file" }
  action = "allow"
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

/** A git repository with agent.hcl at its top and an empty src/. */
function repository(name: string): string {
  const dir = sb.dir(name);
  const git = spawnSync("git", ["init", "-q", dir], { encoding: "utf8" });
  expect(git.status, git.stderr).toBe(0);
  writeFileSync(join(dir, "agent.hcl"), PROJECT_HCL);
  mkdirSync(join(dir, "src"));
  mkdirSync(join(dir, ".agent"));
  writeFileSync(join(dir, ".agent", "policy.auto.hcl"), ALWAYS);
  return dir;
}

const write = (path: string, content: string) => ({
  name: "filesystem__write_file",
  args: { path, content },
});

describe("agent run in a subdirectory of the project", () => {
  it("uses the project's agent.hcl, roots, policies and .agent/ approvals, working in the subdirectory", async () => {
    const repo = repository("run-sub");
    const src = join(repo, "src");
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          write("here.txt", "in src"), // relative to the working directory
          write("../top.txt", "at the top"), // inside the project's root ".", allowed by its policy
          write("../agent.hcl", "# taken over"), // the kernel's own file, found upward
          write("../.agent/policy.auto.hcl", "# taken over"),
        ],
      },
      {
        kind: "tool_calls",
        calls: [
          { name: "filesystem__edit_file", args: { path: "../top.txt", old_str: "top", new_str: "edge" } },
        ],
      },
      { kind: "text", text: "done" },
    );
    const r = await agent(["run", "-p", "edit", "--output-format", "stream-json"], { cwd: src, env });
    const recs = records(r.stdout);
    const init = recs.find((x) => x["type"] === "init");
    expect(init?.["cwd"], r.stdout + r.stderr).toBe(src);
    const decisions = recs.filter((x) => x["type"] === "plan_decision");
    const decision = (tool: string, p: string) =>
      decisions.find((d) => {
        const call = recs.find((c) => c["type"] === "tool_call" && c["tool_call_id"] === d["tool_call_id"]);
        return call?.["tool_name"] === tool && (call["input"] as { path?: string }).path === p;
      });
    const shown = JSON.stringify(decisions, null, 1);
    expect(decision("write_file", "here.txt")?.["policy_rule"], shown).toBe("project_allows_writes");
    expect(decision("write_file", "../top.txt")?.["policy_rule"], shown).toBe("project_allows_writes");
    expect(decision("edit_file", "../top.txt")?.["policy_rule"], shown).toBe(
      "always:default:filesystem.edit_file",
    );
    expect(readFileSync(join(src, "here.txt"), "utf8")).toBe("in src");
    expect(readFileSync(join(repo, "top.txt"), "utf8")).toBe("at the edge");
    // Protected although the project's policy allows every write_file.
    expect(decision("write_file", "../agent.hcl")?.["decision"], shown).toBe("deny");
    expect(decision("write_file", "../.agent/policy.auto.hcl")?.["decision"], shown).toBe("deny");
    expect(readFileSync(join(repo, "agent.hcl"), "utf8")).toBe(PROJECT_HCL);
    expect(readFileSync(join(repo, ".agent", "policy.auto.hcl"), "utf8")).toBe(ALWAYS);
    // No second .agent/ in the working directory.
    expect(existsSync(join(src, ".agent"))).toBe(false);
    expect(r.stderr).toContain(`agent: using ${join(repo, "agent.hcl")}`);
    // The two refused writes make it a run with denials (exit 4).
    expect(r.code, r.stderr).toBe(4);
  }, 60_000);
});

describe("agent validate from a subdirectory, and the repository boundary", () => {
  it("checks the project's agent.hcl, and stops at a nested repository's root", async () => {
    const repo = repository("validate-sub");
    const deep = join(repo, "src", "a", "b");
    mkdirSync(deep, { recursive: true });
    // A nested repository (a vendored checkout) with no agent.hcl of its own.
    const nested = join(repo, "vendor", "lib");
    mkdirSync(join(nested, "src"), { recursive: true });
    expect(spawnSync("git", ["init", "-q", nested]).status).toBe(0);
    const [v, inner] = await Promise.all([
      agent(["validate"], { cwd: deep, env }),
      agent(["validate"], { cwd: join(nested, "src"), env }),
    ]);
    expect(v.stdout).toContain(`Checking ${join(repo, "agent.hcl")}`);
    expect(v.stdout).toContain("Valid (2 providers checked)");
    expect(v.code, v.stdout).toBe(0);
    // The outer project's agent.hcl is not the nested repository's.
    expect(inner.stdout).not.toContain(join(repo, "agent.hcl"));
    expect(inner.stdout).toContain(`No agent.hcl in ${join(nested, "src")} or above it`);
    expect(inner.code, inner.stdout).toBe(0);
  }, 60_000);
});
