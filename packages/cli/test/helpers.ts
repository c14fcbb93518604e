// Runs the real `agent` binary (node_modules/.bin/agent) as a child process, with
// every location it writes (sessions, logs, config, caches) inside a scratch HOME.
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../..", import.meta.url));
export const AGENT_BIN = join(REPO_ROOT, "node_modules", ".bin", "agent");
export const FIXTURE_REPO = fileURLToPath(new URL("./fixtures/repo", import.meta.url));

/** Vendor variables the zero-config default looks at: always unset unless a test sets them. */
const VENDOR_VARIABLES = [
  "ANTHROPIC_API_KEY",
  "OPENAI_API_KEY",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "GEMINI_API_KEY",
  "GOOGLE_API_KEY",
  "XAI_API_KEY",
];

export interface Sandbox {
  readonly home: string;
  readonly env: NodeJS.ProcessEnv;
  /** A fresh directory under the sandbox. */
  dir(name: string): string;
  /** A copy of the fixture repository. */
  repo(name?: string): string;
  cleanup(): void;
}

export function sandbox(): Sandbox {
  const home = mkdtempSync(join(tmpdir(), "agent-cli-"));
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of VENDOR_VARIABLES) delete env[v];
  Object.assign(env, {
    HOME: home,
    XDG_STATE_HOME: join(home, "state"),
    XDG_CONFIG_HOME: join(home, "config"),
    // Shared across tests: the Node compile cache only holds compiled code.
    XDG_CACHE_HOME: join(tmpdir(), "agent-cli-test-cache"),
    PATH: `${join(REPO_ROOT, "node_modules", ".bin")}:${process.env["PATH"] ?? ""}`,
    NO_COLOR: "1",
  });
  delete env["AGENT_LOG_LEVEL"];
  return {
    home,
    env,
    dir(name) {
      const d = join(home, name);
      mkdirSync(d, { recursive: true });
      return d;
    },
    repo(name = "repo") {
      const d = join(home, name);
      cpSync(FIXTURE_REPO, d, { recursive: true });
      return d;
    },
    cleanup() {
      rmSync(home, { recursive: true, force: true });
    },
  };
}

export interface AgentResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `agent <args>` to completion. stdin is empty unless `input` is given. */
export function agent(
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string; timeoutMs?: number; bin?: string },
): Promise<AgentResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(options.bin ?? AGENT_BIN, [...args], {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`agent ${args.join(" ")} timed out\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, options.timeoutMs ?? 45_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Parses stream-json output: one object per line. */
export function records(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * Live processes whose working directory is `dir` or below it: the plugins a run in `dir`
 * started (the launcher runs them there) and anything they left behind. Linux only.
 */
export function processesIn(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    let cwd: string;
    let cmdline: string;
    try {
      cwd = readlinkSync(`/proc/${name}/cwd`);
      cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    } catch {
      continue; // gone, a zombie, or not ours to read
    }
    if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(`${name}: ${cmdline}`);
  }
  return found;
}

/** A running `agent serve`'s socket with the token from its private record, as `agent attach` dials it. */
export function servedTarget(socket: string): { kind: "unix"; socket: string; token: string } {
  const record = JSON.parse(readFileSync(socket.replace(/\.sock$/, ".json"), "utf8")) as { token: string };
  return { kind: "unix", socket, token: record.token };
}

// A 1x1 PNG.
export const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);
