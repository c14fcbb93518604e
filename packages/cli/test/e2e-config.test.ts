// End-to-end: the configuration-facing commands of the real binary — zero config
// without a key, init, validate and providers against the first-party plugins.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, REPO_ROOT, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;

beforeAll(() => {
  sb = sandbox();
});

afterAll(() => {
  sb?.cleanup();
});

describe("zero configuration", () => {
  it("without agent.hcl and without a vendor key, says exactly what to set and exits non-zero", async () => {
    const empty = sb.dir("empty");
    const r = await agent(["run", "-p", "hello"], { cwd: empty, env: sb.env });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      "agent: Without an agent.hcl the agent needs a model vendor credential. Set one of ANTHROPIC_API_KEY, " +
        "OPENAI_API_KEY, GEMINI_API_KEY (or GOOGLE_API_KEY), XAI_API_KEY, or OPENAI_BASE_URL together with " +
        "OPENAI_MODEL for an OpenAI-compatible server (OPENAI_API_KEY optional) - or write an agent.hcl.\n",
    );
    // No session was started.
    expect(existsSync(join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions"))).toBe(false);
  });

  it("prints the version and documents the exit codes in run --help", async () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "packages", "cli", "package.json"), "utf8"));
    const v = await agent(["--version"], { cwd: sb.home, env: sb.env });
    expect(v).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    const help = await agent(["run", "--help"], { cwd: sb.home, env: sb.env });
    expect(help.code).toBe(0);
    for (const text of [
      "--headless-ask",
      "--output-format",
      "--max-wall-clock",
      "3  a bound was reached",
      "4  cancelled",
    ]) {
      expect(help.stdout).toContain(text);
    }
    const bad = await agent(["run", "--output-format", "yaml", "-p", "x"], { cwd: sb.home, env: sb.env });
    expect(bad.code).toBe(2);
    // `agent conform` is the conformance library's own command line.
    const conform = await agent(["conform", "--help"], { cwd: sb.home, env: sb.env });
    expect(conform.code).toBe(0);
    expect(conform.stdout).toContain("usage: agent conform <plugin-executable>");
    const noPlugin = await agent(["conform"], { cwd: sb.home, env: sb.env });
    expect(noPlugin.code).toBe(2);
    expect(noPlugin.stderr).toContain("missing the plugin executable");
  });
});

describe("the README's try-it-without-a-key command", () => {
  it("runs zero-config against the fake vendor's command line server", async () => {
    // npm start -w testing/fake-vendors -- --port <n>, as the README says (port 0: any).
    const server = spawn(
      join(REPO_ROOT, "node_modules", ".bin", "node"),
      [join(REPO_ROOT, "testing", "fake-vendors", "src", "cli.ts"), "--port", "0", "--quiet"],
      {
        stdio: ["ignore", "pipe", "ignore"],
      },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        server.stdout!.setEncoding("utf8").once("data", (d: string) => resolve(d.split("\n")[0]!.trim()));
        server.once("exit", () => reject(new Error("the fake vendor exited")));
      });
      const project = sb.dir("try-it");
      const r = await agent(["run", "-p", "say OK"], {
        cwd: project,
        env: { ...sb.env, OPENAI_BASE_URL: `${url}/v1`, OPENAI_MODEL: "demo" },
      });
      expect(r.stderr).toBe("");
      expect(r).toMatchObject({ code: 0, stdout: "OK\n" });
    } finally {
      server.kill();
    }
  });
});

describe("agent init", () => {
  it("writes a commented agent.hcl for the keys found and explains the next step", async () => {
    const dir = sb.dir("init");
    const env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-canary-1234", XAI_API_KEY: "xai-canary-5678" };
    const r = await agent(["init"], { cwd: dir, env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Next:");
    expect(r.stdout).toContain("agent validate");
    const text = readFileSync(join(dir, "agent.hcl"), "utf8");
    expect(text).toContain('api_key = env("ANTHROPIC_API_KEY")');
    expect(text).toContain('api_key = env("XAI_API_KEY")');
    expect(text).toMatch(/^# /m);
    // Keys are never written.
    expect(text).not.toContain("canary");
    // Like terraform init: written once, then kept; every run (re)writes the lock.
    expect(readFileSync(join(dir, ".agent", "agent.lock.hcl"), "utf8")).toMatch(/provider "anthropic" \{/);
    writeFileSync(join(dir, "agent.hcl"), `${text}\n# mine\n`);
    const again = await agent(["init"], { cwd: dir, env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("exists; kept it");
    expect(readFileSync(join(dir, "agent.hcl"), "utf8")).toBe(`${text}\n# mine\n`);
  });
});

describe("agent validate and agent providers", () => {
  it("accepts the fixture project, launching every plugin for its schema", async () => {
    const repo = sb.repo("valid");
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: "http://127.0.0.1:9",
      FIXTURE_ROOT: repo,
    };
    const [v, p] = await Promise.all([
      agent(["validate"], { cwd: repo, env }),
      agent(["providers"], { cwd: repo, env }),
    ]);
    expect(v.stdout).toContain("Valid (3 providers checked)");
    expect(v.code).toBe(0);
    expect(p.code).toBe(0);
    const fs = p.stdout.split("\n").find((l) => l.startsWith("filesystem "))!;
    expect(fs).toMatch(
      /^filesystem {2}\[tool\] {2}filesystem \d+\.\d+\.\d+ \(github\.com\/pluggableharness\/provider-filesystem\) {2}healthy$/,
    );
    expect(p.stdout).toMatch(/tools: .*read_file \(data_source, read_only\).*edit_file \(resource, /);
    // First-party providers run in worker threads unless agent.hcl says otherwise; tool
    // providers the plugin sandbox confines (on by default where bwrap runs) in threads of
    // the sandbox host.
    expect(p.stdout).toMatch(
      /^filesystem {2}.*\n {2}tools: .*\n {2}runs: in a worker thread of the sandbox host$/m,
    );
    expect(p.stdout).toMatch(
      /^anthropic {2}\[model\] .* healthy\n {2}models: .*claude-sonnet-5.*\n {2}runs: in a worker thread$/m,
    );
  });

  it("rejects an isolation run would reject, at its file:line:col", async () => {
    const repo = sb.repo("isolation");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
      '    source  = "pluggableharness/exec"\n',
      '    source  = "pluggableharness/exec"\n    isolation = "thread"\n',
    );
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const at = hcl.split("\n").findIndex((l) => l.includes('isolation = "thread"')) + 1;
    const r = await agent(["validate", repo], { cwd: sb.home, env: { ...sb.env, FIXTURE_ROOT: repo } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${join(repo, "agent.hcl")}:${at}:17: error[invalid_value]: Invalid isolation`,
    );
  });

  it("reports every problem with file:line:col and exits 1", async () => {
    const repo = sb.repo("invalid");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
      .replace(
        'provider "filesystem" {\n  roots = [env("FIXTURE_ROOT")]',
        'provider "filesystem" {\n  rootz = [env("FIXTURE_ROOT")]',
      )
      .replace('tools     = ["filesystem.*", "exec.*"]', 'tools     = ["filesystem.*", "exec.nope"]');
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const lines = hcl.split("\n");
    const rootz = lines.findIndex((l) => l.includes("rootz")) + 1;
    const nope = lines.findIndex((l) => l.includes("exec.nope")) + 1;
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: "http://127.0.0.1:9",
      FIXTURE_ROOT: repo,
    };
    const r = await agent(["validate", repo], { cwd: sb.home, env });
    expect(r.code).toBe(1);
    const file = join(repo, "agent.hcl");
    expect(r.stdout).toContain(`${file}:${rootz}:3: error[unknown_attribute]`);
    expect(r.stdout).toContain(`${file}:${nope}:`);
    expect(r.stdout).toMatch(/error\[unknown_tool\]/);
    expect(r.stdout).toMatch(/Invalid: [2-9] errors/);
  });
});

describe("validate = run", () => {
  let fake: FakeVendor;
  beforeAll(async () => {
    fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  });
  afterAll(async () => {
    await fake?.close();
  });
  const envFor = (repo: string) => ({
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  });

  it('resolves roots = ["."] against the directory of agent.hcl: validate and run both accept it', async () => {
    const repo = sb.repo("dot-roots");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replaceAll(
      'roots = [env("FIXTURE_ROOT")]',
      'roots = ["."]',
    );
    expect(hcl.match(/roots = \["\."\]/g)).toHaveLength(2);
    writeFileSync(join(repo, "agent.hcl"), hcl);
    // From another directory, "." is still the project.
    const v = await agent(["validate", repo], { cwd: sb.home, env: envFor(repo) });
    expect(v.stdout).toContain("Valid (3 providers checked)");
    expect(v.code).toBe(0);
    fake.push(
      { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
      { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: "node test.js; true" } }] },
      { kind: "text", text: "done" },
    );
    const r = await agent(
      ["run", "-p", "read calc.js", "--output-format", "stream-json", "--headless-ask", "allow"],
      { cwd: repo, env: envFor(repo) },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    expect(results).toHaveLength(2);
    for (const res of results) {
      expect(res["error"]).toBeUndefined();
      expect(res["result"]).toBeDefined();
    }
    expect(results[0]!["result"]).toMatchObject({ path: "calc.js", total_lines: 6 });
  });

  it("reports what a provider's Configure rejects at the attribute, as run would", async () => {
    const repo = sb.repo("missing-root");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
      'provider "filesystem" {\n  roots = [env("FIXTURE_ROOT")]',
      'provider "filesystem" {\n  roots = ["./not-here"]',
    );
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const line = hcl.split("\n").findIndex((l) => l.includes("not-here")) + 1;
    const v = await agent(["validate"], { cwd: repo, env: envFor(repo) });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(`${join(repo, "agent.hcl")}:${line}:3: error[provider_configure]`);
    expect(v.stdout).toContain(`${join(repo, "not-here")}`);
  });

  it("rejects a tool_choice the model's supported_tool_choice_modes lack, at its file:line:col, as run does", async () => {
    const repo = sb.repo("tool-choice");
    const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
      '      id       = "claude-sonnet-5"\n',
      '      id       = "claude-sonnet-5"\n      tool_choice = "any"\n',
    );
    writeFileSync(join(repo, "agent.hcl"), hcl);
    const line = hcl.split("\n").findIndex((l) => l.includes('tool_choice = "any"')) + 1;
    const v = await agent(["validate"], { cwd: repo, env: envFor(repo) });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain(`${join(repo, "agent.hcl")}:${line}:21: error[unsupported_parameter]`);
    expect(v.stdout).toContain('which supports only "auto", "none"');
    const r = await agent(["run", "-p", "hi"], { cwd: repo, env: envFor(repo) });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${join(repo, "agent.hcl")}:${line}:21: error[unsupported_parameter]`);
  });

  it("rejects an empty agent.hcl in validate, as run does", async () => {
    const dir = sb.dir("empty-hcl");
    writeFileSync(join(dir, "agent.hcl"), "");
    const v = await agent(["validate"], { cwd: dir, env: envFor(dir) });
    expect(v.stdout).toContain(`${join(dir, "agent.hcl")}:1:1: error[no_usable_model]`);
    expect(v.code).toBe(1);
    const r = await agent(["run", "-p", "hi"], { cwd: dir, env: envFor(dir) });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no usable model/);
  });

  it("agent init works without a key: a commented profile to fill in, valid once a vendor is uncommented", async () => {
    const dir = sb.dir("init-nokey");
    const r = await agent(["init"], { cwd: dir, env: sb.env });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("No vendor key was found");
    const file = join(dir, "agent.hcl");
    const text = readFileSync(file, "utf8");
    expect(text).toContain('roots = ["."]');
    expect(text).toMatch(/^ {2}# model \{$/m);
    const v = await agent(["validate"], { cwd: dir, env: sb.env });
    expect(v.code).toBe(1);
    expect(v.stdout).toContain("error[no_usable_model]");
    // Uncomment the anthropic parts: its required_providers entry, provider block and model.
    const lines = text.split("\n");
    const uncomment = (from: number, count: number) => {
      expect(from).toBeGreaterThanOrEqual(0);
      for (let i = from; i < from + count; i++) lines[i] = lines[i]!.replace(/^(\s*)# ?/, "$1");
    };
    uncomment(lines.indexOf("  # anthropic = {"), 4);
    uncomment(lines.indexOf('# provider "anthropic" {'), 3);
    const model = lines.indexOf("  # model {");
    uncomment(model, 1);
    uncomment(lines.indexOf("  #   primary {", model), 4);
    uncomment(lines.indexOf("  # }", model), 1);
    writeFileSync(file, lines.join("\n"));
    const ok = await agent(["validate"], { cwd: dir, env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test" } });
    expect(ok.stdout).toMatch(/^Valid \(\d+ providers checked\)/m);
    expect(ok.code).toBe(0);
  });
});
