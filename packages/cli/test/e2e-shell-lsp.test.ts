// End to end: a scripted model drives the stateful shell, a background server and the
// TypeScript language server through the real `agent run -p`, the first-party exec and
// lsp plugins and a loopback fake Anthropic. Afterwards nothing the run started is alive.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, processesIn, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
    .replace(
      "required_providers {",
      'required_providers {\n  lsp = {\n    source  = "pluggableharness/lsp"\n    version = ">= 0.1.0"\n  }',
    )
    .replace('tools     = ["filesystem.*", "exec.*"]', 'tools     = ["filesystem.*", "exec.*", "lsp.*"]')
    .concat('\nprovider "lsp" {\n  roots = [env("FIXTURE_ROOT")]\n}\n');
  writeFileSync(join(repo, "agent.hcl"), hcl);
  mkdirSync(join(repo, "src"));
  writeFileSync(
    join(repo, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true, noEmit: true } }),
  );
  writeFileSync(join(repo, "src", "main.ts"), "const n: number = 1;\nexport const s: string = n;\n");
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

describe("agent run -p: stateful shell, background processes and diagnostics", () => {
  it("keeps cwd and exports across bash calls, runs a background server, reports a type error", async () => {
    const server =
      "require('node:http').createServer((q, r) => r.end('ok')).listen(0, '127.0.0.1', function () { console.log('listening on', this.address().port, process.env.MARK); })";
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          { name: "exec__bash", args: { command: "mkdir -p work && cd work && export MARK=e2e-mark" } },
        ],
      },
      { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: 'pwd; echo "mark=$MARK"' } }] },
      {
        kind: "tool_calls",
        calls: [
          { name: "exec__background_start", args: { command: `node -e "${server}"`, description: "server" } },
        ],
      },
      { kind: "tool_calls", calls: [{ name: "exec__background_read", args: { id: "bg1", wait_ms: 15000 } }] },
      { kind: "tool_calls", calls: [{ name: "exec__background_list", args: {} }] },
      { kind: "tool_calls", calls: [{ name: "exec__background_stop", args: { id: "bg1" } }] },
      {
        kind: "tool_calls",
        calls: [{ name: "exec__bash", args: { command: "tr a-z A-Z", stdin: "piped in\n" } }],
      },
      { kind: "tool_calls", calls: [{ name: "lsp__diagnostics", args: { paths: ["src/main.ts"] } }] },
      { kind: "text", text: "done" },
    );
    const env = {
      ...sb.env,
      ANTHROPIC_API_KEY: "sk-ant-test",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const r = await agent(
      ["run", "-p", "exercise the shell", "--output-format", "stream-json", "--headless-ask", "allow"],
      { cwd: repo, env, timeoutMs: 90_000 },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    const payload = (i: number) => results[i]!["result"] as Record<string, unknown>;
    expect(results.map((x) => x["tool_name"])).toEqual([
      "bash",
      "bash",
      "background_start",
      "background_read",
      "background_list",
      "background_stop",
      "bash",
      "diagnostics",
    ]);
    expect(results.every((x) => x["denied"] === false)).toBe(true);
    expect(payload(1)["output"]).toBe(`${join(repo, "work")}\nmark=e2e-mark\n`);
    expect(payload(2)).toMatchObject({ id: "bg1", cwd: join(repo, "work") });
    expect(String(payload(3)["output"])).toMatch(/^listening on \d+ e2e-mark\n$/);
    expect(payload(4)["processes"]).toEqual([expect.objectContaining({ id: "bg1", running: true })]);
    expect(payload(5)).toMatchObject({ id: "bg1", already_exited: false });
    expect(payload(6)["output"]).toBe("PIPED IN\n");
    expect(payload(7)).toMatchObject({ errors: 1 });
    expect(String(payload(7)["summary"])).toContain("src/main.ts:2:14 error TS2322");
    // The model was sent the diagnostics as text.
    const last = JSON.stringify(fake.requests.at(-1)!.json);
    expect(last).toContain("TS2322");
    // Nothing the run started is left: no server, no language server, no plugin.
    expect(processesIn(repo)).toEqual([]);
  }, 120_000);
});
