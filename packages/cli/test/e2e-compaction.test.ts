// End-to-end compaction through the real `agent` binary and first-party plugins: a headless
// run with --compact-at compacts its conversation (the summary call booked in the ledger),
// `agent sessions replay` reproduces what was rendered live byte for byte, compaction
// included, and --resume continues from the compacted history.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, type RecordedRequest, startFakeVendor } from "@pluggableharness/fake-vendors";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;
let sessionId = "";
let live: string[] = [];

const HCL = `
required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  compactor  = { source = "pluggableharness/compactor", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_URL")
}

provider "filesystem" {
  roots = [env("FIXTURE_ROOT")]
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
  tools     = ["filesystem.*"]
  max_turns = 40
}
`;

const isSummary = (r: RecordedRequest) => r.bodyText.includes("The conversation so far:");
const sessionsDir = () => join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  for (let i = 0; i < 4; i++)
    writeFileSync(join(repo, `part-${i}.txt`), `part ${i}\n${"some text here ".repeat(60)}\n`);
  let turn = 0;
  fake = await startFakeVendor({
    vendor: "anthropic",
    validate: true,
    script: (r) => {
      if (isSummary(r)) return { kind: "text", text: "Summary: the parts were read in turn." };
      const n = turn++;
      if (n === 10) return { kind: "text", text: "All parts read." };
      if (n === 11) return { kind: "text", text: "Resumed: carrying on." };
      return {
        kind: "tool_calls",
        calls: [{ name: "filesystem__read_file", args: { path: `part-${n % 4}.txt` } }],
      };
    },
  });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_URL: fake.url, FIXTURE_ROOT: repo };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("compaction end to end", () => {
  it("--compact-at compacts a headless run; the summary call is in the cost ledger", async () => {
    const r = await agent(
      [
        "run",
        "-p",
        "Read the parts in turn.",
        "--compact-at",
        "2000",
        "--output-format",
        "stream-json",
        "--verbose",
      ],
      { cwd: repo, env },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const recs = records(r.stdout);
    sessionId = String(recs[0]!["session_id"]);
    live = recs.filter((x) => x["type"] === "render").map((x) => String(x["text"]));
    expect(recs.at(-1)).toMatchObject({ type: "result", subtype: "success", result: "All parts read." });
    const summaries = fake.requests.filter(isSummary);
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    expect(live.some((t) => t.startsWith("Compacted the conversation (threshold, by compactor)"))).toBe(true);
    const reader = openSessionReader(sessionId, { dir: sessionsDir() });
    try {
      const ledger = reader.costLedger();
      // One row per model call: the main turns and the summaries.
      expect(ledger).toHaveLength(fake.requests.length);
    } finally {
      reader.close();
    }
    // A bad --compact-at is a usage error that names the flag.
    const bad = await agent(["run", "-p", "x", "--compact-at", "lots"], { cwd: repo, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--compact-at");
  });

  it("sessions replay reproduces the live rendering byte for byte, compaction included", async () => {
    // stream-json is sent every render, context contributions included: --verbose replays those.
    const r = await agent(["sessions", "replay", sessionId, "--verbose"], { cwd: repo, env });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${live.join("\n\n")}\n`);
    expect(r.stdout).toContain("Summary of the earlier conversation (compaction)");
    expect(r.stdout).toContain("Context from compactor");
    // Without it, the compact transcript a terminal shows: the same renders less those.
    const compact = await agent(["sessions", "replay", sessionId], { cwd: repo, env });
    expect(compact.code).toBe(0);
    expect(compact.stdout).toBe(`${live.filter((t) => !t.startsWith("▸ Context from")).join("\n\n")}\n`);
  });

  it("--resume continues from the compacted history", async () => {
    const before = fake.requests.length;
    const r = await agent(["run", "--resume", sessionId, "-p", "Go on.", "--output-format", "json"], {
      cwd: repo,
      env,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "Resumed: carrying on." });
    const sent = fake.requests[before]!.json as { messages: Array<{ role: string; content: unknown }> };
    expect(JSON.stringify(sent.messages[0])).toContain("[Compacted conversation]");
    expect(JSON.stringify(sent.messages[0])).toContain("Summary: the parts were read in turn.");
    expect(JSON.stringify(sent.messages.at(-1))).toContain("Go on.");
  });
});
