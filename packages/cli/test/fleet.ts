// The fleet tests' world: real redis-server and PostgreSQL (testing/fleet-engines), the
// loopback fake Anthropic driven by a script that reads each request (which task, which
// step), a project whose agent.hcl has settings.fleet, and real `agent worker` processes.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FakeVendor, RecordedRequest, ScriptedResponse } from "@pluggableharness/fake-vendors";
import { startFakeVendor } from "@pluggableharness/fake-vendors";
import { Catalog } from "@pluggableharness/fleet";
import { type Engines, startEngines } from "@pluggableharness/fleet-engines";
import { AGENT_BIN, agent, type Sandbox, sandbox } from "./helpers.ts";

export const FLEET_HCL = `
required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  filesystem = {
    source  = "pluggableharness/filesystem"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

# Relative to the project, which for a fleet task is its checkout.
provider "filesystem" {
  roots = ["."]
}

policy "allow_file_edits" {
  match  = { provider = "filesystem" }
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
  max_turns = 10
}

settings {
  max_retry_delay_ms = 10000
  fleet {
    redis_url    = env("FLEET_REDIS_URL")
    postgres_url = env("FLEET_POSTGRES_URL")
  }
}
`;

/** What one model call costs with USAGE at claude-sonnet-5's $2/$10 per million tokens. */
export const USAGE = { inputTokens: 50_000, outputTokens: 5_000 };
export const CALL_USD = (USAGE.inputTokens * 2 + USAGE.outputTokens * 10) / 1e6;

/** The task a request belongs to (the prompt names it `task-<name>`), and where it is. */
export function requestState(req: RecordedRequest): { task: string; results: number; resumed: boolean } {
  const body = req.json as { messages?: Array<{ role: string; content: unknown }> };
  const messages = body.messages ?? [];
  const text = JSON.stringify(messages);
  const task = /task-([\w-]+)/.exec(text)?.[1] ?? "?";
  let results = 0;
  for (const m of messages) {
    if (Array.isArray(m.content)) {
      results += (m.content as Array<{ type?: string }>).filter((b) => b.type === "tool_result").length;
    }
  }
  return { task, results, resumed: text.includes("another worker has resumed the session") };
}

/** The two-step task: write out/<task>.txt, then answer "Finished <task>". */
export function twoStep(req: RecordedRequest, extra: Partial<ScriptedResponse> = {}): ScriptedResponse {
  const s = requestState(req);
  if (s.results === 0) {
    return {
      kind: "tool_calls",
      text: `Writing the result for ${s.task}.`,
      calls: [
        { name: "filesystem__write_file", args: { path: `out/${s.task}.txt`, content: `done ${s.task}\n` } },
      ],
      usage: USAGE,
      ...extra,
    } as ScriptedResponse;
  }
  return {
    kind: "text",
    text: `Finished ${s.task}${s.resumed ? " after resuming" : ""}.`,
    usage: USAGE,
    ...extra,
  } as ScriptedResponse;
}

export interface FleetWorld {
  readonly sb: Sandbox;
  readonly engines: Engines;
  readonly fake: FakeVendor;
  readonly project: string;
  readonly env: NodeJS.ProcessEnv;
  readonly catalog: Catalog;
  /** The script the fake vendor answers with (replace per test). */
  script: (req: RecordedRequest, index: number) => ScriptedResponse | Promise<ScriptedResponse>;
  /** A directory holding a small target project (a git repository or a plain directory). */
  target(name: string, files?: Record<string, string>): string;
  batch(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  submit(args: string[]): Promise<string>;
  worker(args?: string[]): FleetWorkerProcess;
  waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs?: number): Promise<T>;
  /** SIGKILLs every worker started so far and waits for them to exit. */
  killWorkers(): Promise<void>;
  close(): Promise<void>;
}

export interface FleetWorkerProcess {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): void;
}

export interface FleetWorldOptions {
  /** The `agent` binary the batch commands and workers run (the installed package's, in e2e-install). */
  readonly bin?: string;
  /** Runs a batch command (e2e-install counts the installed CLI's commands through its own). */
  readonly run?: typeof agent;
  /** Replaces variables of the batch commands' and workers' environment (a user's PATH). */
  readonly env?: NodeJS.ProcessEnv;
}

export async function startFleetWorld(options: FleetWorldOptions = {}): Promise<FleetWorld> {
  const bin = options.bin ?? AGENT_BIN;
  const run = options.run ?? agent;
  const sb = sandbox();
  const [engines, fake] = await Promise.all([
    startEngines(),
    startFakeVendor({ vendor: "anthropic", script: (req, i) => world.script(req, i) }),
  ]);
  const project = sb.dir("project");
  writeFileSync(join(project, "agent.hcl"), FLEET_HCL);
  const env: NodeJS.ProcessEnv = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FLEET_REDIS_URL: engines.redis.url,
    FLEET_POSTGRES_URL: engines.postgres.url,
    ...options.env,
  };
  const catalog = await Catalog.connect(engines.postgres.url);
  const workers: FleetWorkerProcess[] = [];
  const world: FleetWorld = {
    sb,
    engines,
    fake,
    project,
    env,
    catalog,
    script: (req) => twoStep(req),
    target(name, files = { "README.md": `# ${name}\n` }) {
      const dir = sb.dir(join("targets", name));
      for (const [f, content] of Object.entries(files)) {
        mkdirSync(join(dir, f, ".."), { recursive: true });
        writeFileSync(join(dir, f), content);
      }
      return dir;
    },
    batch: (args) => run(["batch", ...args], { cwd: project, env, timeoutMs: 30_000, bin }),
    async submit(args) {
      const r = await world.batch(["submit", ...args]);
      if (r.code !== 0) throw new Error(`submit failed (${r.code}): ${r.stderr}`);
      return r.stdout.trim();
    },
    worker(args = []) {
      const child = spawn(
        bin,
        [
          "worker",
          "--lock-ms",
          "3000",
          "--stalled-check-ms",
          "1000",
          "--work-dir",
          join(sb.home, "work"),
          ...args,
        ],
        { cwd: project, env, stdio: ["ignore", "ignore", "pipe"] },
      );
      let out = "";
      child.stderr!.setEncoding("utf8").on("data", (d: string) => {
        out += d;
      });
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      const w: FleetWorkerProcess = {
        child,
        output: () => out,
        exited,
        kill: (signal = "SIGKILL") => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        },
      };
      workers.push(w);
      return w;
    },
    async waitFor(what, probe, timeoutMs = 40_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // An engine being restarted makes a probe throw: that is "not yet".
        const v = await probe().catch(() => undefined);
        if (v !== undefined && v !== false) return v as never;
        if (Date.now() > deadline) {
          const logs = workers.map((w, i) => `--- worker ${i} ---\n${w.output().slice(-3000)}`).join("\n");
          throw new Error(`timed out waiting for ${what}\n${logs}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async killWorkers() {
      for (const w of workers) w.kill("SIGKILL");
      await Promise.all(workers.map((w) => w.exited));
      workers.length = 0;
    },
    async close() {
      await world.killWorkers();
      await catalog.close().catch(() => {});
      await fake.close();
      await engines.stop();
      sb.cleanup();
    },
  };
  return world;
}
