// The installable CLI, the way a user gets it: `npm pack` (scripts/pack-cli.ts) then
// `npm install -g` of the tarball into a scratch prefix, and the installed `agent` used
// from a directory that has nothing to do with this repository: --version, a session
// against a fake vendor with a first-party tool, a plugin scaffolded, built and checked
// with the installed SDK, and one line (no SyntaxError) under an older Node.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../src/index.ts";
import { startFleetWorld } from "./fleet.ts";
import { AGENT_BIN, type AgentResult, agent, REPO_ROOT, records } from "./helpers.ts";
import { installedAgent } from "./installed.ts";
import { waitForText } from "./tmux.ts";

const NODE24_BIN = dirname(process.execPath);
const CLI_VERSION = JSON.parse(
  readFileSync(join(REPO_ROOT, "packages", "cli", "package.json"), "utf8"),
).version;

/** What the installed `agent` was run with in this file: `sessions rewind`, `run -p`… */
const ran = new Set<string>();

/** The `agent` subcommands of each command that has some (`sessions`: list, show…). */
const GROUPS = new Map(
  buildProgram({ out: process.stdout, err: process.stderr, env: {}, cwd: "/" }, () => {}).commands.map(
    (c) => [c.name(), new Set(c.commands.map((s) => s.name()))] as const,
  ),
);

/** A command line's path (`sessions rewind`) and that path with each of its flags (`run -p`). */
function commandPaths(words: readonly string[]): string[] {
  const [first, second] = words;
  if (!first || first.startsWith("-")) return first ? [first] : [];
  const path = second && GROUPS.get(first)?.has(second) ? `${first} ${second}` : first;
  return [path, ...words.filter((w) => /^--?[a-z]/.test(w)).map((f) => `${path} ${f}`)];
}

/** Runs `agent`; runs of the installed one are counted toward the README's commands. */
function cli(args: readonly string[], options: Parameters<typeof agent>[1]): Promise<AgentResult> {
  if (options.bin === bin) for (const p of commandPaths(args)) ran.add(p);
  return agent(args, options);
}

let scratch: string;
let tarball: string;
let installed: string;
let bin: string;
let project: string;
let fake: FakeVendor;

/** The environment of a user elsewhere: Node 24 first on PATH, nothing of this repository. */
function userEnv(path = `${NODE24_BIN}:${dirname(bin)}:/usr/bin:/bin`): NodeJS.ProcessEnv {
  return {
    PATH: path,
    HOME: join(scratch, "home"),
    XDG_CACHE_HOME: join(scratch, "home", ".cache"),
    XDG_STATE_HOME: join(scratch, "home", ".state"),
    XDG_CONFIG_HOME: join(scratch, "home", ".config"),
    TMPDIR: tmpdir(),
    NO_COLOR: "1",
    ANTHROPIC_API_KEY: "sk-ant-install-test",
    FAKE_ANTHROPIC_URL: fake.url,
  };
}

/** A loopback port free right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A Node older than 24 on this machine (Debian's nodejs, installed by .ci/run). */
function oldNode(): string {
  for (const candidate of ["/usr/bin/node", "/usr/local/bin/node"]) {
    if (!existsSync(candidate)) continue;
    const v = spawnSync(candidate, ["-p", "process.versions.node"], { encoding: "utf8" }).stdout.trim();
    if (Number(v.split(".")[0]) < 24) return candidate;
  }
  throw new Error("no Node older than 24 at /usr/bin/node: install Debian's nodejs (see .ci/run)");
}

beforeAll(async () => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "agent-install-")));
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const inst = await installedAgent();
  tarball = inst.tarball;
  installed = inst.root;
  bin = inst.bin;
  project = join(scratch, "elsewhere");
  execFileSync("mkdir", ["-p", project, join(scratch, "home")]);
}, 330_000);

afterAll(async () => {
  await fake?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("npm install -g of the packed CLI", () => {
  it("is @pluggableharness/cli with an `agent` bin that needs Node 24", () => {
    expect(tarball).toMatch(/pluggableharness-cli-\d+\.\d+\.\d+\.tgz$/);
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(pkg.name).toBe("@pluggableharness/cli");
    expect(pkg.version).toBe(CLI_VERSION);
    expect(pkg.bin).toEqual({ agent: "packages/cli/bin/agent.mjs" });
    expect(pkg.engines.node).toBe(">=24");
    // Exact pins only; the SDK's dependencies and esbuild, nothing of the workspace.
    for (const [name, range] of Object.entries(pkg.dependencies as Record<string, string>)) {
      expect(name).not.toMatch(/^@pluggableharness\//);
      expect(range).toMatch(/^\d+\.\d+\.\d+$/);
    }
    expect(Object.keys(pkg.dependencies)).toContain("esbuild");
    // No tests, fixtures or source maps in the package.
    expect(existsSync(join(installed, "packages", "cli", "test"))).toBe(false);
    expect(existsSync(join(installed, "dist", "bundles", "packages", "cli", "src", "bin.mjs.map"))).toBe(
      false,
    );
  });

  it("agent --version works from an unrelated directory", async () => {
    const r = await cli(["--version"], { cwd: project, env: userEnv(), bin });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(CLI_VERSION);
    const d = await cli(["doctor"], { cwd: project, env: userEnv(), bin });
    // The installed copy answers, not this repository's.
    expect(d.stdout).toContain(`agent     ${CLI_VERSION} (${installed})`);
  });

  it("runs a session with a fake vendor and a first-party tool, all from the installed package", async () => {
    writeFileSync(join(project, "notes.txt"), "installed and working\n");
    writeFileSync(
      join(project, "agent.hcl"),
      `required_providers {
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

provider "filesystem" {
  roots = ["."]
}

policy "allow_reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools = ["filesystem.*"]
}
`,
    );
    // agent init keeps that agent.hcl and writes the lock (the installed kernel's resolver).
    const init = await cli(["init"], { cwd: project, env: userEnv(), bin });
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("exists; kept it");
    const lock = readFileSync(join(project, ".agent", "agent.lock.hcl"), "utf8");
    expect(lock).toContain("lock_file_version = 1");
    expect(lock).toMatch(
      /provider "filesystem" \{\n {2}source {6}= "pluggableharness\/filesystem"\n {2}version {5}= "0\.1\.0"/,
    );
    fake.push(
      {
        kind: "tool_calls",
        calls: [{ name: "filesystem__read_file", args: { path: join(project, "notes.txt") } }],
      },
      { kind: "text", text: "The file says it works." },
    );
    const r = await cli(["run", "-p", "read notes.txt", "--output-format", "stream-json"], {
      cwd: project,
      env: userEnv(),
      bin,
    });
    expect(r.code, r.stderr).toBe(0);
    const out = records(r.stdout);
    const result = out.find((x) => x["type"] === "tool_result");
    expect(JSON.stringify(result)).toContain("installed and working");
    expect(JSON.stringify(out.at(-1))).toContain("The file says it works.");
  });

  it("writes lock files the clone of the same commit accepts, and accepts the clone's", async () => {
    // Checksums used to cover every file of a provider's folder, tests included, which the
    // package leaves out: 13 lock_mismatch errors each way.
    const dir = join(scratch, "locks");
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(
      join(dir, "agent.hcl"),
      `required_providers {
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
  api_key = env("ANTHROPIC_API_KEY")
}

provider "filesystem" {
  roots = ["."]
}
`,
    );
    const lockFile = join(dir, ".agent", "agent.lock.hcl");
    const env = userEnv();
    const cloneEnv = { ...env, PATH: `${NODE24_BIN}:/usr/bin:/bin` };
    for (const [writer, reader] of [
      [bin, AGENT_BIN],
      [AGENT_BIN, bin],
    ] as const) {
      rmSync(lockFile, { force: true });
      const lock = await cli(["providers", "lock"], { cwd: dir, env, bin: writer });
      expect(lock.code, lock.stderr).toBe(0);
      const v = await cli(["validate"], { cwd: dir, env: reader === bin ? env : cloneEnv, bin: reader });
      expect(v.stdout + v.stderr).not.toContain("lock_mismatch");
      expect(v.code, v.stdout + v.stderr).toBe(0);
    }
  });

  it("validates and serves the web UI from the installed package", { timeout: 120_000 }, async () => {
    // Found by a user: `marked` (whose browser build the UI serves) was not in the package,
    // and validate failed on the web UI's Configure asking for a callback socket.
    const dir = join(scratch, "web");
    execFileSync("mkdir", ["-p", dir]);
    const port = await freePort();
    writeFileSync(
      join(dir, "agent.hcl"),
      `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  web = {
    source  = "pluggableharness/web-ui"
    version = ">= 0.1.0"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "web" {
  token = env("WEB_TOKEN")
  port  = ${port}
}
`,
    );
    const env = { ...userEnv(), WEB_TOKEN: "install-test-token-0123456789" };
    const v = await cli(["validate"], { cwd: dir, env, bin });
    expect(v.code, v.stdout + v.stderr).toBe(0);
    // `agent serve` configures the declared frontends: the UI is served from the package.
    ran.add("serve");
    const server = spawn(bin, ["serve"], { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    server.stderr!.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const exited = new Promise((r) => server.once("exit", r));
    const base = `http://127.0.0.1:${port}`;
    let served: { page: number; marked: number; size: number } | undefined;
    try {
      for (const end = Date.now() + 60_000; !served && Date.now() < end && server.exitCode === null; ) {
        try {
          // The token in the address is swapped for a cookie, which then carries it.
          const open = await fetch(`${base}/?token=${env.WEB_TOKEN}`, { redirect: "manual" });
          const cookie = (open.headers.get("set-cookie") ?? "").split(";")[0]!;
          const page = await fetch(`${base}/`, { headers: { cookie } });
          const marked = await fetch(`${base}/vendor/marked.js`, { headers: { cookie } });
          served = {
            page: page.status,
            marked: marked.status,
            size: (await marked.arrayBuffer()).byteLength,
          };
        } catch {
          await new Promise((r) => setTimeout(r, 200)); // not listening yet
        }
      }
    } finally {
      server.kill("SIGTERM");
      await exited;
    }
    expect(served, stderr).toMatchObject({ page: 200, marked: 200 });
    expect(served!.size).toBeGreaterThan(10_000);
  });

  it("scaffolds, builds and conform-checks a plugin with the installed SDK", async () => {
    const env = userEnv();
    const made = await cli(["plugin", "new", "provider-hello", "-C", join(scratch, "hello")], {
      cwd: scratch,
      env,
      bin,
    });
    expect(made.code, made.stderr).toBe(0);
    const built = await cli(["plugin", "build", "--dev"], {
      cwd: join(scratch, "hello"),
      env,
      bin,
      timeoutMs: 60_000,
    });
    expect(built.code, built.stderr).toBe(0);
    const launcher = join(scratch, "hello", "dist", "dev", "provider-hello");
    // The build inlines the SDK: nothing imports from the installation at run time.
    expect(readFileSync(`${launcher}.mjs`, "utf8")).not.toContain(installed);
    const r = await cli(["conform", launcher, "--samples", join(scratch, "hello", "test", "samples.json")], {
      cwd: join(scratch, "hello"),
      env,
      bin,
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/PASS tool\.invoke\./);
    // The scaffold's own `npm test` (build, then conform) with the installed `agent` on PATH.
    const npmTest = spawnSync("npm", ["test"], {
      cwd: join(scratch, "hello"),
      env,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(npmTest.status, npmTest.stdout + npmTest.stderr).toBe(0);
    expect(npmTest.stdout).toMatch(/(#|ℹ) pass 1\n(#|ℹ) fail 0/);
  }, 180_000);

  it("under an older Node, one line says which Node it needs, exit 1, no SyntaxError", async () => {
    const old = oldNode();
    const path = `${dirname(old)}:${dirname(bin)}:/usr/bin:/bin`;
    const r = await cli(["--version"], { cwd: project, env: userEnv(path), bin });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const [version, execPath] = spawnSync(old, ["-p", "process.versions.node + ' ' + process.execPath"], {
      encoding: "utf8",
    })
      .stdout.trim()
      .split(" ");
    expect(r.stderr).toBe(
      `agent: needs Node.js 24 or newer; this is Node.js ${version} (${execPath}). Install Node 24 (https://nodejs.org) and put it first on PATH.\n`,
    );
    expect(r.stderr).not.toContain("SyntaxError");
  });
});

/**
 * Every `agent` command the README documents, as command paths (`sessions rewind`): those in
 * its inline code and the table, and those of its shell examples with the flags they use.
 */
function readmeCommands(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const found = new Set<string>();
  const words = (line: string) => line.split(/\s+/).filter((w) => w !== "");
  for (const m of readme.matchAll(/`agent ([^`]+)`/g)) found.add(commandPaths(words(m[1]!))[0]!);
  for (const block of readme.matchAll(/^```(?:sh|bash|shell|console)\n([\s\S]*?)^```/gm))
    for (const line of block[1]!.split("\n"))
      for (const m of line.replace(/#.*$/, "").matchAll(/(?:^|&&\s*|\|\s*)agent ([^&|]+)/g))
        for (const p of commandPaths(words(m[1]!))) found.add(p);
  return [...found].sort();
}

describe("the README, command by command, from the installed package", () => {
  let tour: string;
  let env: NodeJS.ProcessEnv;
  const inTour = (args: readonly string[], timeoutMs?: number, input?: string) =>
    cli(args, {
      cwd: tour,
      env,
      bin,
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(input !== undefined ? { input } : {}),
    });
  const git = (...args: string[]) => execFileSync("git", args, { cwd: tour, encoding: "utf8" });
  let sessionId = "";

  /** `command` in a terminal (tmux, on a private server), in the tour project with its env. */
  async function inTmux(command: string[], name: string) {
    const socket = join(scratch, `tmux-${name}.sock`);
    const tmux = (...args: string[]) => execFileSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
    const vars = { ...env, TERM: "xterm-256color" } as Record<string, string>;
    delete vars["NO_COLOR"];
    const script = join(scratch, `tmux-${name}.sh`);
    const quote = (v: string) => `'${v.replace(/'/g, "'\\''")}'`;
    writeFileSync(
      script,
      `#!/bin/sh\ncd ${quote(tour)}\n${Object.entries(vars)
        .map(([k, v]) => `export ${k}=${quote(v)}`)
        .join("\n")}\n${command.map(quote).join(" ")}\necho "AGENT_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "agent", "-x", "110", "-y", "40", script);
    return {
      read: () => tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "agent"),
      keys: (...keys: string[]) => tmux("send-keys", "-t", "agent", ...keys),
      kill: () => {
        try {
          tmux("kill-server");
        } catch {
          // already gone
        }
      },
    };
  }

  beforeAll(() => {
    tour = join(scratch, "tour");
    execFileSync("mkdir", ["-p", tour]);
    env = { ...userEnv(), ANTHROPIC_BASE_URL: fake.url };
    git("init", "-q", "-b", "main");
    writeFileSync(join(tour, "calc.js"), "export const add = (a, b) => a - b;\n");
    git("add", ".");
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "first");
  });

  it("agent init, validate, providers, add and lock set a project up", async () => {
    const init = await inTour(["init"], 120_000);
    expect(init.code, init.stderr).toBe(0);
    expect(existsSync(join(tour, ".agent", "agent.lock.hcl"))).toBe(true);
    // ANTHROPIC_BASE_URL (the fake vendor here, a proxy for a user) is written beside the key.
    expect(readFileSync(join(tour, "agent.hcl"), "utf8")).toMatch(
      /provider "anthropic" \{[^}]*base_url += env\("ANTHROPIC_BASE_URL"\)/,
    );
    const valid = await inTour(["validate"]);
    expect(valid.code, valid.stdout + valid.stderr).toBe(0);
    const providers = await inTour(["providers"]);
    expect(providers.code, providers.stderr).toBe(0);
    expect(providers.stdout).toContain("filesystem");
    for (const args of [
      ["providers", "lock"],
      ["providers", "upgrade"],
      ["providers", "prune", "--dry-run"],
    ]) {
      const r = await inTour(args);
      expect({ args, code: r.code, err: r.stderr }).toMatchObject({ code: 0 });
    }
    const before = readFileSync(join(tour, "agent.hcl"), "utf8");
    const added = await inTour(["add", "web-ui"]);
    expect(added.code, added.stderr).toBe(0);
    const withWeb = readFileSync(join(tour, "agent.hcl"), "utf8");
    expect(withWeb).toMatch(/source += "[^"]*web-ui"/);
    expect((await inTour(["add", "web-ui"])).code).toBe(0);
    expect(readFileSync(join(tour, "agent.hcl"), "utf8")).toBe(withWeb);
    writeFileSync(join(tour, "agent.hcl"), before);
  }, 240_000);

  it("agent mcp add, list and remove a real MCP server from npm", async () => {
    const server = join(
      REPO_ROOT,
      "node_modules",
      "@modelcontextprotocol",
      "server-everything",
      "dist",
      "index.js",
    );
    const before = readFileSync(join(tour, "agent.hcl"), "utf8");
    const add = await inTour(["mcp", "add", "everything", "--", "node", server, "stdio"], 90_000);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stderr).not.toContain("did not start");
    const list = await inTour(["mcp", "list"], 90_000);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^everything .*\d+ tools/m);
    const removed = await inTour(["mcp", "remove", "everything"]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(readFileSync(join(tour, "agent.hcl"), "utf8")).toBe(before);
  }, 240_000);

  it("headless runs, piped prompts and the session commands", async () => {
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "filesystem__write_file",
            args: { path: "calc.js", content: "export const add = (a, b) => a + b;\n" },
          },
        ],
      },
      { kind: "text", text: "Fixed add." },
    );
    const fixed = await inTour(
      ["run", "-p", "fix add in calc.js", "--headless-ask", "allow", "--output-format", "json"],
      90_000,
    );
    expect(fixed.code, fixed.stderr).toBe(0);
    sessionId = String(JSON.parse(fixed.stdout)["session_id"]);
    expect(readFileSync(join(tour, "calc.js"), "utf8")).toContain("a + b");
    // `git diff | agent run -p "review this"`: the diff follows the prompt.
    fake.push({ kind: "text", text: "Looks right." });
    const reviewed = await inTour(["run", "-p", "review this"], 90_000, git("diff"));
    expect(reviewed.code, reviewed.stderr).toBe(0);
    expect(fake.requests.at(-1)!.bodyText).toContain("review this");
    expect(fake.requests.at(-1)!.bodyText).toContain("a + b");
    // `echo "<prompt>" | agent run -p`
    fake.push({ kind: "text", text: "Piped." });
    const piped = await inTour(["run", "-p", "--output-format", "json"], 90_000, "say something piped\n");
    expect(piped.code, piped.stderr).toBe(0);
    expect(fake.requests.at(-1)!.bodyText).toContain("say something piped");
    const pipedId = String(JSON.parse(piped.stdout)["session_id"]);

    const list = await inTour(["sessions", "list"]);
    expect(list.stdout).toContain(sessionId);
    const shown = await inTour(["sessions", "show", sessionId.slice(0, 10)]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("Fixed add.");
    const replayed = await inTour(["sessions", "replay", sessionId], 60_000);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stdout).toContain("Fixed add.");
    const prompts = await inTour(["sessions", "rewind", sessionId]);
    const first = /^ {2}([0-9A-Z]{26}) {2}\S+ {2}fix add in calc\.js$/m.exec(prompts.stdout)?.[1];
    expect(first, prompts.stdout).toBeDefined();
    const back = await inTour(["sessions", "rewind", sessionId, "--to", first!, "--yes"]);
    expect(back.code, back.stderr).toBe(0);
    expect(readFileSync(join(tour, "calc.js"), "utf8")).toContain("a - b");
    const pruned = await inTour(["sessions", "prune", pipedId]);
    expect(pruned.stdout).toContain(`deleted ${pipedId}`);
  }, 240_000);

  it("agent memory lists, shows, approves, rejects and forgets", async () => {
    fake.push({ kind: "text", text: "Understood." });
    const said = await inTour(["run", "-p", "From now on, write commit messages in English."], 90_000);
    expect(said.code, said.stderr).toBe(0);
    const pending = await inTour(["memory", "list", "--pending", "--json"]);
    const ids = (JSON.parse(pending.stdout) as { id: string }[]).map((r) => r.id);
    expect(ids).toHaveLength(1);
    const listed = await inTour(["memory", "list"]);
    expect(listed.stdout).toContain(`memory/${ids[0]}  [pending`);
    expect((await inTour(["memory", "show", ids[0]!])).stdout).toContain("write commit messages in English");
    expect((await inTour(["memory", "approve", ids[0]!])).code).toBe(0);
    writeFileSync(
      join(tour, ".agent", "memory", "tabs.md"),
      "---\ntitle: Tabs\ntype: feedback\nstatus: pending\n---\n\nIndent with tabs.\n",
    );
    expect((await inTour(["memory", "reject", "tabs"])).stdout).toContain('Rejected the memory draft "tabs"');
    expect((await inTour(["memory", "forget", ids[0]!])).code).toBe(0);
    expect(JSON.parse((await inTour(["memory", "list", "--json"])).stdout)).toEqual([]);
  }, 240_000);

  it("agent mcp serve answers a real MCP client with the profile's tools", async () => {
    ran.add("mcp serve");
    const client = new Client({ name: "install-test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: bin,
        args: ["mcp", "serve"],
        cwd: tour,
        env: env as Record<string, string>,
      }),
    );
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain("filesystem__read_file");
    } finally {
      await client.close();
    }
  }, 120_000);

  it("agent serve, run --detach and attach, on the web and in a terminal", async () => {
    const started = await inTour(["serve", "--background", "--web"], 90_000);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toContain("web UI: http://127.0.0.1:");
    try {
      fake.push({ kind: "text", text: "Detached answer." });
      const detached = await inTour(["run", "--detach", "Fix the failing test"], 90_000);
      expect(detached.code, detached.stderr).toBe(0);
      const id = detached.stdout.trim();
      expect(id).toMatch(/^[0-9A-Z]{26}$/);
      const web = await inTour(["attach", id.slice(0, 8), "--web"]);
      expect(web.code, web.stderr).toBe(0);
      expect(web.stdout).toMatch(/http:\/\/127\.0\.0\.1:\d+\/\S*token=/);
      expect((await inTour(["sessions", "list"])).stdout).toMatch(new RegExp(`${id}.*\\bserve\\b`));
      // The terminal UI on it: the transcript so far, then leaving detaches only.
      const pane = await inTmux([bin, "attach", id], "attach");
      try {
        await waitForText(pane.read, "Detached answer.", 30_000);
        ran.add("attach");
      } finally {
        pane.kill();
      }
      expect((await inTour(["serve", "--status"])).code).toBe(0);
    } finally {
      expect((await inTour(["serve", "--stop"])).code).toBe(0);
    }
  }, 240_000);

  it("agent run in a terminal: a message, the answer, and the way back on exit", async () => {
    fake.push({ kind: "text", text: "Hello from the installed terminal UI." });
    const pane = await inTmux([bin, "run"], "run");
    try {
      await waitForText(pane.read, /^› /m, 60_000);
      pane.keys("say hello", "Enter");
      await waitForText(pane.read, "Hello from the installed terminal UI.", 60_000);
      pane.keys("/exit", "Enter");
      await waitForText(pane.read, /agent run --resume [0-9A-Z]{26}/, 30_000);
      ran.add("run");
    } finally {
      pane.kill();
    }
  }, 180_000);

  it("agent completion prints a script for the shell", async () => {
    const r = await inTour(["completion", "bash"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("complete ");
  });

  it("fleet mode: a worker and batches from the installed package, on real Redis and PostgreSQL", async () => {
    // The fleet (BullMQ, pg) ships inside the CLI's bundle: nothing of this repository is on
    // the worker's or the commands' PATH.
    const w = await startFleetWorld({ bin, run: cli, env: { PATH: userEnv().PATH } });
    try {
      const help = await cli(["batch", "--help"], { cwd: w.project, env: w.env, bin });
      expect(help.stdout).toMatch(/submit[\s\S]*status[\s\S]*results[\s\S]*cancel[\s\S]*retry/);
      const worker = w.worker(["--concurrency", "2"]);
      for (const p of commandPaths(["worker", "--concurrency", "2"])) ran.add(p);
      await w.waitFor("the installed worker to be ready", async () => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited:\n${worker.output()}`);
        return worker.output().includes(" ready: ");
      });
      const one = await w.submit(["-p", "Do task-i1 please.", "--target", w.target("i1")]);
      const promptFile = join(w.sb.home, "review.md");
      writeFileSync(promptFile, "Do task-{{name}} please.\n");
      const list = join(w.sb.home, "tasks.jsonl");
      writeFileSync(
        list,
        ["i2", "i3"].map((name) => JSON.stringify({ target: w.target(name), name })).join("\n"),
      );
      const two = await w.submit(["--prompt-file", promptFile, "--jsonl", list]);
      // --watch follows the batch and returns once it has finished.
      const watched = await w.batch(["status", two, "--watch"]);
      expect(watched.code, watched.stderr).toBe(0);
      expect(watched.stdout).toContain("2/2");
      const results = await w.batch(["results", two, "--format", "md"]);
      expect(results.code, results.stderr).toBe(0);
      expect(results.stdout).toContain("Finished i2.");
      expect(results.stdout).toContain("Finished i3.");
      await w.waitFor("the first batch to finish", async () =>
        (await w.catalog.tasks(one)).every((t) => t.status === "completed"),
      );
      const retry = await w.batch(["retry", one, "--failed"]);
      expect(retry.stdout).toContain("0 task(s) queued again");
      const cancel = await w.batch(["cancel", one]);
      expect(cancel.stdout).toContain("0 queued task(s) will not run");
      const sessions = await cli(["sessions", "list", "--batch", two, "--json"], {
        cwd: w.project,
        env: w.env,
        bin,
      });
      expect(sessions.code, sessions.stderr).toBe(0);
      expect(JSON.parse(sessions.stdout)).toHaveLength(2);
    } finally {
      await w.close();
    }
  }, 120_000);

  it("ran every command the README documents", () => {
    const documented = readmeCommands();
    expect(documented.length).toBeGreaterThan(30);
    expect(documented.filter((c) => !ran.has(c))).toEqual([]);
  });
});
