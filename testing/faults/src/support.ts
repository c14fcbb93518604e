// What the fault scenarios share: a scratch HOME per run, the real `agent` binary run to
// completion (or killed), the processes a run left in its project, and a session file's
// events read back.
import { type ChildProcess, spawn } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { listSessions, openSessionReader } from "@pluggableharness/state";

export const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));
export const AGENT_BIN = join(REPO_ROOT, "node_modules", ".bin", "agent");
const FIXTURE_REPO = join(REPO_ROOT, "packages", "cli", "test", "fixtures", "repo");

const VENDOR_VARIABLES = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "XAI_API_KEY",
  "AGENT_LOG_LEVEL",
];

export interface Scratch {
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  /** A copy of the CLI tests' fixture repository (agent.hcl with anthropic, filesystem, exec). */
  repo(name?: string): string;
  dir(name: string): string;
  sessionsDir(): string;
  cleanup(): void;
}

export function scratch(): Scratch {
  const home = mkdtempSync(join(tmpdir(), "agent-faults-"));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of VENDOR_VARIABLES) delete env[v];
  Object.assign(env, {
    HOME: home,
    XDG_STATE_HOME: join(home, "state"),
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_CACHE_HOME: join(tmpdir(), "agent-faults-cache"),
    PATH: `${join(REPO_ROOT, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}`,
    NO_COLOR: "1",
  });
  return {
    home,
    env,
    repo(name = "repo") {
      const d = join(home, name);
      cpSync(FIXTURE_REPO, d, { recursive: true });
      return d;
    },
    dir(name) {
      const d = join(home, name);
      mkdirSync(d, { recursive: true });
      return d;
    },
    sessionsDir: () => join(home, "state", "agent", "sessions"),
    cleanup() {
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface Run {
  readonly child: ChildProcess;
  /** Resolves with the exit code (null when killed) once stdout and stderr are closed. */
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>;
}

/** Starts `agent <args>`; it is SIGKILLed after `timeoutMs` (a hang is a failure, not a wait). */
export function start(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Run {
  const started = Date.now();
  const child = spawn(AGENT_BIN, [...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
  return { child, done };
}

export function agent(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs?: number) {
  return start(args, cwd, env, timeoutMs).done;
}

/** `pid: cmdline` of every live process whose working directory is `dir` or below it. */
export function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
      found.push(`${name}: ${readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`);
    } catch {
      // gone, a zombie, or not ours
    }
  }
  return found;
}

/** Kills what a failed run left behind (by pid, only processes in `dir`). */
export function killLeftovers(dir: string): void {
  for (const p of processesIn(dir)) {
    try {
      process.kill(Number(p.split(":")[0]), "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Polls `check` every 20 ms until it holds or `ms` pass; returns whether it held. */
export async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** The newest root session's id in the scratch state directory. */
export function latestSession(s: Scratch): string | undefined {
  return listSessions({ dir: s.sessionsDir(), rootsOnly: true, log: () => {} }).sessions[0]?.sessionId;
}

/** Every persisted event's sequence number. */
export function eventSequences(s: Scratch, sessionId: string): number[] {
  const reader = openSessionReader(sessionId, { dir: s.sessionsDir() });
  try {
    return reader.readEvents().map((e) => e.sequence);
  } finally {
    reader.close();
  }
}

/** Overwrites agent.hcl in `dir`. */
export function writeConfig(dir: string, text: string): void {
  writeFileSync(join(dir, "agent.hcl"), text);
}

/** A small deterministic PRNG (mulberry32), so a run's injection point depends only on its index. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
