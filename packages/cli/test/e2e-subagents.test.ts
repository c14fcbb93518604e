// End-to-end sub-agents: the real `agent` binary, the first-party agent provider and a
// loopback fake Anthropic. The parent delegates to an "explorer" sub-agent, which reads a
// file and answers; then `agent sessions list` shows the tree and `sessions show` /
// `sessions replay` of the parent include the child's transcript (issue 20, point 7).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

const HCL = `
required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  filesystem = {
    source  = "pluggableharness/filesystem"
    version = ">= 0.1.0"
  }
  agent = {
    source  = "pluggableharness/agent"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "filesystem" {
  roots = [env("FIXTURE_ROOT")]
}

provider "agent" {
  profiles = { explorer = "reads the code and reports what it finds" }
}

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

policy "allow_spawns" {
  match  = { provider = "agent" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["agent.*"]
  max_turns = 10
}

agent_profile "explorer" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["filesystem.read_file"]
}
`;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("sub-agents through the CLI", () => {
  it("runs a child, lists the tree, and shows and replays the parent with its child", async () => {
    // One child, so the fake vendor's queue is answered in this order.
    fake.push(
      {
        kind: "tool_calls",
        text: "Delegating.",
        calls: [
          {
            name: "agent__spawn_subagent",
            args: {
              profile: "explorer",
              prompt: "Read calc.js and say what add() does.",
              description: "read calc",
            },
          },
        ],
      },
      {
        kind: "tool_calls",
        text: "Reading.",
        calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }],
      },
      { kind: "text", text: "add() subtracts its arguments." },
      { kind: "text", text: "The explorer found that add() subtracts." },
    );
    const r = await agent(["run", "-p", "What does add() do?", "--output-format", "stream-json"], {
      cwd: repo,
      env,
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const recs = records(r.stdout);
    const parent = String(recs[0]!["session_id"]);
    expect(fake.requests).toHaveLength(4);
    // stream-json reports the child's progress: started, working, completed.
    const sub = recs.filter((x) => x["type"] === "subagent");
    expect(sub.map((x) => x["status"])).toContain("running");
    expect(sub.at(-1)).toMatchObject({
      status: "completed",
      profile: "explorer",
      depth: 1,
      parent_session_id: parent,
    });
    expect(sub.some((x) => x["activity"] === "calling filesystem.read_file")).toBe(true);
    // The child's request holds only its prompt: a fresh context, not the parent's history.
    const childFirst = fake.requests[1]!.json as { messages: { role: string; content: unknown }[] };
    expect(childFirst.messages).toHaveLength(1);
    expect(JSON.stringify(childFirst.messages[0])).toContain("Read calc.js and say what add() does.");
    expect(JSON.stringify(childFirst.messages)).not.toContain("What does add() do?");
    // The parent's second request carries the child's final answer as the tool result.
    expect(JSON.stringify(fake.requests[3]!.json)).toContain("add() subtracts its arguments.");

    const list = await agent(["sessions", "list", "--json"], { cwd: repo, env });
    expect(list.code).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(2);
    const child = rows.find((x) => x["parent_session_id"] === parent)!;
    expect(child).toMatchObject({ profile: "explorer", status: "completed", depth: 1 });
    // The table puts the child under its parent.
    const table = (await agent(["sessions", "list"], { cwd: repo, env })).stdout.split("\n");
    const at = table.findIndex((l) => l.startsWith(parent));
    expect(at).toBeGreaterThan(0);
    expect(table[at + 1]).toMatch(new RegExp(`^└─ ${child["session_id"]}\\s`));

    const [show, replay, alone] = await Promise.all([
      agent(["sessions", "show", parent], { cwd: repo, env }),
      agent(["sessions", "replay", parent], { cwd: repo, env }),
      agent(["sessions", "show", parent, "--no-children"], { cwd: repo, env }),
    ]);
    const heading = `── sub-agent ${child["session_id"]} · explorer · completed · spawned by ${parent} ──`;
    for (const out of [show, replay]) {
      expect(out.stderr).toBe("");
      expect(out.code).toBe(0);
      expect(out.stdout).toContain(heading);
      const [before, after] = out.stdout.split(heading);
      // The parent's transcript, then the child's: its read and its answer.
      expect(before).toContain("The explorer found that add() subtracts.");
      expect(after).toContain("add() subtracts its arguments.");
      expect(after).toContain("calc.js");
    }
    expect(alone.stdout).not.toContain("── sub-agent");
  });
});
