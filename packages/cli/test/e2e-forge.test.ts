// End to end, the way a plugin author and a user meet: `agent plugin new` → `agent plugin
// build` → the release published on a loopback fake forge → another project's
// `agent providers lock` installs it, writes the lock, and `agent run -p` calls its tool
// through a scripted model. Then what can go wrong: a tampered install, a newer release
// (upgrade), a constraint nothing satisfies, no network at all, and what the installed
// plugin's process can see (its environment, its sandbox).
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeForge, startFakeForge } from "@pluggableharness/fake-forge";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const GH_TOKEN = "ghp_e2eCANARY000111222333444555666777888";
const SECRET = "canary-secret-should-never-reach-a-plugin";

let sb: Sandbox;
let forge: FakeForge;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;
let author: string;
let project: string;

const cacheRoot = () => join(sb.home, "cache", "agent", "providers");

function publishBuild(dir: string, source: string) {
  const release = join(dir, "dist", "release");
  const assets: Record<string, Uint8Array> = {};
  for (const name of readdirSync(release)) assets[name] = readFileSync(join(release, name));
  const version = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).version as string;
  forge.publish({ source, tag: `v${version}`, assets, private: true });
}

function projectConfig(constraint: string): string {
  return `required_providers {
  anthropic = {
    source  = "pluggableharness/anthropic"
    version = ">= 0.1.0"
  }
  wordcount = {
    source  = "github.com/acme/provider-wordcount"
    version = "${constraint}"
  }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
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
  tools     = ["wordcount.*"]
  max_turns = 4
}
`;
}

const lockText = () => readFileSync(join(project, ".agent", "agent.lock.hcl"), "utf8");

async function runCount(text: string) {
  fake.push(
    { kind: "tool_calls", calls: [{ name: "wordcount__count_words", args: { text } }] },
    { kind: "text", text: "Counted." },
  );
  return agent(["run", "-p", "count the words", "--output-format", "stream-json"], { cwd: project, env });
}

beforeAll(async () => {
  sb = sandbox();
  forge = await startFakeForge({ githubToken: GH_TOKEN });
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    XDG_CACHE_HOME: join(sb.home, "cache"),
    AGENT_GITHUB_API_URL: forge.githubApi,
    GITHUB_TOKEN: GH_TOKEN,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    MY_SECRET: SECRET,
  };
  // The author's side: scaffold, test (agent conform), build, publish.
  const work = sb.dir("author");
  const created = await agent(
    ["plugin", "new", "provider-wordcount", "--source", "github.com/acme/provider-wordcount"],
    { cwd: work, env },
  );
  expect(created.code, created.stderr).toBe(0);
  author = join(work, "provider-wordcount");
  const built = await agent(["plugin", "build"], { cwd: author, env, timeoutMs: 60_000 });
  expect(built.code, built.stderr).toBe(0);
  expect(built.stdout).toContain("dist/release/provider-wordcount_0.1.0_linux_amd64.tar.gz");
  publishBuild(author, "github.com/acme/provider-wordcount");
  project = sb.dir("project");
}, 120_000);

afterAll(async () => {
  await fake?.close();
  await forge?.close().catch(() => {});
  sb?.cleanup();
});

describe("a plugin from a forge", () => {
  it("the scaffold's own test passes: its build is conformant", async () => {
    const r = await agent(
      [
        "conform",
        join(author, "dist", "dev", "provider-wordcount"),
        "--samples",
        join(author, "test", "samples.json"),
      ],
      { cwd: author, env },
    );
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain("PASS tool.invoke.count_words.sample-1");
  });

  it("installs: agent providers lock writes the lock, agent run -p uses the tool", async () => {
    writeFileSync(join(project, "agent.hcl"), projectConfig("~> 0.1"));
    const lock = await agent(["providers", "lock"], { cwd: project, env });
    expect(lock.code, lock.stderr).toBe(0);
    expect(lock.stderr).toContain("Installed github.com/acme/provider-wordcount 0.1.0 (linux_amd64)");
    const text = lockText();
    expect(text).toContain("lock_file_version = 1");
    expect(text).toMatch(
      /provider "wordcount" \{\n {2}source {6}= "github\.com\/acme\/provider-wordcount"\n {2}version {5}= "0\.1\.0"\n {2}resolved_at = "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\n {2}checksums = \{/,
    );
    for (const p of ["darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"])
      expect(text).toMatch(new RegExp(`"${p}" += "sha256:[0-9a-f]{64}"`));
    expect(text).toMatch(/provider "anthropic" \{[^}]*"any"/s);
    expect(text).not.toContain(GH_TOKEN);

    const r = await runCount("one two three\nfour");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    expect(results).toHaveLength(1);
    expect(JSON.stringify(results[0])).toContain('"words":4');
    // The model was offered the tool under its provider's name.
    const init = records(r.stdout)[0]!;
    expect((init["tools"] as { name: string }[]).map((t) => t.name)).toEqual(["wordcount__count_words"]);
    // The cached build learnt which producer it is (for prune).
    const entry = readdirSync(
      join(cacheRoot(), "github.com", "acme", "provider-wordcount", "0.1.0", "linux_amd64"),
    )[0]!;
    const producers = JSON.parse(
      readFileSync(
        join(
          cacheRoot(),
          "github.com",
          "acme",
          "provider-wordcount",
          "0.1.0",
          "linux_amd64",
          entry,
          "producers.json",
        ),
        "utf8",
      ),
    );
    expect(producers).toEqual([{ category: 2, name: "provider-wordcount", version: "0.1.0" }]);
  });

  it("runs offline from a warm cache", async () => {
    const dead = { ...env, AGENT_GITHUB_API_URL: "http://127.0.0.1:9" };
    fake.push(
      { kind: "tool_calls", calls: [{ name: "wordcount__count_words", args: { text: "a b" } }] },
      { kind: "text", text: "ok" },
    );
    const r = await agent(["run", "-p", "count", "--output-format", "stream-json"], {
      cwd: project,
      env: dead,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('\\"words\\":2');
  });

  it("refuses to run a build that changed after it was installed, naming the file and the platform", async () => {
    const base = join(cacheRoot(), "github.com", "acme", "provider-wordcount", "0.1.0", "linux_amd64");
    const bundle = join(base, readdirSync(base)[0]!, "pkg", "provider-wordcount.mjs");
    const original = readFileSync(bundle);
    writeFileSync(bundle, `${original.toString("utf8")}\n// tampered\n`);
    try {
      const r = await agent(["run", "-p", "count"], { cwd: project, env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${bundle} does not match the release asset`);
      expect(r.stderr).toContain("linux_amd64");
      expect(r.stderr).toMatch(/agent\.hcl:\d+:\d+/);
      expect(r.stderr).toContain("will not run");
    } finally {
      writeFileSync(bundle, original);
    }
  });

  it("a release within the constraint: upgrade moves the lock, lock and run keep it", async () => {
    const pkgFile = join(author, "package.json");
    const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
    writeFileSync(pkgFile, JSON.stringify({ ...pkg, version: "0.1.1" }, null, 2));
    const built = await agent(["plugin", "build"], { cwd: author, env, timeoutMs: 60_000 });
    expect(built.code, built.stderr).toBe(0);
    publishBuild(author, "github.com/acme/provider-wordcount");
    const before = lockText();
    const kept = await agent(["providers", "lock"], { cwd: project, env });
    expect(kept.code, kept.stderr).toBe(0);
    expect(lockText()).toBe(before);
    const up = await agent(["providers", "upgrade"], { cwd: project, env });
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toContain("wordcount  github.com/acme/provider-wordcount 0.1.1 (was 0.1.0)");
    expect(lockText()).toContain('version     = "0.1.1"');
    // upgrade installed it; the run uses the new build (its producers record says so).
    const r = await runCount("x y z");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    expect(JSON.stringify(records(r.stdout).find((x) => x["type"] === "tool_result"))).toContain('"words":3');
    const base = join(cacheRoot(), "github.com", "acme", "provider-wordcount", "0.1.1", "linux_amd64");
    const producers = JSON.parse(readFileSync(join(base, readdirSync(base)[0]!, "producers.json"), "utf8"));
    expect(producers).toEqual([{ category: 2, name: "provider-wordcount", version: "0.1.1" }]);
  });

  it("a constraint no release satisfies is a clear error at its line", async () => {
    const other = sb.dir("unsatisfiable");
    writeFileSync(join(other, "agent.hcl"), projectConfig("~> 2.0"));
    const r = await agent(["run", "-p", "hi"], { cwd: other, env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${join(other, "agent.hcl")}:6:3: error[version_constraint]`);
    expect(r.stderr).toContain(
      'No release of github.com/acme/provider-wordcount satisfies "~> 2.0" (agent.hcl asks for it); GitHub',
    );
    expect(r.stderr).toContain("has 0.1.1, 0.1.0.");
    expect(existsSync(join(other, ".agent", "agent.lock.hcl"))).toBe(false);
  });

  it("a first run without a lock installs the provider and writes the lock", async () => {
    const fresh = sb.dir("fresh");
    writeFileSync(join(fresh, "agent.hcl"), projectConfig("0.1.0"));
    fake.push({ kind: "text", text: "hello" });
    const r = await agent(["run", "-p", "hi"], { cwd: fresh, env });
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(join(fresh, ".agent", "agent.lock.hcl"), "utf8")).toContain('version     = "0.1.0"');
  });

  it("agent add installs a forge provider, lists its tools in the profile and locks it", async () => {
    const dir = sb.dir("added");
    const without = projectConfig("0.1.0")
      .replace(/ {2}wordcount = \{[^}]*\}\n/, "")
      .replace('tools     = ["wordcount.*"]', "tools     = []");
    writeFileSync(join(dir, "agent.hcl"), without);
    // A pasted repository URL names the same source.
    const add = await agent(["add", "https://github.com/acme/provider-wordcount"], { cwd: dir, env });
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('agent_profile "default" now lists "wordcount.*"');
    const text = readFileSync(join(dir, "agent.hcl"), "utf8");
    expect(text).toContain('  wordcount = {\n    source  = "github.com/acme/provider-wordcount"\n');
    expect(text).toContain('tools     = ["wordcount.*"]');
    expect(text).toMatch(/\nprovider "wordcount" \{/);
    expect(readFileSync(join(dir, ".agent", "agent.lock.hcl"), "utf8")).toMatch(
      /provider "wordcount" \{\n {2}source {6}= "github\.com\/acme\/provider-wordcount"/,
    );
    fake.push(
      { kind: "tool_calls", calls: [{ name: "wordcount__count_words", args: { text: "a b c" } }] },
      { kind: "text", text: "Counted." },
    );
    const r = await agent(["run", "-p", "count", "--output-format", "stream-json"], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    const result = records(r.stdout).find((x) => x["type"] === "tool_result");
    expect(JSON.stringify(result)).toContain('"words":3');
  });

  it("prune keeps the locked build and the one a session used, and --force deletes the latter", async () => {
    const dry = await agent(["providers", "prune", "--dry-run"], { cwd: project, env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      "kept     github.com/acme/provider-wordcount 0.1.1 (linux_amd64): pinned by",
    );
    expect(dry.stdout).toMatch(
      /kept {5}github\.com\/acme\/provider-wordcount 0\.1\.0 \(linux_amd64\): session [0-9A-Z]{26} was written by it/,
    );
    const forced = await agent(["providers", "prune", "--force"], { cwd: project, env });
    expect(forced.stdout).toMatch(/removed {2}github\.com\/acme\/provider-wordcount 0\.1\.0 \(linux_amd64\)/);
    expect(existsSync(join(cacheRoot(), "github.com", "acme", "provider-wordcount", "0.1.0"))).toBe(false);
    expect(existsSync(join(cacheRoot(), "github.com", "acme", "provider-wordcount", "0.1.1"))).toBe(true);
  });
});

describe("what an installed plugin's process gets", () => {
  it("its own process, the empty environment plus the allowlist, and a read-only sandbox for a data source", async () => {
    // A probe plugin, built and published like any other.
    const probe = sb.dir("probe-author");
    const made = await agent(["plugin", "new", "provider-probe", "-C", probe], { cwd: sb.home, env });
    expect(made.code, made.stderr).toBe(0);
    writeFileSync(
      join(probe, "src", "main.ts"),
      `import { writeFileSync } from "node:fs";
import { s, serveTools } from "@pluggableharness/tool-kit";
import pkg from "../package.json" with { type: "json" };
await serveTools(pkg, {
  tools: [{
    name: "probe", kind: "data_source", risk: "read_only", description: "what this process sees",
    input: s.object({ target: s.string("a file to try to write") }, ["target"]),
    output: s.object({ pid: s.integer(), ppid: s.integer(), env: s.string(), wrote: s.boolean() }, ["pid", "ppid", "env", "wrote"]),
    streaming: false, concurrency: { safe: true }, idempotent: true,
    async invoke(args) {
      let wrote = false;
      try { writeFileSync(args.target, "x"); wrote = true; } catch {}
      return { pid: process.pid, ppid: process.ppid, env: Object.keys(process.env).sort().join(","), wrote };
    },
  }],
});
`,
    );
    const built = await agent(["plugin", "build", "--platform", "linux_amd64"], {
      cwd: probe,
      env,
      timeoutMs: 60_000,
    });
    expect(built.code, built.stderr).toBe(0);
    publishBuild(probe, "github.com/acme/provider-probe");
    const dir = sb.dir("probe-project");
    writeFileSync(
      join(dir, "agent.hcl"),
      projectConfig("0.1.1")
        .replace(
          'wordcount = {\n    source  = "github.com/acme/provider-wordcount"',
          'probe = {\n    source  = "github.com/acme/provider-probe"',
        )
        .replace('version = "0.1.1"', 'version = "0.1.0"')
        .replace('["wordcount.*"]', '["probe.*"]'),
    );
    const target = join(dir, "written-by-plugin.txt");
    fake.push(
      { kind: "tool_calls", calls: [{ name: "probe__probe", args: { target } }] },
      { kind: "text", text: "done" },
    );
    const r = await agent(["run", "-p", "probe", "--output-format", "stream-json"], { cwd: dir, env });
    expect(r.code, r.stderr).toBe(0);
    const result = records(r.stdout).find((x) => x["type"] === "tool_result")!;
    const payload = result["result"] as { pid: number; ppid: number; env: string; wrote: boolean };
    // Its own PID namespace (bubblewrap's init is its parent): no other process is visible.
    expect(payload.ppid).toBe(1);
    expect(payload.pid).toBeLessThan(10);
    const names = payload.env.split(",");
    // Nothing of the user's environment but the allowlist (PWD: the launcher's sh sets it);
    // never a secret or a token.
    const allowed = new Set([
      "PWD",
      "PATH",
      "HOME",
      "TMPDIR",
      "LANG",
      "AGENT_NODE",
      "PLUGIN_PROTOCOL_VERSIONS",
      "PLUGIN_UNIX_SOCKET_DIR",
      "PLUGIN_MIN_PORT",
      "PLUGIN_MAX_PORT",
      "PLUGGABLEHARNESS_PLUGIN",
      // AutoMTLS: the kernel's public certificate. (The launch token is gone: the SDK took it.)
      "PLUGIN_CLIENT_CERT",
    ]);
    expect(names.filter((n) => !allowed.has(n))).toEqual([]);
    expect(JSON.stringify(result)).not.toContain(SECRET);
    expect(JSON.stringify(result)).not.toContain(GH_TOKEN);
    // A data source runs read-only: the write into the project failed.
    expect(payload.wrote).toBe(false);
    expect(existsSync(target)).toBe(false);
  });

  it("a model plugin from a forge is sandboxed too: read-only, its own PID namespace, the allowlisted environment", async () => {
    const author2 = sb.dir("echo-author");
    const made = await agent(["plugin", "new", "provider-echo", "--category", "model", "-C", author2], {
      cwd: sb.home,
      env,
    });
    expect(made.code, made.stderr).toBe(0);
    // The echo model answers with what its process sees instead of the user's words.
    const main = join(author2, "src", "main.ts");
    const dir = sb.dir("echo-project");
    const target = join(dir, "written-by-model.txt");
    const text = readFileSync(main, "utf8");
    writeFileSync(
      main,
      `import { writeFileSync as probeWrite } from "node:fs";\n${text.replace(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the scaffold's source text
        'if (text !== "") return `You said: ${text}`;',
        `if (text !== "") {
      let wrote = false;
      try { probeWrite(${JSON.stringify(target)}, "x"); wrote = true; } catch {}
      return JSON.stringify({ ppid: process.ppid, wrote, env: Object.keys(process.env).sort().join(",") });
    }`,
      )}`,
    );
    expect(readFileSync(main, "utf8")).toContain("probeWrite(");
    const built = await agent(["plugin", "build", "--platform", "linux_amd64"], {
      cwd: author2,
      env,
      timeoutMs: 60_000,
    });
    expect(built.code, built.stderr).toBe(0);
    publishBuild(author2, "github.com/acme/provider-echo");
    writeFileSync(
      join(dir, "agent.hcl"),
      `required_providers {
  echo = {
    source  = "github.com/acme/provider-echo"
    version = "~> 0.1"
  }
}

agent_profile "default" {
  model {
    primary {
      provider = "echo"
      id       = "echo-1"
    }
  }
  tools = []
}
`,
    );
    // Twice: the first run describes it unconfined and relaunches it in its sandbox; the
    // second starts it sandboxed from the describe cache.
    for (const round of [1, 2]) {
      const r = await agent(["run", "-p", "who are you", "--output-format", "json"], { cwd: dir, env });
      expect(r.code, `round ${round}: ${r.stderr}`).toBe(0);
      const answer = JSON.parse(JSON.parse(r.stdout).result) as { ppid: number; wrote: boolean; env: string };
      expect(answer.ppid).toBe(1);
      expect(answer.wrote).toBe(false);
      expect(existsSync(target)).toBe(false);
      expect(answer.env.split(",")).not.toContain("MY_SECRET");
      expect(answer.env.split(",")).not.toContain("GITHUB_TOKEN");
      expect(answer.env.split(",")).not.toContain("PLUGGABLEHARNESS_KERNEL_TOKEN");
    }
  });
});
