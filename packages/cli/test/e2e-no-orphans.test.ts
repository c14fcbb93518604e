// No orphans, end to end: a real `agent run` whose bash call starts a process tree. When
// the exec plugin is SIGKILLed mid-call the tree dies with it and the session goes on;
// when the agent itself is SIGKILLed, everything it started is gone shortly after.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, processesIn, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

/** A command whose tree (a subshell with children, background jobs) records its pids, then waits. */
function treeCommand(dir: string): string {
  const pids = join(dir, "tree.pids");
  return [
    `(sleep 311 & echo $! >> ${pids}; sleep 312 & echo $! >> ${pids}; wait) &`,
    `echo $! >> ${pids}`,
    `nohup sleep 313 >/dev/null 2>&1 & echo $! >> ${pids}`,
    `echo $$ >> ${pids}`,
    `touch ${join(dir, "tree.ready")}`,
    "wait",
  ].join("\n");
}

async function until(what: string, check: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function start(repo: string, env: NodeJS.ProcessEnv) {
  const child = spawn(AGENT_BIN, ["run", "-p", "run it", "--headless-ask", "allow"], {
    cwd: repo,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { child, exited, stdout: () => stdout };
}

describe("no orphans", () => {
  it("kills a bash call's whole tree when the exec plugin is SIGKILLed; the session carries on", async () => {
    const repo = sb.repo("plugin-killed");
    // exec in a process of its own, to have something to kill: as root it would otherwise be
    // a worker thread of the kernel (it runs outside the plugin sandbox there, see
    // docs/security/sandbox-privileges.md). The two tests below keep the default.
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8");
    const withProcess = hcl.replace(
      /(exec = \{\n\s*source\s*= "pluggableharness\/exec")/,
      '$1\n    isolation = "process"',
    );
    expect(withProcess).not.toBe(hcl);
    writeFileSync(join(repo, "agent.hcl"), withProcess);
    fake.push(
      { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: treeCommand(repo) } }] },
      { kind: "text", text: "the tool crashed; carrying on" },
    );
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const run = start(repo, env);
    // The background subshell records its children on its own schedule.
    const lines = () => readFileSync(join(repo, "tree.pids"), "utf8").trim().split("\n");
    await until("the command tree", () => existsSync(join(repo, "tree.ready")) && lines().length === 5);
    // Inside the sandbox the pids are the command's own PID namespace's: the exec plugin is
    // found by what it runs, among the processes in the project.
    const exec = processesIn(repo).find((p) => /providers\/exec\/(src\/main\.ts|.*main\.mjs)/.test(p));
    expect(exec).toBeDefined();
    const plugin = Number(exec!.split(":")[0]);
    process.kill(plugin, "SIGKILL");
    expect(await run.exited).toBe(0);
    expect(run.stdout()).toContain("carrying on");
    expect(processesIn(repo)).toEqual([]);
  });

  it("leaves nothing alive after the agent itself is SIGKILLed mid-call", async () => {
    const repo = sb.repo("agent-killed");
    fake.push({ kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: treeCommand(repo) } }] });
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const run = start(repo, env);
    await until("the command tree", () => existsSync(join(repo, "tree.ready")));
    run.child.kill("SIGKILL");
    await run.exited;
    // Plugins notice their parent is gone (within a second) and take their commands down.
    await until("every process the agent started to end", () => processesIn(repo).length === 0, 10_000);
    expect(processesIn(repo)).toEqual([]);
  });
  it("leaves no background process alive after the agent is SIGKILLed", async () => {
    const repo = sb.repo("agent-killed-background");
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "exec__background_start",
            args: { command: `sleep 321 & sleep 322 & touch ${join(repo, "bg.ready")}; wait` },
          },
        ],
      },
      {
        kind: "tool_calls",
        calls: [{ name: "exec__bash", args: { command: `touch ${join(repo, "fg.ready")}; sleep 60` } }],
      },
    );
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const run = start(repo, env);
    await until(
      "the background process and the next call",
      () => existsSync(join(repo, "bg.ready")) && existsSync(join(repo, "fg.ready")),
    );
    run.child.kill("SIGKILL");
    await run.exited;
    await until("every process the agent started to end", () => processesIn(repo).length === 0, 10_000);
    expect(processesIn(repo)).toEqual([]);
  });
});
