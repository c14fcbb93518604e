// Kill and resume: a real `agent run -p` process is SIGKILLed at a chosen step of a turn,
// then the session it left is resumed against each first-party model provider, each
// talking to a loopback fake vendor whose request validator refuses what the real API
// refuses (a tool_use without its tool_result, a function call without its output…).
// Shared by the fast test (testing/faults/test) and the long loop (`npm run faults`).
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type FakeVendor,
  type ScriptEntry,
  scenarios,
  startFakeVendor,
  type TextResponse,
  type ToolCallsResponse,
  type VendorId,
} from "@pluggableharness/fake-vendors";

export const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));
export const AGENT_BIN = join(REPO_ROOT, "node_modules", ".bin", "agent");
const FIXTURE_REPO = join(REPO_ROOT, "packages", "cli", "test", "fixtures", "repo");

/** A first-party model provider and the fake vendor it talks to. */
export interface VendorCase {
  readonly provider: "anthropic" | "openai" | "google" | "xai" | "openai-compatible";
  readonly fake: VendorId;
  readonly model: string;
  /** Provider block attributes besides base_url. */
  readonly attrs: Record<string, string>;
}

export const VENDORS: readonly VendorCase[] = [
  {
    provider: "anthropic",
    fake: "anthropic",
    model: "claude-sonnet-5",
    attrs: { api_key: 'env("FAULTS_API_KEY")' },
  },
  {
    provider: "openai",
    fake: "openai-responses",
    model: "gpt-5.6-sol",
    attrs: { api_key: 'env("FAULTS_API_KEY")' },
  },
  {
    provider: "google",
    fake: "gemini",
    model: "gemini-3.8-flash",
    attrs: { api_key: 'env("FAULTS_API_KEY")' },
  },
  { provider: "xai", fake: "xai", model: "grok-4.3", attrs: { api_key: 'env("FAULTS_API_KEY")' } },
  {
    provider: "openai-compatible",
    fake: "vllm",
    model: "local-model",
    attrs: { dialect: '"vllm"', model: '"local-model"', context_window: "131072" },
  },
];

/** Where a kill happens, as what the test waits for before sending SIGKILL. */
export type KillPoint =
  | "waiting-for-the-answer" // the first request was sent, no byte has come back
  | "mid-stream" // the model's answer (with tool calls) stops halfway
  | "during-bash" // a data-source read finished, a bash call is running
  | "between-result-and-request" // the tool results are recorded, the next request is out
  | "second-answer-mid-stream" // after a tool round trip, the next answer stops halfway
  | "random"; // a random delay after start (the long loop)

export const KILL_POINTS: readonly Exclude<KillPoint, "random">[] = [
  "waiting-for-the-answer",
  "mid-stream",
  "during-bash",
  "between-result-and-request",
  "second-answer-mid-stream",
];

export interface Sandbox {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  cleanup(): void;
}

/** A scratch HOME (sessions, config, caches) and a copy of the CLI's fixture repository. */
export function sandbox(): Sandbox {
  const root = mkdtempSync(join(tmpdir(), "ph-faults-"));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "GEMINI_API_KEY",
  ])
    delete env[v];
  delete env["AGENT_LOG_LEVEL"];
  Object.assign(env, {
    HOME: root,
    XDG_CONFIG_HOME: join(root, "config"),
    XDG_CACHE_HOME: join(tmpdir(), "agent-cli-test-cache"),
    PATH: `${join(REPO_ROOT, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}`,
    NO_COLOR: "1",
    // The fake vendors take any key; agent.hcl reads it as env("FAULTS_API_KEY").
    FAULTS_API_KEY: "sk-faults-test",
  });
  return { root, env, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** A project directory for `vendor`: the fixture repository and an agent.hcl that allows every change. */
export function project(sb: Sandbox, name: string, vendor: VendorCase, baseUrl: string): string {
  const dir = join(sb.root, name);
  cpSync(FIXTURE_REPO, dir, { recursive: true });
  const attrs = Object.entries({ base_url: JSON.stringify(baseUrl), ...vendor.attrs })
    .map(([k, v]) => `  ${k} = ${v}`)
    .join("\n");
  writeFileSync(
    join(dir, "agent.hcl"),
    `required_providers {
  model      = { source = "pluggableharness/${vendor.provider}", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
  exec       = { source = "pluggableharness/exec", version = ">= 0.1.0" }
}
provider "model" {
${attrs}
}
provider "filesystem" {
  roots = [${JSON.stringify(dir)}]
}
provider "exec" {
  roots = [${JSON.stringify(dir)}]
}
policy "allow_everything" {
  match  = { kind = "resource" }
  action = "allow"
}
agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = ${JSON.stringify(vendor.model)}
    }
  }
  tools     = ["filesystem.*", "exec.*"]
  max_turns = 10
}
`,
  );
  return dir;
}

/** The script the killed run follows: a read and a bash call, then an answer. */
/** `marker` is written by the bash call when it starts; it must be inside the project (the bash sandbox). */
export function killScript(point: KillPoint, marker: string): ScriptEntry[] {
  const calls = (command: string): ToolCallsResponse => ({
    kind: "tool_calls",
    text: "Looking, then running.",
    calls: [
      { name: "filesystem__read_file", args: { path: "calc.js" } },
      { name: "exec__bash", args: { command } },
    ],
  });
  const done: TextResponse = scenarios.text("All done.");
  switch (point) {
    case "waiting-for-the-answer":
      return [{ ...calls("true"), latencyMs: 60_000 }];
    case "mid-stream":
      return [{ ...calls("true"), chunkDelayMs: 5, interrupt: { type: "stall", afterFrames: 4 } }];
    case "during-bash":
      return [calls(`echo started > ${JSON.stringify(marker)}; sleep 20`), done];
    case "between-result-and-request":
      return [calls("echo ok"), { ...done, latencyMs: 60_000 }];
    case "second-answer-mid-stream":
      return [calls("echo ok"), scenarios.stall({ afterFrames: 2 })];
    case "random":
      return [
        { ...calls(`echo started > ${JSON.stringify(marker)}; sleep 0.3`), chunkDelayMs: 3 },
        { ...calls("echo again"), chunkDelayMs: 3 },
        { ...done, chunkDelayMs: 3 },
      ];
  }
}

export interface KilledRun {
  readonly sessionId: string;
  /** The sessions directory of the killed run. */
  readonly sessionsDir: string;
  readonly stderr: string;
}

/**
 * Runs `agent run -p` in `dir` against `fake` and SIGKILLs it at `point` (for "random",
 * `delayMs` after its session started). Resolves once the process is gone.
 */
export async function runAndKill(
  sb: Sandbox,
  dir: string,
  fake: FakeVendor,
  point: KillPoint,
  marker: string,
  delayMs = 0,
): Promise<KilledRun> {
  const stateHome = join(dir, ".state");
  const env = { ...sb.env, XDG_STATE_HOME: stateHome };
  const child: ChildProcess = spawn(
    AGENT_BIN,
    ["run", "-p", "check calc.js", "--output-format", "stream-json"],
    {
      cwd: dir,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const sessionId = new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /"session_id":"([0-9A-Z]{26})"/.exec(stdout);
      if (m) resolve(m[1]!);
    };
    child.stdout!.on("data", check);
    void exited.then(() => reject(new Error(`agent exited before its session started: ${stderr}`)));
  });
  const deadline = (what: string, ms = 30_000) =>
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms).unref(),
    );
  try {
    const id = await Promise.race([sessionId, deadline("the session")]);
    const until = (ok: () => boolean, what: string) =>
      Promise.race([
        new Promise<void>((resolve) => {
          const t = setInterval(() => {
            if (ok()) {
              clearInterval(t);
              resolve();
            }
          }, 5);
        }),
        deadline(what),
        exited.then(() => {
          throw new Error(`agent exited before ${what}: ${stderr}`);
        }),
      ]);
    switch (point) {
      case "waiting-for-the-answer":
        await until(() => fake.requests.length >= 1, "the first request");
        break;
      case "mid-stream":
      case "second-answer-mid-stream":
        await Promise.race([fake.waitForStall(), deadline("the stall")]);
        break;
      case "during-bash":
        await until(() => existsSync(marker), "the bash call to start");
        break;
      case "between-result-and-request":
        await until(() => fake.requests.length >= 2, "the second request");
        break;
      case "random":
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        break;
    }
    child.kill("SIGKILL");
    await exited;
    return { sessionId: id, sessionsDir: join(stateHome, "agent", "sessions"), stderr };
  } finally {
    child.kill("SIGKILL");
  }
}

/** Copies what a killed run left (the file and its WAL: a kill leaves both) into another sessions directory. */
export function copySession(run: KilledRun, into: string): void {
  mkdirSync(into, { recursive: true });
  for (const suffix of [".sqlite", ".sqlite-wal"]) {
    const from = join(run.sessionsDir, `${run.sessionId}${suffix}`);
    if (existsSync(from)) copyFileSync(from, join(into, `${run.sessionId}${suffix}`));
  }
}

/** A fake vendor that answers every request with text and refuses what the real API would. */
export function validatingFake(vendor: VendorCase): Promise<FakeVendor> {
  return startFakeVendor({
    vendor: vendor.fake,
    validate: true,
    script: () => scenarios.text("Resumed."),
  });
}

export interface AgentResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs `agent <args>` in `dir` to completion (killed after `timeoutMs`). */
export function agent(
  sb: Sandbox,
  dir: string,
  args: readonly string[],
  extraEnv: NodeJS.ProcessEnv = {},
  timeoutMs = 60_000,
): Promise<AgentResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(AGENT_BIN, [...args], {
      cwd: dir,
      env: { ...sb.env, XDG_STATE_HOME: join(dir, ".state"), ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}
