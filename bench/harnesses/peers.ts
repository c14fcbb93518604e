// The peer harnesses, each installed from npm into bench/.peers/<id>, started with a fresh
// HOME whose configuration points it at the loopback fake vendor. How each one is pointed
// at the fake is described in bench/README.md.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import type { ToolCallSpec } from "@pluggableharness/fake-vendors";
import { ensurePeer, peerDir } from "../lib/peers.ts";
import type { Action, Availability, BenchEnv, Harness, RunContext, ToolContext } from "./types.ts";
import { baseEnv, shellQuote } from "./types.ts";

const PEER_MODEL = "claude-sonnet-4-5";

function abs(cwd: string, p: string): string {
  return isAbsolute(p) ? p : join(cwd, p);
}

function grepCommand(a: { pattern: string; dir: string }): string {
  return `grep -rn -E ${shellQuote(a.pattern)} ${shellQuote(a.dir)}`;
}

/** Distinct per call (a harness may refuse identical repeated calls as a loop). */
function sleepCommand(a: { id: number; ms: number }): string {
  return `sleep ${a.ms / 1000} && echo record ${a.id}`;
}

function requireFile(path: string, what: string): Availability | undefined {
  return existsSync(path) ? undefined : { ok: false, reason: `${what} not found at ${path}` };
}

// --- Claude Code --------------------------------------------------------------------------

function claudeBin(env: BenchEnv): string {
  return join(
    peerDir(env, "claude-code"),
    "node_modules",
    "@anthropic-ai",
    "claude-code",
    "bin",
    "claude.exe",
  );
}

export const claudeCode: Harness = {
  id: "claude-code",
  label: "Claude Code",
  kind: "peer",
  async prepare(env) {
    const got = ensurePeer(env, "claude-code");
    return got.ok ? (requireFile(claudeBin(env), "the claude executable") ?? got) : got;
  },
  setupHome() {},
  setupProject() {},
  spec(run: RunContext, env: BenchEnv) {
    return {
      command: claudeBin(env),
      // Headless runs ask for permission before Edit and Bash; --allowedTools pre-approves them
      // (--dangerously-skip-permissions refuses to run as root).
      args: ["-p", run.prompt, "--model", PEER_MODEL, "--allowedTools", "Read Edit Write Bash"],
      env: {
        ...baseEnv(run.home),
        ANTHROPIC_BASE_URL: env.fakeUrl,
        ANTHROPIC_API_KEY: "sk-fake-bench",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        DISABLE_ERROR_REPORTING: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      cwd: run.cwd,
    };
  },
  tools: {
    mapping: {
      read: "Read",
      grep: "Bash (grep -rn; this release declares no Grep tool)",
      edit: "Edit",
      bash: "Bash",
      slow: "Bash (sleep)",
    },
    call(action: Action, ctx: ToolContext): ToolCallSpec {
      switch (action.op) {
        case "read":
          return { name: "Read", args: { file_path: abs(ctx.cwd, action.path) } };
        case "grep":
          return { name: "Bash", args: { command: grepCommand(action), description: "Search the sources" } };
        case "edit":
          return {
            name: "Edit",
            args: { file_path: abs(ctx.cwd, action.path), old_string: action.old, new_string: action.new },
          };
        case "bash":
          return { name: "Bash", args: { command: action.command, description: "Run the check" } };
        case "slow":
          return { name: "Bash", args: { command: sleepCommand(action), description: "Look up a record" } };
      }
    },
  },
};

// --- Codex CLI ----------------------------------------------------------------------------

/** The static binary inside the platform package; the npm `codex` bin is a Node launcher around it. */
function codexBin(env: BenchEnv): string | undefined {
  const vendor = join(peerDir(env, "codex"), "node_modules", "@openai", "codex-linux-x64", "vendor");
  if (!existsSync(vendor)) return undefined;
  for (const triple of readdirSync(vendor)) {
    const bin = join(vendor, triple, "bin", "codex");
    if (existsSync(bin)) return bin;
  }
  return undefined;
}

function applyPatch(path: string, oldText: string, newText: string): string {
  const minus = oldText.split("\n").map((l) => `-${l}`);
  const plus = newText.split("\n").map((l) => `+${l}`);
  const patch = ["*** Begin Patch", `*** Update File: ${path}`, "@@", ...minus, ...plus, "*** End Patch"];
  return `apply_patch <<'PATCH'\n${patch.join("\n")}\nPATCH`;
}

export const codex: Harness = {
  id: "codex",
  label: "Codex CLI",
  kind: "peer",
  async prepare(env) {
    const got = ensurePeer(env, "codex");
    if (!got.ok) return got;
    return codexBin(env)
      ? got
      : { ok: false, reason: "the codex-linux-x64 binary is missing from the install" };
  },
  setupHome(home: string, env: BenchEnv) {
    const dir = join(home, ".codex");
    mkdirSync(dir, { recursive: true });
    // OPENAI_BASE_URL alone is not honoured (it dials the real vendor); a custom model
    // provider speaking the Responses API is.
    writeFileSync(
      join(dir, "config.toml"),
      [
        `model = "gpt-5-codex"`,
        `model_provider = "fakevendor"`,
        "",
        "[model_providers.fakevendor]",
        `name = "fakevendor"`,
        `base_url = "${env.fakeUrl}/v1"`,
        `env_key = "OPENAI_API_KEY"`,
        `wire_api = "responses"`,
        "",
      ].join("\n"),
    );
  },
  setupProject() {},
  spec(run: RunContext, env: BenchEnv) {
    return {
      command: codexBin(env)!,
      // The default sandbox is read-only; edits need it lifted (its landlock sandbox is not
      // what is being measured).
      args: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", run.prompt],
      env: { ...baseEnv(run.home), CODEX_HOME: join(run.home, ".codex"), OPENAI_API_KEY: "sk-fake-bench" },
      cwd: run.cwd,
    };
  },
  tools: {
    mapping: {
      read: "exec_command (cat)",
      grep: "exec_command (grep -rn)",
      edit: "exec_command (apply_patch heredoc, applied by Codex itself)",
      bash: "exec_command",
      slow: "exec_command (sleep)",
    },
    call(action: Action): ToolCallSpec {
      const cmd = (c: string) => ({ name: "exec_command", args: { cmd: c } });
      switch (action.op) {
        case "read":
          return cmd(`cat ${shellQuote(action.path)}`);
        case "grep":
          return cmd(grepCommand(action));
        case "edit":
          return cmd(applyPatch(action.path, action.old, action.new));
        case "bash":
          return cmd(action.command);
        case "slow":
          return cmd(sleepCommand(action));
      }
    },
  },
};

// --- opencode -----------------------------------------------------------------------------

function opencodeBin(env: BenchEnv): string {
  return join(peerDir(env, "opencode"), "node_modules", "opencode-ai", "bin", "opencode.exe");
}

export const opencode: Harness = {
  id: "opencode",
  label: "opencode",
  kind: "peer",
  async prepare(env) {
    const got = ensurePeer(env, "opencode");
    return got.ok ? (requireFile(opencodeBin(env), "the opencode executable") ?? got) : got;
  },
  setupHome(home: string, env: BenchEnv) {
    const dir = join(home, ".config", "opencode");
    mkdirSync(dir, { recursive: true });
    const config = {
      $schema: "https://opencode.ai/config.json",
      model: `anthropic/${PEER_MODEL}`,
      small_model: `anthropic/${PEER_MODEL}`,
      autoupdate: false,
      share: "disabled",
      permission: {
        edit: "allow",
        bash: "allow",
        webfetch: "allow",
        doom_loop: "allow",
        external_directory: "allow",
      },
      provider: { anthropic: { options: { baseURL: `${env.fakeUrl}/v1`, apiKey: "sk-fake-bench" } } },
    };
    writeFileSync(join(dir, "opencode.json"), `${JSON.stringify(config, null, 2)}\n`);
  },
  setupProject() {},
  spec(run: RunContext, env: BenchEnv) {
    return {
      command: opencodeBin(env),
      args: ["run", run.prompt],
      env: {
        ...baseEnv(run.home),
        OPENCODE_DISABLE_AUTOUPDATE: "1",
        OPENCODE_DISABLE_MODELS_FETCH: "1",
        OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
      },
      cwd: run.cwd,
    };
  },
  tools: {
    mapping: { read: "read", grep: "grep", edit: "edit", bash: "bash", slow: "bash (sleep)" },
    call(action: Action, ctx: ToolContext): ToolCallSpec {
      switch (action.op) {
        case "read":
          return { name: "read", args: { filePath: abs(ctx.cwd, action.path) } };
        case "grep":
          return { name: "grep", args: { pattern: action.pattern, path: abs(ctx.cwd, action.dir) } };
        case "edit":
          return {
            name: "edit",
            args: { filePath: abs(ctx.cwd, action.path), oldString: action.old, newString: action.new },
          };
        case "bash":
          return { name: "bash", args: { command: action.command, description: "Run the check" } };
        case "slow":
          return { name: "bash", args: { command: sleepCommand(action), description: "Look up a record" } };
      }
    },
  },
};

// --- pi -----------------------------------------------------------------------------------

function piCli(env: BenchEnv): string {
  return join(
    peerDir(env, "pi"),
    "node_modules",
    "@earendil-works",
    "pi-coding-agent",
    "dist",
    "bundle",
    "cli.js",
  );
}

export const pi: Harness = {
  id: "pi",
  label: "pi",
  kind: "peer",
  async prepare(env) {
    const got = ensurePeer(env, "pi");
    if (!got.ok) return got;
    const missing = requireFile(piCli(env), "pi's cli.js");
    // pi needs Node >= 22.19; it runs on the same Node 24 binary as ours.
    return missing ?? { ...got, note: `run on Node ${process.versions.node}` };
  },
  setupHome(home: string, env: BenchEnv) {
    const dir = join(home, ".pi", "agent");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "models.json"),
      `${JSON.stringify({ providers: { anthropic: { baseUrl: env.fakeUrl } } })}\n`,
    );
  },
  setupProject() {},
  spec(run: RunContext, env: BenchEnv) {
    return {
      command: process.execPath,
      args: [piCli(env), "--provider", "anthropic", "--model", PEER_MODEL, "-p", run.prompt],
      env: { ...baseEnv(run.home), ANTHROPIC_API_KEY: "sk-fake-bench", PI_OFFLINE: "1" },
      cwd: run.cwd,
    };
  },
  tools: {
    mapping: {
      read: "read",
      grep: "bash (grep -rn; grep is not among pi's default tools)",
      edit: "edit",
      bash: "bash",
      slow: "bash (sleep)",
    },
    call(action: Action): ToolCallSpec {
      switch (action.op) {
        case "read":
          return { name: "read", args: { path: action.path, offset: null, limit: null } };
        case "grep":
          return { name: "bash", args: { command: grepCommand(action), timeout: null } };
        case "edit":
          return {
            name: "edit",
            args: { path: action.path, edits: [{ oldText: action.old, newText: action.new }] },
          };
        case "bash":
          return { name: "bash", args: { command: action.command, timeout: null } };
        case "slow":
          return { name: "bash", args: { command: sleepCommand(action), timeout: null } };
      }
    },
  },
};
