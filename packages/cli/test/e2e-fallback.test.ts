// End-to-end: the fallback chain against validating fake vendors (Anthropic and Gemini on
// one port), through the real `agent` binary and first-party plugins. A model id the vendor
// does not serve (its 404) moves the turn to the next candidate, and that candidate is not
// tried again in the session; an Anthropic tool loop that falls back to Gemini 3 carries
// the placeholder thought signature Gemini 3 demands on calls it did not make.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

const HCL = `
required_providers {
  anthropic  = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  google     = { source = "pluggableharness/google", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_URL")
}

provider "google" {
  api_key  = env("GEMINI_API_KEY")
  base_url = env("FAKE_URL")
}

provider "filesystem" {
  roots = [env("FIXTURE_ROOT")]
}

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

# gemini-3.1-pro-preview is not served by this (fake) vendor: it answers 404.
agent_profile "retired" {
  model {
    primary {
      provider = "google"
      id       = "gemini-3.1-pro-preview"
    }
    fallback {
      provider = "google"
      id       = "gemini-3.8-flash"
    }
  }
  tools     = ["filesystem.*"]
  max_turns = 5
}

agent_profile "cross" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
    fallback {
      provider = "google"
      id       = "gemini-3.8-flash"
    }
  }
  tools     = ["filesystem.*"]
  max_turns = 5
}

settings {
  retry {
    base_delay_ms  = 0
    backoff_factor = 1
    max_retries    = 0
  }
}
`;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  fake = await startFakeVendor({
    vendor: "combined",
    validate: true,
    models: ["claude-sonnet-5", "gemini-3.8-flash"],
  });
  env = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    GEMINI_API_KEY: "AIza-test",
    FAKE_URL: fake.url,
    FIXTURE_ROOT: repo,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const read = { name: "filesystem__read_file", args: { path: "calc.js" } };

describe("fallback chain against the vendors' real refusals", () => {
  it("a model the vendor does not serve (404) moves to the next candidate, once per session", async () => {
    const before = fake.requests.length;
    fake.pushFor("gemini", { kind: "tool_calls", calls: [read] }, { kind: "text", text: "It adds." });
    const r = await agent(
      ["run", "-p", "What does calc.js do?", "--profile", "retired", "--output-format", "json"],
      {
        cwd: repo,
        env,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ subtype: "success", result: "It adds." });
    const reqs = fake.requests.slice(before);
    expect(reqs.map((q) => q.model)).toEqual([
      "gemini-3.1-pro-preview",
      "gemini-3.8-flash",
      "gemini-3.8-flash",
    ]);
    expect(reqs[0]!.rejected).toMatchObject({ status: 404, errorType: "NOT_FOUND" });
    expect(reqs.slice(1).every((q) => q.rejected === undefined)).toBe(true);
    // The file reaches the model as its lines (read_file's model_text_field), not as JSON
    // with escaped newlines; the rest of the payload is one compact line before it.
    const sent = JSON.stringify(reqs[2]!.json);
    const contents = (reqs[2]!.json as { contents: Array<{ parts: Array<Record<string, unknown>> }> })
      .contents;
    const response = contents.flatMap((c) => c.parts).find((p) => p["functionResponse"])![
      "functionResponse"
    ] as {
      response: { output: string };
    };
    const [head, ...lines] = response.response.output.split("\n");
    expect(JSON.parse(head!)).toMatchObject({
      path: "calc.js",
      start_line: 1,
      total_lines: 6,
      truncated: false,
    });
    expect(lines).toEqual([
      "     1\t// Adds two numbers.",
      "     2\tfunction add(a, b) {",
      "     3\t  return a - b;",
      "     4\t}",
      "     5\t",
      "     6\tmodule.exports = { add };",
    ]);
    expect(sent).not.toContain('\\"content\\"');
  });

  it("an Anthropic tool loop that falls back to Gemini 3 sends the placeholder signature and is accepted", async () => {
    const before = fake.requests.length;
    fake.pushFor(
      "anthropic",
      { kind: "tool_calls", text: "Reading it.", calls: [read] },
      { kind: "error", status: 529 },
    );
    fake.pushFor("gemini", { kind: "text", text: "calc.js adds two numbers." });
    const r = await agent(
      ["run", "-p", "What does calc.js do?", "--profile", "cross", "--output-format", "json"],
      {
        cwd: repo,
        env,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: "calc.js adds two numbers." });
    const reqs = fake.requests.slice(before);
    expect(reqs.map((q) => [q.vendor, q.model])).toEqual([
      ["anthropic", "claude-sonnet-5"],
      ["anthropic", "claude-sonnet-5"],
      ["gemini", "gemini-3.8-flash"],
    ]);
    const gemini = reqs[2]!;
    expect(gemini.rejected).toBeUndefined();
    const contents = (
      gemini.json as { contents: Array<{ role: string; parts: Array<Record<string, unknown>> }> }
    ).contents;
    const model = contents.find((c) => c.role === "model" && c.parts.some((p) => p["functionCall"]))!;
    const call = model.parts.find((p) => p["functionCall"])!;
    expect(call["thoughtSignature"]).toBe("skip_thought_signature_validator");
    // The Anthropic call id is not Gemini's: it is not sent as one.
    expect(call["functionCall"]).toEqual({ name: "filesystem__read_file", args: { path: "calc.js" } });
  });
});
