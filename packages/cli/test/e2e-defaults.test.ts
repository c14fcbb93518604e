// What a project gets without writing any HCL (issue 34, point 1): zero-config and the
// agent.hcl `agent init` writes both offer sub-agents (an explorer that only reads and a
// worker), memory, git in a repository and LSP diagnostics when the project's language
// server is on PATH; a spawn of the explorer runs without asking, and a change asks (so a
// `--headless-ask deny` run refuses it, naming the rule that asked and how to change that).
// The real binary, real plugins, the loopback fake Anthropic and real session files.
import { execFileSync } from "node:child_process";
import { chmodSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let env: NodeJS.ProcessEnv;
const fakes: FakeVendor[] = [];

interface Tool {
  name: string;
  input_schema: { properties?: Record<string, { enum?: string[] }> };
}
const toolsOf = (fake: FakeVendor, i: number) =>
  ((fake.requests[i]!.json as { tools?: Tool[] }).tools ?? []) as Tool[];

/** A Go project in a git repository, with a stand-in `gopls` on PATH (never started here). */
function goProject(name: string): string {
  const repo = sb.repo(name);
  rmSync(join(repo, "agent.hcl"));
  writeFileSync(join(repo, "go.mod"), "module example.com/demo\n\ngo 1.19\n");
  execFileSync("git", ["init", "-q", repo]);
  return repo;
}

beforeAll(() => {
  sb = sandbox();
  const bin = sb.dir("bin");
  writeFileSync(join(bin, "gopls"), "#!/bin/sh\nexit 1\n");
  chmodSync(join(bin, "gopls"), 0o755);
  env = { ...sb.env, PATH: `${bin}:${sb.env["PATH"]}`, ANTHROPIC_API_KEY: "sk-ant-test" };
});

afterAll(async () => {
  for (const f of fakes) await f.close();
  sb?.cleanup();
});

/** One headless run: spawn the explorer (which reads calc.js), then try to write a file. */
async function spawnThenWrite(repo: string, fake: FakeVendor) {
  fake.push(
    {
      kind: "tool_calls",
      text: "Delegating.",
      calls: [
        {
          name: "agent__spawn_subagent",
          args: { profile: "explorer", prompt: "Read calc.js and say what add() does." },
        },
      ],
    },
    {
      kind: "tool_calls",
      text: "Reading.",
      calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }],
    },
    { kind: "text", text: "add() subtracts its arguments." },
    {
      kind: "tool_calls",
      text: "Writing the notes.",
      calls: [{ name: "filesystem__write_file", args: { path: "notes.txt", content: "add subtracts\n" } }],
    },
    { kind: "text", text: "Could not write the notes." },
  );
  const r = await agent(
    ["run", "-p", "What does add() do?", "--output-format", "stream-json", "--headless-ask", "deny"],
    { cwd: repo, env: { ...env, ANTHROPIC_BASE_URL: fake.url } },
  );
  return { ...r, recs: records(r.stdout) };
}

function expectDefaults(fake: FakeVendor, run: Awaited<ReturnType<typeof spawnThenWrite>>) {
  expect(fake.requests).toHaveLength(5);
  const offered = toolsOf(fake, 0);
  const names = offered.map((t) => t.name);
  // Sub-agents with the two built-in profiles, memory, git (a repository), LSP (gopls on PATH).
  const spawn = offered.find((t) => t.name === "agent__spawn_subagent");
  expect(spawn?.input_schema.properties?.["profile"]?.enum).toEqual(["explorer", "worker"]);
  expect(names).toEqual(expect.arrayContaining(["memory__remember", "memory__search"]));
  expect(names).toEqual(expect.arrayContaining(["git__git_status", "git__git_commit"]));
  expect(names).toContain("lsp__diagnostics");
  // The explorer is offered only tools that read.
  const child = toolsOf(fake, 1).map((t) => t.name);
  expect(child).toContain("filesystem__read_file");
  expect(child).toContain("lsp__diagnostics");
  for (const writer of ["filesystem__write_file", "exec__bash", "git__git_commit", "agent__spawn_subagent"])
    expect(child).not.toContain(writer);
  // The spawn ran without asking and the child answered from its own read.
  const sub = run.recs.filter((x) => x["type"] === "subagent");
  expect(sub.at(-1)).toMatchObject({ status: "completed", profile: "explorer" });
  expect(JSON.stringify(fake.requests[3]!.json)).toContain("add() subtracts its arguments.");
  // Memory's changing context comes after the static context: no prompt-cache warning.
  const log = readFileSync(join(env["XDG_STATE_HOME"]!, "agent", "agent.log"), "utf8");
  expect(log).not.toContain("context_stability_order");
  // The write asked; headless deny refused it, saying which rule asked and how to change it.
  const decision = run.recs.find((x) => x["type"] === "plan_decision" && x["tool_name"] === "write_file");
  expect(decision).toMatchObject({ decision: "deny", decided_by: "headless:deny", policy_decision: "ask" });
  return decision!;
}

describe("the defaults a project gets", () => {
  it("zero-config: sub-agents, memory, git and LSP; the explorer runs, a change asks", async () => {
    const repo = goProject("zero");
    const fake = await startFakeVendor({ vendor: "anthropic", script: [] });
    fakes.push(fake);
    const run = await spawnThenWrite(repo, fake);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(4);
    const decision = expectDefaults(fake, run);
    const message = JSON.stringify(decision);
    expect(message).toContain("the default policy");
    expect(message).toContain("--headless-ask allow");
    expect(message).toContain('action = \\"allow\\"');
  });

  it("agent init: the same, and its policies ask instead of refusing", async () => {
    const repo = goProject("init");
    const fake = await startFakeVendor({ vendor: "anthropic", script: [] });
    fakes.push(fake);
    const init = await agent(["init"], { cwd: repo, env: { ...env, ANTHROPIC_BASE_URL: fake.url } });
    expect(init.stderr).toBe("");
    expect(init.code).toBe(0);
    expect(init.stdout).toContain("sub-agents: explorer, worker");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8");
    expect(hcl).not.toMatch(/^\s*action\s*=\s*"deny"/m);
    expect(hcl).toContain('servers    = { "go" = "gopls" }');
    expect(hcl).toContain('source  = "github.com/pluggableharness/provider-widgets"');
    // The loopback vendor stands in for Anthropic's API: init writes the base URL it found.
    expect(hcl).toContain('api_key = env("ANTHROPIC_API_KEY")');
    expect(hcl).toMatch(/base_url += env\("ANTHROPIC_BASE_URL"\)/);
    const run = await spawnThenWrite(repo, fake);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(4);
    const decision = expectDefaults(fake, run);
    expect(decision["policy_rule"]).toBe("ask_before_changes");
    expect(JSON.stringify(decision)).toContain('policy rule \\"ask_before_changes\\" asks before this call');
    expect(JSON.stringify(decision)).toContain("--headless-ask allow");
  });
});
