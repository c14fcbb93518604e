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
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packCli } from "../../../scripts/pack-cli.ts";
import { AGENT_BIN, agent, REPO_ROOT, records } from "./helpers.ts";

const NODE24_BIN = dirname(process.execPath);
const CLI_VERSION = JSON.parse(
  readFileSync(join(REPO_ROOT, "packages", "cli", "package.json"), "utf8"),
).version;

let scratch: string;
let tarball: string;
let installed: string;
let bin: string;
let project: string;
let fake: FakeVendor;

/** The environment of a user elsewhere: Node 24 first on PATH, nothing of this repository. */
function userEnv(path = `${NODE24_BIN}:${join(scratch, "prefix", "bin")}:/usr/bin:/bin`): NodeJS.ProcessEnv {
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
  tarball = await packCli(REPO_ROOT, join(scratch, "pack"));
  // npm from PATH (on Node 24), offline-first from the cache `npm ci` filled.
  execFileSync(
    "npm",
    [
      "install",
      "-g",
      "--prefix",
      join(scratch, "prefix"),
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarball,
    ],
    {
      cwd: scratch,
      env: { ...process.env, PATH: `${NODE24_BIN}:${process.env["PATH"] ?? ""}` },
      stdio: "pipe",
    },
  );
  installed = join(scratch, "prefix", "lib", "node_modules", "@pluggableharness", "cli");
  bin = join(scratch, "prefix", "bin", "agent");
  project = join(scratch, "elsewhere");
  execFileSync("mkdir", ["-p", project, join(scratch, "home")]);
}, 240_000);

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
    const r = await agent(["--version"], { cwd: project, env: userEnv(), bin });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(CLI_VERSION);
    const d = await agent(["doctor"], { cwd: project, env: userEnv(), bin });
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
    const init = await agent(["init"], { cwd: project, env: userEnv(), bin });
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
    const r = await agent(["run", "-p", "read notes.txt", "--output-format", "stream-json"], {
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
      const lock = await agent(["providers", "lock"], { cwd: dir, env, bin: writer });
      expect(lock.code, lock.stderr).toBe(0);
      const v = await agent(["validate"], { cwd: dir, env: reader === bin ? env : cloneEnv, bin: reader });
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
    const v = await agent(["validate"], { cwd: dir, env, bin });
    expect(v.code, v.stdout + v.stderr).toBe(0);
    // `agent serve` configures the declared frontends: the UI is served from the package.
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
    const made = await agent(["plugin", "new", "provider-hello", "-C", join(scratch, "hello")], {
      cwd: scratch,
      env,
      bin,
    });
    expect(made.code, made.stderr).toBe(0);
    const built = await agent(["plugin", "build", "--dev"], {
      cwd: join(scratch, "hello"),
      env,
      bin,
      timeoutMs: 60_000,
    });
    expect(built.code, built.stderr).toBe(0);
    const launcher = join(scratch, "hello", "dist", "dev", "provider-hello");
    // The build inlines the SDK: nothing imports from the installation at run time.
    expect(readFileSync(`${launcher}.mjs`, "utf8")).not.toContain(installed);
    const r = await agent(
      ["conform", launcher, "--samples", join(scratch, "hello", "test", "samples.json")],
      {
        cwd: join(scratch, "hello"),
        env,
        bin,
      },
    );
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/PASS tool\.invoke\./);
  });

  it("under an older Node, one line says which Node it needs, exit 1, no SyntaxError", async () => {
    const old = oldNode();
    const path = `${dirname(old)}:${join(scratch, "prefix", "bin")}:/usr/bin:/bin`;
    const r = await agent(["--version"], { cwd: project, env: userEnv(path), bin });
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
