// The sandbox host, end to end (issue 32, point 1): a zero-config `agent run -p` whose model
// reads a file and greps the project, with the plugin sandbox on (the default). While a
// bash call holds the run, the test reads /proc: the file and search tools run as threads
// of one bubblewrap-confined sandbox host, not as processes of their own; the agent has
// one bwrap child per sandbox profile (the file tools' host, and the memory provider's,
// whose writable directories differ); the tools answered from there. The real binary,
// real plugins, the loopback fake Anthropic.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const sandboxed = probeSandbox().ok;
if (!sandboxed && process.env["CI"]) throw new Error("bubblewrap must run in CI for the sandbox host test");

let sb: Sandbox;
let fake: FakeVendor;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
}

function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").replaceAll("\0", " ").trim();
      out.push({ pid: Number(name), ppid, comm, cmdline });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** `root` and every process below it. */
function tree(all: Proc[], root: number): Proc[] {
  const out = all.filter((p) => p.pid === root);
  for (let i = 0; i < out.length; i++) out.push(...all.filter((p) => p.ppid === out[i]!.pid));
  return out;
}

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!sandboxed)("the sandbox host", () => {
  it("runs the file and search tools of a zero-config run as threads of one bwrap-confined process", async () => {
    const repo = sb.repo("zero-config");
    rmSync(join(repo, "agent.hcl"));
    const ready = join(repo, "held.ready");
    const go = join(repo, "held.go");
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          { name: "filesystem__read_file", args: { path: "calc.js" } },
          { name: "search__grep", args: { pattern: "function" } },
        ],
      },
      {
        kind: "tool_calls",
        // Holds the run (bounded) while the test looks at its processes.
        calls: [
          {
            name: "exec__bash",
            args: {
              command: `touch held.ready; for i in $(seq 400); do [ -e held.go ] && break; sleep 0.05; done`,
            },
          },
        ],
      },
      { kind: "text", text: "looked" },
    );
    const run = agent(
      ["run", "-p", "look around", "--output-format", "stream-json", "--headless-ask", "allow"],
      {
        cwd: repo,
        env: { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: fake.url },
        timeoutMs: 90_000,
      },
    );
    await until("the held bash call", () => existsSync(ready));
    const all = processes();
    // The agent is the node process running the CLI in this project.
    const agentProc = all.find(
      (p) =>
        p.ppid === process.pid && /packages\/cli\/(src\/bin\.ts|.*bin\.mjs)|\.bin\/agent/.test(p.cmdline),
    );
    writeFileSync(go, "");
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    expect(agentProc, JSON.stringify(all.filter((p) => p.ppid === process.pid))).toBeDefined();
    const below = tree(all, agentProc!.pid);
    const shown = JSON.stringify(
      below.map((p) => `${p.pid}<${p.ppid} ${p.comm}: ${p.cmdline.slice(0, 160)}`),
      null,
      1,
    );

    // No process of its own for either tool provider: their code runs in threads.
    expect(
      below.filter((p) => /providers\/(filesystem|search)\//.test(p.cmdline)),
      shown,
    ).toEqual([]);
    // One plugin sandbox per profile, each a sandbox host: the file tools' and the memory
    // provider's. (The bash call's own command sandbox is the other bwrap child.)
    const sandboxes = below.filter(
      (p) => p.comm === "bwrap" && p.ppid === agentProc!.pid && !/ \/bin\/bash -c /.test(p.cmdline),
    );
    expect(sandboxes, shown).toHaveLength(2);
    for (const s of sandboxes) expect(s.cmdline).toContain('require("node:worker_threads")');
    expect(sandboxes.filter((s) => s.cmdline.includes(`--bind ${repo} ${repo}`))).toHaveLength(1);

    // The tools answered.
    const results = records(r.stdout).filter((x) => x["type"] === "tool_result");
    const byName = (n: string) => JSON.stringify(results.find((x) => x["tool_name"] === n) ?? {});
    expect(byName("read_file")).toContain("function add");
    expect(byName("grep")).toContain("calc.js");
    expect(byName("read_file") + byName("grep")).not.toMatch(/"is_error":true|"error"/);
  });
});
