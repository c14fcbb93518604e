// End-to-end reliability of `agent run` (issue 15, part A): the real binary, the
// first-party plugins and loopback fake vendors. A failed run leaves a session that
// --resume and --continue go on with; a stop because the context window is full is not
// a success; every denied call makes the exit status 4.
import { spawn } from "node:child_process";
import { appendFileSync, copyFileSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
const fakes: FakeVendor[] = [];

beforeAll(() => {
  sb = sandbox();
});
afterAll(async () => {
  for (const f of fakes) await f.close();
  sb?.cleanup();
});

async function project(name: string, script: Parameters<typeof startFakeVendor>[0]["script"]) {
  const fake = await startFakeVendor({ vendor: "anthropic", script, validate: true });
  fakes.push(fake);
  const repo = sb.repo(name);
  const env = {
    ...sb.env,
    XDG_STATE_HOME: join(sb.home, `state-${name}`),
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  };
  return { fake, repo, env };
}

describe("a failed run is not a dead session", () => {
  it("exits 1 with the reason, then --resume and --continue go on with the same session", async () => {
    const { fake, repo, env } = await project("failed", [
      { kind: "error", status: 401, errorType: "authentication_error", message: "invalid x-api-key" },
      { kind: "error", status: 401, errorType: "authentication_error", message: "invalid x-api-key" },
      { kind: "text", text: "Back again." },
      { kind: "text", text: "Still here." },
    ]);
    const failed = await agent(["run", "-p", "hello", "--output-format", "json"], { cwd: repo, env });
    expect(failed.code).toBe(1);
    const result = JSON.parse(failed.stdout);
    expect(result).toMatchObject({
      subtype: "failed",
      exit_code: 1,
      // The 401 names the variable holding the rejected key (never the key).
      detail: expect.stringMatching(/auth_error.*anthropic rejected the key in ANTHROPIC_API_KEY/),
    });
    expect(failed.stdout).not.toContain(env["ANTHROPIC_API_KEY"]);
    // No log lines on stderr without --verbose: the result record says it all.
    expect(failed.stderr).toBe("");
    const text = await agent(["run", "--resume", result.session_id, "-p", "again"], { cwd: repo, env });
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^agent: session \S+ ended: .*ANTHROPIC_API_KEY/);

    const resumed = await agent(["run", "--resume", result.session_id, "-p", "the key is fixed"], {
      cwd: repo,
      env,
    });
    expect(resumed).toMatchObject({ code: 0, stdout: "Back again.\n" });
    const continued = await agent(["run", "--continue", "-p", "and now?"], { cwd: repo, env });
    expect(continued).toMatchObject({ code: 0, stdout: "Still here.\n" });
    // Both went on with the one session; neither request repeated the failure to the model.
    // (the adapter merges the two user messages into one, as the Messages API wants).
    const last = fake.requests.at(-1)!.json as { messages: Array<{ role: string }> };
    expect(last.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(JSON.stringify(last.messages)).toContain("the key is fixed");
    expect(JSON.stringify(last.messages)).not.toMatch(/turn failed/i);
    expect(fake.requests.every((r) => !r.rejected)).toBe(true);

    const show = await agent(["sessions", "show", result.session_id], { cwd: repo, env });
    expect(show.stdout).toMatch(/Turn failed[\s\S]*auth_error/);
  });
});

describe("exit statuses", () => {
  it("a stop because the context window is full fails the run (1), it is no success", async () => {
    const { repo, env } = await project("window", [
      { kind: "text", text: "The answer is", vendorStopReason: "model_context_window_exceeded" },
    ]);
    const r = await agent(["run", "-p", "long task", "--output-format", "json"], { cwd: repo, env });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      subtype: "failed",
      is_error: true,
      detail: expect.stringMatching(/context_length_exceeded/),
    });
  });

  it("a denied read (a data source, no plan item) makes the exit status 4", async () => {
    const { repo, env } = await project("denyread", [
      { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
      { kind: "text", text: "I was not allowed to read it." },
    ]);
    appendFileSync(
      join(repo, "agent.hcl"),
      '\npolicy "no_reading_calc" {\n  match  = { tool_name = "read_file" }\n  action = "deny"\n}\n',
    );
    const r = await agent(["run", "-p", "read calc.js", "--output-format", "json"], { cwd: repo, env });
    expect(r.code).toBe(4);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ subtype: "error_permission_denied", is_error: true, exit_code: 4 });
    expect(result.permission_denials).toEqual([
      {
        provider: "filesystem",
        tool_name: "read_file",
        tool_call_id: expect.any(String),
        decided_by: "no_reading_calc",
        // The rule and how to lift it.
        reason: expect.stringContaining(
          'denied by policy rule "no_reading_calc"; to allow it, change that rule\'s action',
        ),
      },
    ]);
  });
});

describe("one writer per session", () => {
  it("refuses a second --resume of a live session at once, naming the holder; takes over once it is killed", async () => {
    const { fake, repo, env } = await project("live", [
      scenarios.stall({ afterFrames: 2 }),
      { kind: "text", text: "Took over." },
    ]);
    const first = spawn(AGENT_BIN, ["run", "-p", "work", "--output-format", "stream-json"], {
      cwd: repo,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      first.stdout!.setEncoding("utf8").on("data", (d: string) => {
        out += d;
      });
      await fake.waitForStall();
      // The init record may still be on its way when the stream stalls.
      while (!/"session_id":"[0-9A-Z]{26}"/.test(out)) await new Promise((r) => setTimeout(r, 10));
      const id = /"session_id":"([0-9A-Z]{26})"/.exec(out)![1]!;
      const started = Date.now();
      const second = await agent(["run", "--resume", id, "-p", "me too"], { cwd: repo, env });
      // Refused before any plugin starts.
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(
        new RegExp(`session ${id} is open in another agent process \\(pid ${first.pid}.*since \\d{4}-`),
      );
      expect(fake.requests).toHaveLength(1);

      first.kill("SIGKILL");
      await new Promise((resolve) => first.on("close", resolve));
      const third = await agent(["run", "--resume", id, "-p", "go on"], { cwd: repo, env });
      expect(third).toMatchObject({ code: 0, stdout: "Took over.\n" });
    } finally {
      first.kill("SIGKILL");
    }
  });
});

describe("clean files", () => {
  it("a finished session is one self-contained .sqlite: no -wal or -shm left, a lone copy holds everything", async () => {
    const { repo, env } = await project("clean", [
      { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
      { kind: "text", text: "Read it." },
    ]);
    const r = await agent(["run", "-p", "read calc.js", "--output-format", "json"], { cwd: repo, env });
    expect(r.code).toBe(0);
    const id = JSON.parse(r.stdout).session_id as string;
    const dir = join(env.XDG_STATE_HOME, "agent", "sessions");
    const left = readdirSync(dir).filter((f) => f.startsWith(id));
    expect(left.sort()).toEqual([`${id}.sqlite`, `${id}.sqlite.lock`]);
    const copyEnv = { ...env, XDG_STATE_HOME: join(sb.home, "state-clean-copy") };
    const copyDir = join(copyEnv.XDG_STATE_HOME, "agent", "sessions");
    mkdirSync(copyDir, { recursive: true });
    copyFileSync(join(dir, `${id}.sqlite`), join(copyDir, `${id}.sqlite`));
    const [original, copy] = await Promise.all([
      agent(["sessions", "show", id], { cwd: repo, env }),
      agent(["sessions", "show", id], { cwd: repo, env: copyEnv }),
    ]);
    expect(copy.code).toBe(0);
    expect(copy.stdout).toBe(original.stdout);
    expect(copy.stdout).toContain("Read it.");
  });
});

describe("damaged session files", () => {
  // One real session, copied into a fresh sessions directory for each kind of damage.
  let original: { repo: string; env: NodeJS.ProcessEnv; id: string; file: string } | undefined;
  async function finished(name: string) {
    if (!original) {
      const { repo, env } = await project("damaged", [
        {
          kind: "tool_calls",
          text: "Reading.",
          calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }],
        },
        { kind: "text", text: "All read." },
      ]);
      const r = await agent(["run", "-p", "read calc.js", "--output-format", "json"], { cwd: repo, env });
      expect(r.code).toBe(0);
      const id = JSON.parse(r.stdout).session_id as string;
      original = {
        repo,
        env,
        id,
        file: join(String(env["XDG_STATE_HOME"]), "agent", "sessions", `${id}.sqlite`),
      };
    }
    const { repo, id } = original;
    const env = { ...original.env, XDG_STATE_HOME: join(sb.home, `state-${name}`) };
    const dir = join(env.XDG_STATE_HOME, "agent", "sessions");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${id}.sqlite`);
    copyFileSync(original.file, file);
    return { repo, env, id, file };
  }
  const damage = (file: string, sql: string) => {
    const db = new DatabaseSync(file, { enableForeignKeyConstraints: false });
    db.exec(sql);
    db.close();
  };

  it("show and replay report undecodable events and show the rest", async () => {
    const { repo, env, id, file } = await finished("damaged-rows");
    damage(
      file,
      `UPDATE events SET payload = x'0aff0aff' WHERE sequence = (SELECT min(sequence) FROM events WHERE kind = 'tool_result');
       UPDATE events SET kind = 'no_such_kind' WHERE sequence = (SELECT min(sequence) FROM events WHERE kind = 'tool_call');`,
    );
    const runs = await Promise.all(
      ["show", "replay"].map((c) => agent(["sessions", c, id], { cwd: repo, env })),
    );
    for (const [i, command] of ["show", "replay"].entries()) {
      const r = runs[i]!;
      expect(r.stderr, command).not.toMatch(/\n\s+at /); // no stack trace
      expect(r.stdout, command).toContain("All read.");
      expect(r.stderr, command).toMatch(
        /damaged: event \d+ cannot be read: unknown event kind "no_such_kind"/,
      );
      expect(r.stderr, command).toMatch(
        /damaged: event \d+ cannot be read: its tool_result payload does not decode/,
      );
      expect(r.code, command).toBe(1);
    }
  });

  for (const table of ["producers", "cost_ledger", "plan_items", "events"]) {
    it(`show and list (and replay) report a missing ${table} table and show the rest`, async () => {
      const { repo, env, id, file } = await finished(`damaged-${table}`);
      damage(file, `DROP TABLE ${table};`);
      // Replay (which starts plugins) is checked for the table whose loss used to crash it.
      const commands = table === "producers" ? ["show", "list", "replay"] : ["show", "list"];
      const [show, list, replay] = await Promise.all(
        commands.map((c) => agent(["sessions", c, ...(c === "list" ? [] : [id])], { cwd: repo, env })),
      );
      const checked = replay
        ? ([
            ["show", show!],
            ["replay", replay],
          ] as const)
        : ([["show", show!]] as const);
      for (const [command, r] of checked) {
        expect(r.stderr, command).not.toMatch(/\n\s+at /);
        if (table !== "events") expect(r.stdout, command).toContain("All read.");
        expect(r.stderr, command).toMatch(new RegExp(`damaged: the ${table} table is missing`));
        expect(r.code, command).toBe(1);
      }
      expect(list!.stderr).not.toMatch(/\n\s+at /);
      expect(list!.stdout).toContain(id);
    });
  }
});

describe("a large write", () => {
  // 2 MB here to stay quick; `npm run faults` writes 10 MB.
  it("a large write_file is stored once, and every reader still sees the whole call", async () => {
    const content = `${"0123456789abcdef".repeat(64)}\n`.repeat(2_000);
    const { repo, env } = await project("bigwrite", [
      { kind: "tool_calls", calls: [{ name: "filesystem__write_file", args: { path: "big.txt", content } }] },
      { kind: "text", text: "Wrote it." },
    ]);
    const r = await agent(
      ["run", "-p", "write big.txt", "--output-format", "stream-json", "--headless-ask", "allow"],
      {
        cwd: repo,
        env,
        timeoutMs: 120_000,
      },
    );
    expect(readFileSync(join(repo, "big.txt"), "utf8")).toBe(content);
    const recs = records(r.stdout);
    const id = String(recs[0]?.["session_id"]);
    // The headless printer restores the input left out of the stored tool_call event.
    const call = recs.find((x) => x["type"] === "tool_call")!;
    expect((call["input"] as { content: string }).content).toHaveLength(content.length);

    const db = new DatabaseSync(join(env.XDG_STATE_HOME, "agent", "sessions", `${id}.sqlite`), {
      readOnly: true,
    });
    const rows = db.prepare("SELECT kind, length(payload) AS n FROM events").all() as {
      kind: string;
      n: number;
    }[];
    db.close();
    const total = rows.reduce((a, x) => a + x.n, 0);
    // The assistant message holds the content; everything else together is small.
    expect(total).toBeLessThan(content.length + 200 * 1024);
    expect(rows.filter((x) => x.n > 100 * 1024).map((x) => x.kind)).toEqual(["message"]);

    // The transcript shows the call on one line; --expand unfolds its whole input.
    const show = await agent(["sessions", "show", id, "--expand"], { cwd: repo, env, timeoutMs: 120_000 });
    expect(show.stdout).toContain("0123456789abcdef".repeat(64)); // the call's arguments, restored
  }, 180_000);
});
