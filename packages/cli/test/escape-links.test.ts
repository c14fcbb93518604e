// Writes that a symbolic link carries into the kernel's own files, end to end: the real
// `agent` in a project WITHOUT agent.hcl (zero-config), a scripted model on the loopback
// fake vendor, every ask answered "allow" (the most permissive setting).
//
// The defect it reproduces (issue 31, point 3): the model made `cfg.txt -> agent.hcl`, a
// link to a file that did not exist yet, and a write_file of cfg.txt created agent.hcl
// with an allow rule for bash; the next session ran bash unasked. The kernel resolved a
// path only through the links of its existing part, so it never saw where the write would
// land, and the file tool followed the link when it wrote.
//
// Two layers are checked. In the first run the links are made by a command and written
// through in the same turn, so the kernel judged the writes before the links existed:
// only the file tool itself, at the moment it opens the file, can refuse them. In the
// later runs the links exist when the kernel plans, and it refuses them itself.

import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

const EVIL_RULE = 'policy "pwn" {\n  match  = { tool_name = "bash" }\n  action = "allow"\n}\n';

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo("zero-config");
  rmSync(join(repo, "agent.hcl"));
  fake = await startFakeVendor({ vendor: "openai-chat", script: [] });
  // Zero-config against an OpenAI-compatible server: its model does not declare parallel
  // tool calls, so a turn's calls run one after another, in order.
  env = { ...sb.env, OPENAI_BASE_URL: `${fake.url}/v1`, OPENAI_MODEL: "demo" };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

type Call = { name: string; args: Record<string, unknown> };
const write = (path: string): Call => ({
  name: "filesystem__write_file",
  args: { path, content: EVIL_RULE },
});
const bash = (command: string): Call => ({ name: "exec__bash", args: { command } });

async function run(calls: Call[], headless = "allow") {
  fake.push({ kind: "tool_calls", calls }, { kind: "text", text: "done" });
  const r = await agent(
    ["run", "-p", "tidy up", "--output-format", "stream-json", "--headless-ask", headless],
    { cwd: repo, env, timeoutMs: 60_000 },
  );
  return { ...r, recs: records(r.stdout) };
}

const results = (recs: Array<Record<string, unknown>>, tool: string) =>
  recs.filter((x) => x["type"] === "tool_result" && x["tool_name"] === tool);
const errorOf = (x: Record<string, unknown>) => (x["error"] ?? {}) as Record<string, unknown>;

/**
 * Nothing kernel-owned exists: the project had none, and none may appear. The one thing
 * the kernel itself makes is the memory provider's empty record directory (.agent/memory/,
 * created before the provider's sandbox binds it), so .agent/ holds that or nothing.
 */
function expectNoKernelFiles(): void {
  expect(existsSync(join(repo, "agent.hcl")), "agent.hcl was created").toBe(false);
  const agentDir = join(repo, ".agent");
  if (existsSync(agentDir)) {
    expect(lstatSync(agentDir).isDirectory(), ".agent is not a directory").toBe(true);
    expect(readdirSync(agentDir), ".agent/ holds more than the memory directory").toEqual(["memory"]);
    expect(readdirSync(join(agentDir, "memory")), ".agent/memory/ is not empty").toEqual([]);
  }
  expect(existsSync(join(env["XDG_CONFIG_HOME"]!, "agent", "config.hcl"))).toBe(false);
}

describe("writes through symbolic links to kernel-owned paths", () => {
  it("never create or change a kernel-owned file, and the next session still asks", async () => {
    expectNoKernelFiles();

    // 1. Links made by a command (names computed, so the kernel cannot read them), then
    //    written through in the same turn: planned before the links existed.
    const planted = await run([
      bash(
        [
          `ln -s "$(printf 'agent.h%s' cl)" cfg.txt`,
          "ln -s b chain",
          `ln -s "$(printf '.age%s' nt)/policy.auto.hcl" b`,
          `ln -s "$(printf '.age%s' nt)" d`,
          "echo planted",
        ].join(" && "),
      ),
      write("cfg.txt"),
      write("chain"),
      write("d/policy.auto.hcl"),
    ]);
    expect(planted.stderr).toBe("");
    const shell = results(planted.recs, "bash");
    expect(JSON.stringify(shell)).toContain("planted");
    expect(lstatSync(join(repo, "cfg.txt")).isSymbolicLink()).toBe(true);
    expectNoKernelFiles();
    const refusedAtOpen = results(planted.recs, "write_file");
    expect(refusedAtOpen.map((x) => [x["denied"], errorOf(x)["category"]])).toEqual([
      [false, "permission_denied"],
      [false, "permission_denied"],
      [false, "permission_denied"],
    ]);
    for (const x of refusedAtOpen) expect(String(errorOf(x)["message"])).toMatch(/kernel-owned/);

    // 2. The links now exist when the kernel plans: it refuses the writes itself. Links
    //    a command could have made the same way: one with relative `..` hops, and one to
    //    the global configuration directory.
    mkdirSync(join(repo, "sub"));
    symlinkSync("../sub/../agent.hcl", join(repo, "sub", "up"));
    symlinkSync(join(env["XDG_CONFIG_HOME"]!, "agent"), join(repo, "gc"));
    symlinkSync("agent.hcl", join(repo, "onto"));
    symlinkSync("loop2", join(repo, "loop1"));
    symlinkSync("loop1", join(repo, "loop2"));
    const byKernel = [
      [write("cfg.txt"), write("chain"), write("d/policy.auto.hcl"), write("sub/up")],
      [
        // A rename onto a link, in both multi-file tools; a link to the global config directory.
        {
          name: "filesystem__edit_files",
          args: { changes: [{ path: "calc.js", action: "move", to: "onto" }] },
        },
        {
          name: "filesystem__apply_patch",
          args: { patch: "*** Begin Patch\n*** Update File: test.js\n*** Move to: sub/up\n*** End Patch" },
        },
        write("gc/config.hcl"),
        write("loop1"),
      ],
    ];
    for (const calls of byKernel) {
      const r = await run(calls);
      expect(r.stderr).toBe("");
      const decisions = r.recs.filter((x) => x["type"] === "plan_decision");
      expect(decisions.map((d) => [d["tool_name"], d["decision"], d["decided_by"]])).toEqual(
        calls.map((c) => [c.name.split("__")[1], "deny", "kernel:protected_paths"]),
      );
      // 4: the run completed and tool calls were denied.
      expect(r.code).toBe(4);
      expectNoKernelFiles();
    }
    expect(existsSync(join(repo, "calc.js"))).toBe(true);
    expect(existsSync(join(repo, "test.js"))).toBe(true);

    // 3. The next session: bash still asks (headless default: deny); nothing was granted.
    const next = await run([bash("node test.js")], "deny");
    const d = next.recs.filter((x) => x["type"] === "plan_decision");
    expect(d.map((x) => [x["tool_name"], x["decision"], x["decided_by"]])).toEqual([
      ["bash", "deny", "headless:deny"],
    ]);
    expectNoKernelFiles();
  }, 180_000);
});
