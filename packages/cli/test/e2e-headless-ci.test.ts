// Headless runs as CI uses them (issue 34, points 8 and 9), on the real binary with the
// loopback fake Anthropic: a question nobody can answer does not fail a run, a sub-agent's
// spend is in the parent's totals and in `agent sessions list`, `-p` takes its prompt from
// stdin, Ctrl-C during start-up still ends with the result record and exit 4, and a silent
// vendor is waited on for settings.max_model_wait_ms in all, saying what is waited for.
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { records, agent as run, type Sandbox, sandbox } from "./helpers.ts";
import { installedAgent } from "./installed.ts";

// Against the packed CLI installed globally, as a user has it.
let bin: string;
const agent = (args: readonly string[], o: Parameters<typeof run>[1]) => run(args, { ...o, bin });

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
  user = {
    source  = "pluggableharness/user"
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

provider "agent" {
  profiles = { explorer = "reads the code and reports what it finds" }
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
  tools     = ["user.*", "agent.*"]
  max_turns = 10
}

agent_profile "explorer" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = []
}
`;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  writeFileSync(join(repo, "agent.hcl"), HCL);
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const inst = await installedAgent();
  bin = inst.bin;
  env = inst.env({
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  });
}, 330_000);

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const near = (a: unknown, b: number) => expect(Math.abs(Number(a) - b)).toBeLessThan(1e-9);

describe("headless runs as CI expects", () => {
  it("an unanswerable ask_user does not fail the run; a sub-agent's cost is in the totals", async () => {
    fake.push(
      {
        kind: "tool_calls",
        text: "Asking first.",
        calls: [{ name: "user__ask_user", args: { question: "Which database?" } }],
      },
      {
        kind: "tool_calls",
        text: "Delegating.",
        calls: [
          {
            name: "agent__spawn_subagent",
            args: { profile: "explorer", prompt: "Say what calc.js does.", description: "look" },
          },
        ],
      },
      { kind: "text", text: "calc.js has add()." },
      { kind: "text", text: "Done, assuming the default database." },
    );
    const r = await agent(
      ["run", "-p", "Set up the project", "--headless-ask", "allow", "--output-format", "stream-json"],
      { cwd: repo, env },
    );
    expect(r.stderr).toBe("");
    const recs = records(r.stdout);
    const result = recs.at(-1)!;
    // The question went unanswered, and the model was told to go on by itself.
    const asked = recs.find((x) => x["type"] === "tool_result" && x["tool_name"] === "ask_user")!;
    expect(asked["denied"]).toBe(false);
    expect(JSON.stringify(asked["error"])).toContain("No answer will come");
    expect(result).toMatchObject({
      type: "result",
      subtype: "success",
      exit_code: 0,
      permission_denials: [],
    });
    expect(r.code).toBe(0);

    // The child's spend is part of this run's total and of the session's, beside the own part.
    const parent = String(result["session_id"]);
    const list = await agent(["sessions", "list", "--json"], { cwd: repo, env });
    const rows = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    const child = rows.find((x) => x["parent_session_id"] === parent)!;
    const parentRow = rows.find((x) => x["session_id"] === parent)!;
    const childCost = Number(child["cost_usd"]);
    const ownCost = Number(parentRow["cost_usd"]);
    expect(childCost).toBeGreaterThan(0);
    near(result["own_cost_usd"], ownCost);
    near(result["total_cost_usd"], ownCost + childCost);
    near(result["session_own_cost_usd"], ownCost);
    near(result["session_cost_usd"], ownCost + childCost);
    near(parentRow["tree_cost_usd"], ownCost + childCost);
    near(child["tree_cost_usd"], childCost);
    const table = (await agent(["sessions", "list"], { cwd: repo, env })).stdout;
    expect(table.split("\n").find((l) => l.startsWith(parent))).toContain("(tree $");
  });

  it("takes the prompt from stdin with -p alone", async () => {
    fake.push({ kind: "text", text: "Read it." });
    const before = fake.requests.length;
    const r = await agent(["run", "-p", "--output-format", "json"], {
      cwd: repo,
      env,
      input: "Summarize the piped prompt\n",
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ subtype: "success", result: "Read it." });
    expect(JSON.stringify(fake.requests[before]!.json)).toContain("Summarize the piped prompt");
  });

  it("a first Ctrl-C during start-up still prints the result record and exits 4", async () => {
    const before = fake.requests.length;
    const cacheHome = sb.dir("ctrl-c-cache");
    const child = spawn(bin, ["run", "-p", "never sent", "--output-format", "json"], {
      cwd: repo,
      env: { ...env, XDG_CACHE_HOME: cacheHome },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    // The signal lands just after bin/start.mjs began: it turns the compile cache on (its
    // directory appears, in a cache home of this run's own) and then installs the handler,
    // before the CLI and the kernel load, so it always lands during start-up. A fixed
    // delay landed after start-up once providers started lazily.
    const compileCache = join(cacheHome, "agent", "node-compile-cache");
    for (const end = Date.now() + 20_000; !existsSync(compileCache) && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, 20));
    child.kill("SIGINT");
    // Bounded here, so a run that never ends fails with what it printed (and is not left behind).
    const hung = setTimeout(() => child.kill("SIGKILL"), 50_000);
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearTimeout(hung);
    expect({ code, stdout, stderr }).toMatchObject({ code: 4, stderr: "" });
    expect(JSON.parse(stdout)).toMatchObject({
      type: "result",
      subtype: "cancelled",
      is_error: true,
      exit_code: 4,
      detail: "interrupted during start-up; the prompt was not sent",
    });
    expect(fake.requests.length).toBe(before);
  }, 60_000);

  it("waits on a silent vendor for max_model_wait_ms in all, saying what it waits for; Ctrl-C ends the wait", async () => {
    const silent = await startFakeVendor({ vendor: "anthropic", script: [] });
    try {
      // Six silent attempts would be 6 × 1.5 s with retries; the total bound ends it at 2.5 s.
      silent.push(...Array.from({ length: 6 }, () => scenarios.stallBeforeHeaders()));
      const dir = sb.dir("silent");
      writeFileSync(
        join(dir, "agent.hcl"),
        `${HCL.replace(/agent_profile "explorer"[\s\S]*$/, "")}
settings {
  stream_idle_timeout_ms = 1500
  max_model_wait_ms      = 2500
  retry {
    base_delay_ms  = 200
    backoff_factor = 2
    max_retries    = 5
  }
}
`,
      );
      const t0 = Date.now();
      const r = await agent(["run", "-p", "hello", "--output-format", "stream-json"], {
        cwd: dir,
        env: { ...env, FAKE_ANTHROPIC_URL: silent.url, AGENT_NO_PRELAUNCH: "1" },
      });
      const recs = records(r.stdout);
      // What is waited for, while it is waited for.
      const notices = recs.filter((x) => x["type"] === "notice").map((x) => String(x["text"]));
      expect(
        notices.some((n) => n.startsWith("waiting for anthropic/claude-sonnet-5 to begin answering")),
      ).toBe(true);
      const failed = recs.find((x) => x["type"] === "turn_failed")!;
      expect(String(failed["message"])).toContain(
        "anthropic/claude-sonnet-5 did not begin answering within 2.5 s of waiting in all (settings.max_model_wait_ms)",
      );
      expect(r.code).toBe(1);
      expect(silent.requests.length).toBeLessThanOrEqual(2);
      expect(Date.now() - t0).toBeLessThan(15_000);

      // Ctrl-C ends the wait at once, long before any bound would.
      silent.releaseStalls();
      silent.push(scenarios.stallBeforeHeaders());
      writeFileSync(
        join(dir, "agent.hcl"),
        `${HCL.replace(/agent_profile "explorer"[\s\S]*$/, "")}
settings {
  stream_idle_timeout_ms = 2000
  max_model_wait_ms      = 60000
}
`,
      );
      const child = spawn(bin, ["run", "-p", "hello", "--output-format", "stream-json"], {
        cwd: dir,
        env: { ...env, FAKE_ANTHROPIC_URL: silent.url, AGENT_NO_PRELAUNCH: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      const noticed = new Promise<void>((resolve) => {
        child.stdout.setEncoding("utf8").on("data", (d: string) => {
          out += d;
          if (out.includes('"type":"notice"')) resolve();
        });
      });
      const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
      await noticed;
      const signalled = Date.now();
      child.kill("SIGINT");
      expect(await closed).toBe(4);
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(records(out).at(-1)).toMatchObject({ type: "result", subtype: "cancelled" });
    } finally {
      silent.releaseStalls();
      await silent.close();
    }
  });
});
