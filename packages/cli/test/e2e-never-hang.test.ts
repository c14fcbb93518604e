// Never hang: a configuration or start-up error ends `agent run` with status 1 and the
// message, headless and in a terminal, also once the directory has had a successful run
// (so the next run prelaunches plugin processes before it has even read agent.hcl), and
// every process the run started, prelaunched ones included, is gone when it exits.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { prelaunchPlanFile } from "@pluggableharness/runtime/prelaunch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, processesIn, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({
    vendor: "anthropic",
    script: [],
    whenExhausted: { kind: "text", text: "OK" },
  });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

interface Fault {
  readonly name: string;
  /** Breaks the run; the environment to run with. */
  readonly inject: (repo: string, env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
  /** What stderr must say. */
  readonly message: RegExp;
}

const FAULTS: Fault[] = [
  {
    name: "a missing vendor key",
    inject: (_repo, env) => {
      const e = { ...env };
      delete e["ANTHROPIC_API_KEY"];
      return e;
    },
    message: /ANTHROPIC_API_KEY/,
  },
  {
    name: "a truncated lock file",
    inject: (repo, env) => {
      mkdirSync(join(repo, ".agent"), { recursive: true });
      writeFileSync(
        join(repo, ".agent", "agent.lock.hcl"),
        'lock_file_version = 1\nprovider "anthropic" {\n  ver',
      );
      return env;
    },
    message: /agent\.lock\.hcl:\d+:\d+/,
  },
  {
    name: "a broken global configuration",
    inject: (_repo, env) => {
      const dir = join(env["XDG_CONFIG_HOME"]!, "agent");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "config.hcl"), "dev_overrides {\n  anthropic = \n");
      return env;
    },
    message: /config\.hcl:\d+:\d+/,
  },
  {
    name: "a plugin that rejects its configuration",
    // base_url comes from the environment, so agent.hcl (which the prelaunch plan
    // watches) is unchanged and the run still prelaunches.
    inject: (_repo, env) => ({ ...env, FAKE_ANTHROPIC_URL: "ftp://127.0.0.1:1" }),
    message: /base_url/,
  },
];

/** Removes what a fault wrote (the lock file, the global configuration); the prelaunch plan stays. */
function undo(repo: string, env: NodeJS.ProcessEnv): void {
  rmSync(join(repo, ".agent"), { recursive: true, force: true });
  rmSync(join(env["XDG_CONFIG_HOME"]!, "agent"), { recursive: true, force: true });
}

/** A copy of the fixture repository that has had one successful headless run. */
async function primed(name: string): Promise<{ repo: string; env: NodeJS.ProcessEnv }> {
  const repo = sb.repo(name);
  const env: NodeJS.ProcessEnv = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  };
  const ok = await agent(["run", "-p", "say OK"], { cwd: repo, env });
  expect(ok.stderr).toBe("");
  expect(ok.code).toBe(0);
  // The next run here prelaunches what this one started: the model provider, a first-party
  // plugin on the worker transport, as a thread, so the faults below meet a prelaunched
  // worker (a process plugin's prelaunch is covered by main's own runs before it).
  const planFile = prelaunchPlanFile(env, repo, {});
  expect(existsSync(planFile)).toBe(true);
  const plan = JSON.parse(readFileSync(planFile, "utf8")) as {
    plugins: Array<{ file: string; thread?: unknown }>;
  };
  expect(plan.plugins.some((p) => p.thread !== undefined && p.file.includes("anthropic"))).toBe(true);
  expect(processesIn(repo)).toEqual([]);
  return { repo, env };
}

// One primed repository per mode: a failed run leaves the prelaunch plan in place, so each
// fault's run prelaunches again.
describe("agent run -p after a successful run (prelaunch)", () => {
  let repo = "";
  let env: NodeJS.ProcessEnv = {};
  beforeAll(async () => {
    ({ repo, env } = await primed("headless"));
  });
  for (const fault of FAULTS) {
    it(`exits 1 with the message on ${fault.name}, leaving no process behind`, async () => {
      const broken = fault.inject(repo, env);
      try {
        const r = await agent(["run", "-p", "say OK"], { cwd: repo, env: broken, timeoutMs: 20_000 });
        expect(r.stdout).toBe("");
        expect(r.stderr).toMatch(fault.message);
        expect(r.stderr).not.toContain("still open");
        expect(r.code).toBe(1);
        expect(processesIn(repo)).toEqual([]);
      } finally {
        undo(repo, env);
      }
    });
  }
});

describe("agent run in a terminal after a successful run (prelaunch)", () => {
  let socket = "";
  let repo = "";
  let env: NodeJS.ProcessEnv = {};
  const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
  beforeAll(async () => {
    ({ repo, env } = await primed("tui"));
  });
  afterAll(() => {
    try {
      tmux("kill-server");
    } catch {
      // no server
    }
  });

  for (const fault of FAULTS) {
    it(`exits 1 with the message on ${fault.name}, leaving no process behind`, async () => {
      const broken: Record<string, string> = {
        ...(fault.inject(repo, env) as Record<string, string>),
        TERM: "xterm-256color",
      };
      const base = join(sb.home, `tui-${fault.name.replace(/\W+/g, "-")}`);
      const status = `${base}.status`;
      const errFile = `${base}.stderr`;
      const script = `${base}.sh`;
      const exports = Object.entries(broken)
        .filter(([k]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}='${v.replace(/'/g, "'\\''")}'`)
        .join("\n");
      const unset = Object.keys(env)
        .filter((k) => !(k in broken) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map((k) => `unset ${k}`)
        .join("\n");
      // The status file appears whole (renamed into place): the test polls for it, and a
      // shell's `>` creates the file before it writes the status. The shell leaves the
      // project first, so only what the agent left behind can be found in it.
      writeFileSync(
        script,
        `#!/bin/sh\ncd '${repo}'\n${exports}\n${unset}\n'${AGENT_BIN}' run 2>'${errFile}'\necho "$?" > '${status}.tmp'\ncd /\nmv '${status}.tmp' '${status}'\nsleep 600\n`,
        { mode: 0o755 },
      );
      const session = `s${Date.now()}`;
      // A tmux server per test: killing the last session of a shared server makes it exit
      // asynchronously, and a new-session racing that exit fails with "server exited unexpectedly".
      socket = `${base}.tmux.sock`;
      tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", script);
      const started = Date.now();
      while (!existsSync(status) && Date.now() - started < 20_000)
        await new Promise((r) => setTimeout(r, 50));
      try {
        expect(existsSync(status), `agent run did not exit in a terminal on ${fault.name}`).toBe(true);
        expect(readFileSync(status, "utf8").trim()).toBe("1");
        const stderr = readFileSync(errFile, "utf8");
        expect(stderr).toMatch(fault.message);
        expect(stderr).not.toContain("still open");
        expect(processesIn(repo)).toEqual([]);
      } finally {
        tmux("kill-server");
        undo(repo, env);
      }
    });
  }
});
