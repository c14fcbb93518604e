// Output conventions of headless runs: one spelling of risk classes (the HCL one,
// `read_only`) in every record, and stderr free of log lines unless --verbose asks;
// zero-config honours the vendors' variables and the user's global defaults.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;
let repo: string;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo };
});
afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("headless output conventions", () => {
  it("spells risk classes as read_only/low/…, in init and tool_call records alike", async () => {
    fake.push(
      { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
      { kind: "text", text: "Read it." },
    );
    const r = await agent(["run", "-p", "read calc.js", "--output-format", "stream-json"], {
      cwd: repo,
      env,
    });
    expect(r.code).toBe(0);
    const recs = records(r.stdout);
    const risks = new Set([
      ...((recs[0]!["tools"] as { risk: string }[]) ?? []).map((t) => t.risk),
      ...recs.filter((x) => x["type"] === "tool_call").map((x) => String(x["risk"])),
    ]);
    expect(risks.has("read_only")).toBe(true);
    for (const risk of risks) expect(["read_only", "low", "moderate", "high", "critical"]).toContain(risk);
  });

  it("keeps log lines off stderr unless --verbose", async () => {
    fake.push({ kind: "text", text: "One." }, { kind: "text", text: "Two." });
    const loud = { ...env, AGENT_LOG_LEVEL: "debug" };
    const quiet = await agent(["run", "-p", "hello"], { cwd: repo, env: loud });
    expect(quiet).toMatchObject({ code: 0, stdout: "One.\n", stderr: "" });
    const verbose = await agent(["run", "-p", "hello", "--verbose"], { cwd: repo, env: loud });
    expect(verbose.code).toBe(0);
    expect(verbose.stderr).toMatch(/ DEBUG \[/);
  });
});

describe("zero-config", () => {
  it("honours ANTHROPIC_BASE_URL, and the global config's defaults.model in every project", async () => {
    const project = sb.dir("no-hcl");
    const zc: NodeJS.ProcessEnv = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-zero",
      ANTHROPIC_BASE_URL: fake.url,
    };
    fake.push({ kind: "text", text: "Default model." }, { kind: "text", text: "User's model." });
    const before = fake.requests.length;
    const first = await agent(["run", "-p", "hi", "--output-format", "json"], { cwd: project, env: zc });
    expect(first.stderr).toBe("");
    expect(JSON.parse(first.stdout)).toMatchObject({ result: "Default model." });
    expect((fake.requests[before]!.json as { model: string }).model).toBe("claude-sonnet-5");

    const configDir = join(zc["XDG_CONFIG_HOME"]!, "agent");
    mkdirSync(configDir, { recursive: true });
    writeFileSync(
      join(configDir, "config.hcl"),
      'defaults {\n  model = "anthropic/claude-haiku-4-5-20251001"\n}\n',
    );
    const second = await agent(["run", "-p", "hi", "--output-format", "json"], { cwd: project, env: zc });
    expect(JSON.parse(second.stdout)).toMatchObject({ result: "User's model." });
    expect((fake.requests[before + 1]!.json as { model: string }).model).toBe("claude-haiku-4-5-20251001");

    // A malformed default is a configuration error at file:line:col, in validate as in run.
    writeFileSync(join(configDir, "config.hcl"), 'defaults {\n  model = "haiku"\n}\n');
    for (const args of [["run", "-p", "hi"], ["validate"]]) {
      const bad = await agent(args, { cwd: project, env: zc });
      expect(bad.code).toBe(1);
      expect(bad.stdout + bad.stderr).toMatch(
        /config\.hcl:2:\d+: error\[invalid_value\].*<provider>\/<model id>/,
      );
    }
    rmSync(join(configDir, "config.hcl"));
  });
});
