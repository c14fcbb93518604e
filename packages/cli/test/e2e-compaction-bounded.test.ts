// Compaction never runs away (issue 34, point 7): with a 16k window and a summary call that
// always fails, the real binary never sends a request larger than the window, makes a
// bounded number of summary calls, falls back to dropping the oldest turns with a note, and
// the session finishes its task.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { type FakeVendor, type RecordedRequest, startFakeVendor } from "@pluggableharness/fake-vendors";
import { CompactionEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { records, agent as run, type Sandbox, sandbox } from "./helpers.ts";
import { installedAgent } from "./installed.ts";

// Against the packed CLI installed globally, as a user has it.
let bin: string;
const agent = (args: readonly string[], o: Parameters<typeof run>[1]) => run(args, { ...o, bin });

const WINDOW = 16_000;
const FILES = 10;

const HCL = `
required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  compactor  = { source = "pluggableharness/compactor", version = ">= 0.1.0" }
}

settings {
  compaction {
    context_window = ${WINDOW}
  }
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

const isSummary = (r: RecordedRequest) =>
  r.bodyText.includes("The conversation so far:") ||
  r.bodyText.includes("Summary of the conversation before this part:");
const sessionsDir = () => join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");
/** The request's size as the vendor would count it, roughly: its body's bytes / 4. */
const tokensOf = (r: RecordedRequest) => Math.ceil(Buffer.byteLength(r.bodyText) / 4);

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  // Each file is about 2,500 tokens: the conversation outgrows the window after a few reads.
  for (let i = 0; i < FILES; i++)
    writeFileSync(
      join(repo, `part-${i}.txt`),
      Array.from(
        { length: 160 },
        (_, l) => `part ${i}, line ${l}: some words of text to fill the window.`,
      ).join("\n"),
    );
  let turn = 0;
  fake = await startFakeVendor({
    vendor: "anthropic",
    script: (r) => {
      const usage = { inputTokens: tokensOf(r), outputTokens: 20 };
      if (isSummary(r))
        return {
          kind: "error",
          status: 500,
          errorType: "api_error",
          message: "the summariser is down",
          shouldRetry: false,
        };
      const n = turn++;
      if (n >= FILES) return { kind: "text", text: "All parts read.", usage };
      return {
        kind: "tool_calls",
        calls: [{ name: "filesystem__read_file", args: { path: `part-${n}.txt` } }],
        usage,
      };
    },
  });
  const inst = await installedAgent();
  bin = inst.bin;
  env = inst.env({ ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_URL: fake.url, FIXTURE_ROOT: repo });
}, 330_000);

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("compaction that cannot summarise", () => {
  it("never sends more than the window, bounds the summary calls, drops the oldest turns and goes on", async () => {
    const r = await agent(["run", "-p", "read every part file in turn", "--output-format", "stream-json"], {
      cwd: repo,
      env,
      timeoutMs: 120_000,
    });
    const out = records(r.stdout);
    const result = out.find((x) => x["type"] === "result")!;
    const summaries = fake.requests.filter(isSummary);
    const turns = fake.requests.filter((x) => !isSummary(x));
    const largest = Math.max(...fake.requests.map(tokensOf));
    // Shown whatever fails, to make a failure readable.
    console.log(
      `requests ${fake.requests.length}, summaries ${summaries.length}, largest ~${largest} tokens, exit ${r.code}, result ${JSON.stringify(result?.["subtype"])} ${String(result?.["result"] ?? "").slice(0, 200)}`,
    );
    expect(largest).toBeLessThanOrEqual(WINDOW);
    expect(summaries.length).toBeLessThanOrEqual(4);
    expect(turns.length).toBe(FILES + 1);
    expect(r.code).toBe(0);
    expect(result["result"]).toBe("All parts read.");
    // The model is told what was dropped, and what the session was first asked.
    const after = turns.filter((x) =>
      x.bodyText.includes("oldest messages of this conversation were dropped"),
    );
    expect(after.length).toBeGreaterThan(0);
    expect(after.at(-1)!.bodyText).toContain("read every part file in turn");
    // The drop is a compaction of the session file, by the kernel.
    const reader = openSessionReader(String(result["session_id"]), { dir: sessionsDir() });
    try {
      const compactions = [...reader.events()]
        .filter((e) => e.kind === EventKind.COMPACTION)
        .map((e) => fromBinary(CompactionEventSchema, e.payload));
      expect(compactions.length).toBeGreaterThan(0);
      expect(compactions.every((c) => c.compactor === "kernel (oldest turns dropped)")).toBe(true);
    } finally {
      reader.close();
    }
  }, 150_000);
});
