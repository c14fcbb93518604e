// End to end (issue 26): a scripted model on the validating fake vendor drives every new
// operation through the real `agent run -p` and the first-party plugins — apply_patch,
// edit_files and notebook_edit, then git against a real repository made here: status,
// stage, commit, branch, switch, diff, log, show, blame, stash and push. Changes go through
// the plan/apply gate (asked, answered "allow" headless), and the disk and the repository
// show each one.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const HCL = `
required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  git        = { source = "pluggableharness/git", version = ">= 0.1.0" }
}
provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_URL")
}
provider "filesystem" {
  roots = [env("FIXTURE_ROOT")]
}
provider "git" {
  roots = [env("FIXTURE_ROOT"), env("REMOTE_ROOT")]
}
policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}
policy "ask_changes" {
  match  = { kind = "resource" }
  action = "ask"
}
agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["filesystem.*", "git.*"]
  max_turns = 30
}
`;

const NOTEBOOK = `${JSON.stringify(
  {
    cells: [{ cell_type: "markdown", id: "top", metadata: {}, source: ["# Notes"] }],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5,
  },
  null,
  1,
)}\n`;

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let remote: string;

const g = (cwd: string, ...a: string[]) => execFileSync("git", a, { cwd, encoding: "utf8", stdio: "pipe" });

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  writeFileSync(join(repo, "notes.ipynb"), NOTEBOOK);
  writeFileSync(join(repo, ".gitignore"), ".agent/\n");
  g(repo, "init", "-q", "-b", "main");
  g(repo, "config", "user.name", "Agent Test");
  g(repo, "config", "user.email", "agent@example.com");
  g(repo, "add", "-A");
  g(repo, "commit", "-q", "-m", "initial");
  remote = join(sb.dir("remotes"), "origin.git");
  mkdirSync(remote);
  g(remote, "init", "-q", "--bare");
  g(repo, "remote", "add", "origin", remote);
  fake = await startFakeVendor({ vendor: "anthropic", validate: true });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const PATCH = [
  "*** Begin Patch",
  "*** Update File: calc.js",
  "@@",
  "-function add(a, b) {",
  "+function sum(a, b) {",
  "*** Add File: lib/util.js",
  "+export const twice = (x) => 2 * x;",
  "*** Update File: test.js",
  "*** Move to: tests/calc.test.js",
  "*** End Patch",
].join("\n");

describe("the tool catalog, driven by a model through agent run -p", () => {
  it("patches, notebooks and git, each call through the gate and visible on disk", async () => {
    const steps: Array<[string, Record<string, unknown>]> = [
      ["filesystem__apply_patch", { patch: PATCH }],
      [
        "filesystem__edit_files",
        {
          changes: [
            { path: "lib/util.js", action: "edit", edits: [{ old_str: "2 * x", new_str: "x + x" }] },
            { path: "docs/CHANGES.md", action: "create", content: "- renamed add to sum\n" },
          ],
        },
      ],
      [
        "filesystem__notebook_edit",
        { path: "notes.ipynb", mode: "insert", cell_id: "top", source: "print('hi')" },
      ],
      ["git__git_status", {}],
      ["git__git_stage", { all: true }],
      ["git__git_commit", { message: "Rename add to sum and add util" }],
      ["git__git_branch_create", { name: "feature" }],
      ["git__git_switch", { branch: "feature" }],
      [
        "filesystem__apply_patch",
        { patch: "*** Begin Patch\n*** Add File: feature.txt\n+feature\n*** End Patch" },
      ],
      ["git__git_stage", { paths: ["feature.txt"] }],
      ["git__git_commit", { message: "Feature file" }],
      ["git__git_diff", { from: "main", to: "feature" }],
      ["git__git_log", { max_count: 5 }],
      ["git__git_show", { rev: "main", path: "lib/util.js" }],
      ["git__git_blame", { path: "calc.js" }],
      ["filesystem__notebook_edit", { path: "notes.ipynb", mode: "delete", index: 1 }],
      ["git__git_stash", { action: "push", message: "wip notebook" }],
      ["git__git_stash", { action: "pop" }],
      ["git__git_push", { set_upstream: true }],
    ];
    for (const [name, args] of steps) fake.push({ kind: "tool_calls", calls: [{ name, args }] });
    fake.push({ kind: "text", text: "All done." });
    const r = await agent(
      ["run", "-p", "refactor and publish", "--output-format", "stream-json", "--headless-ask", "allow"],
      {
        cwd: repo,
        env: {
          ...sb.env,
          ANTHROPIC_API_KEY: "sk-ant-test",
          FAKE_URL: fake.url,
          FIXTURE_ROOT: repo,
          REMOTE_ROOT: join(sb.home, "remotes"),
        },
        timeoutMs: 180_000,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    const recs = records(r.stdout);
    const results = recs.filter((x) => x["type"] === "tool_result");
    expect(results.map((x) => [x["tool_name"], x["error"]])).toEqual(
      steps.map(([n]) => [n.split("__")[1], undefined]),
    );
    // Every change was asked about (and allowed), every read ran without asking.
    const decisions = recs.filter((x) => x["type"] === "plan_decision");
    const resources = steps.filter(([n]) => !/git_(status|diff|log|show|blame)$/.test(n)).length;
    expect(decisions).toHaveLength(resources);
    for (const d of decisions) expect(d["decided_by"]).toBe("headless:allow");
    const out = (tool: string) =>
      results.filter((x) => x["tool_name"] === tool).map((x) => x["result"] as Record<string, unknown>);

    // apply_patch + edit_files: one atomic change each, on disk.
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("function sum(a, b) {");
    expect(existsSync(join(repo, "test.js"))).toBe(false);
    expect(existsSync(join(repo, "tests/calc.test.js"))).toBe(true);
    expect(readFileSync(join(repo, "lib/util.js"), "utf8")).toBe("export const twice = (x) => x + x;\n");
    expect(out("apply_patch")[0]!["summary"]).toMatch(
      /updated calc\.js.*\ncreated lib\/util\.js.*\nmoved test\.js -> tests\/calc\.test\.js/,
    );
    // notebook_edit: inserted, later deleted (and stashed and popped) — the file is the original again.
    expect(out("notebook_edit")[0]).toMatchObject({ index: 1, cell_type: "code", total_cells: 2 });
    // Committed with the inserted cell; the cell deleted again: byte for byte the original.
    expect(JSON.parse(g(repo, "show", "main:notes.ipynb")).cells).toHaveLength(2);
    expect(readFileSync(join(repo, "notes.ipynb"), "utf8")).toBe(NOTEBOOK);
    // git: the commits, the branch, the read results, the stash round trip, the push.
    expect(g(repo, "log", "--format=%s", "main")).toBe("Rename add to sum and add util\ninitial\n");
    expect(g(repo, "log", "--format=%s", "feature")).toBe(
      "Feature file\nRename add to sum and add util\ninitial\n",
    );
    expect(g(repo, "branch", "--show-current")).toBe("feature\n");
    expect(String(out("git_status")[0]!["output"])).toMatch(/^## main\n M calc\.js\n.*\?\? lib\/util\.js/s);
    expect(String(out("git_diff")[0]!["output"])).toContain("+++ b/feature.txt");
    expect(String(out("git_log")[0]!["output"])).toContain("    Feature file");
    expect(out("git_show")[0]!["output"]).toBe("export const twice = (x) => x + x;\n");
    expect(String(out("git_blame")[0]!["output"])).toMatch(/Agent Test .*function sum/);
    expect(out("git_stash").map((x) => x["files"])).toEqual([["notes.ipynb"], ["notes.ipynb"]]);
    expect(g(repo, "stash", "list")).toBe("");
    expect(g(repo, "status", "--porcelain")).toBe(" M notes.ipynb\n");
    expect(g(remote, "rev-parse", "refs/heads/feature")).toBe(g(repo, "rev-parse", "feature"));
    expect(out("git_push")[0]).toMatchObject({ remote: "origin", branch: "feature", commits: 3 });
    // The model saw each result: the last request carries the push's result.
    const last = JSON.stringify(fake.requests.at(-1)!.json);
    expect(last).toContain("refs/heads/feature");
  }, 240_000);
});
