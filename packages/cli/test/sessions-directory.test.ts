// Sessions belong to the directory they were started in: `--continue` picks the latest
// of this directory, `sessions list` shows directory, model and title (the first
// prompt), `--resume` without an id lists this directory's sessions when there is no
// terminal to choose on; and `agent completion` writes scripts the shells accept.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;
let repoA: string;
let repoB: string;

beforeAll(async () => {
  sb = sandbox();
  repoA = sb.repo("alpha");
  repoB = sb.repo("beta");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-test", FAKE_ANTHROPIC_URL: fake.url };
});
afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

async function runJson(cwd: string, args: string[]): Promise<Record<string, unknown>> {
  const r = await agent(["run", ...args, "--output-format", "json"], {
    cwd,
    env: { ...env, FIXTURE_ROOT: cwd },
  });
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

describe("sessions of a directory", () => {
  it("--continue goes on with this directory's latest session, not another project's", async () => {
    fake.push(
      { kind: "text", text: "alpha one" },
      { kind: "text", text: "beta one" },
      { kind: "text", text: "alpha two" },
      { kind: "text", text: "beta two" },
    );
    const a = await runJson(repoA, ["-p", "  Explain   the alpha\nproject in detail"]);
    const b = await runJson(repoB, ["-p", "What is beta?"]);
    expect(a["session_id"]).not.toBe(b["session_id"]);
    // B's session is the newest overall; A's -c must still pick A's.
    const a2 = await runJson(repoA, ["-c", "-p", "and then?"]);
    expect(a2).toMatchObject({ session_id: a["session_id"], result: "alpha two" });
    const b2 = await runJson(repoB, ["--continue", "-p", "and then?"]);
    expect(b2).toMatchObject({ session_id: b["session_id"], result: "beta two" });

    const list = await agent(["sessions", "list", "--json"], { cwd: sb.home, env });
    const rows = JSON.parse(list.stdout) as Record<string, unknown>[];
    const byId = Object.fromEntries(rows.map((r) => [r["session_id"], r]));
    expect(byId[a["session_id"] as string]).toMatchObject({
      working_directory: repoA,
      title: "Explain the alpha",
      model: expect.stringMatching(/^anthropic\//),
    });
    expect(byId[b["session_id"] as string]).toMatchObject({
      working_directory: repoB,
      title: "What is beta?",
    });
    const table = await agent(["sessions", "list"], { cwd: sb.home, env });
    expect(table.stdout.split("\n")[0]).toMatch(
      /ID\s+STARTED \(UTC\)\s+DIRECTORY\s+MODEL\s+STATUS\s+LIVE\s+COST\s+TITLE/,
    );
    expect(table.stdout).toMatch(new RegExp(`${a["session_id"]}.*~/alpha.*completed.*Explain the alpha`));
  });

  it("-c where no session was started says so and starts nothing", async () => {
    const empty = sb.repo("gamma");
    const r = await agent(["run", "-c", "-p", "hello"], { cwd: empty, env: { ...env, FIXTURE_ROOT: empty } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`no session to continue in ${empty}`);
  });

  it("--resume without an id, headless, lists this directory's sessions and exits 2", async () => {
    const r = await agent(["run", "--resume", "-p", "hi"], {
      cwd: repoB,
      env: { ...env, FIXTURE_ROOT: repoB },
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Sessions of this directory, newest first:");
    expect(r.stderr).toContain("What is beta?");
    expect(r.stderr).not.toContain("Explain the alpha");
  });
});

describe("agent completion", () => {
  it("bash completes commands, subcommands and option choices", async () => {
    const r = await agent(["completion", "bash"], { cwd: sb.home, env });
    expect(r.code).toBe(0);
    const complete = (words: string[]) =>
      spawnSync(
        "bash",
        [
          "-c",
          `${r.stdout}\nCOMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _agent; echo "\${COMPREPLY[*]}"`,
        ],
        { encoding: "utf8" },
      ).stdout.trim();
    expect(complete(["agent", "sess"])).toBe("sessions");
    expect(complete(["agent", "sessions", "l"])).toBe("list");
    expect(complete(["agent", "run", "--output-format", "s"])).toBe("stream-json");
    expect(complete(["agent", "run", "--res"])).toBe("--resume");
    expect(complete(["agent", "completion", "--h"])).toBe("--help");
  });

  it("zsh and fish accept their scripts; an unknown shell is a usage error", async () => {
    for (const shell of ["zsh", "fish"]) {
      const r = await agent(["completion", shell], { cwd: sb.home, env });
      expect(r.code).toBe(0);
      const file = join(sb.home, `completion.${shell}`);
      writeFileSync(file, r.stdout);
      const check = spawnSync(shell, [shell === "zsh" ? "-n" : "--no-execute", file], { encoding: "utf8" });
      expect(check.error).toBeUndefined();
      expect(check.stderr).toBe("");
      expect(check.status).toBe(0);
    }
    const bad = await agent(["completion", "tcsh"], { cwd: sb.home, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"tcsh" is not one of bash, zsh, fish');
  });
});
