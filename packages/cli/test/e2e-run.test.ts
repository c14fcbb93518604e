// End-to-end: the real `agent` binary, the first-party plugins, and a loopback fake
// Anthropic. A scripted model reads, edits and tests a small repository headless; the
// session file, the stream-json records, resume, replay and the session commands are
// then checked against each other.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { PlanDecision } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { createSession, eventKindText, openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;
let sessionId = "";
let firstRun: Array<Record<string, unknown>> = [];

const sessionsDir = () => join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");

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

describe("agent run -p (headless)", () => {
  it("reads, edits and tests a repository, recording everything in the session file", async () => {
    fake.push(
      {
        kind: "tool_calls",
        text: "Let me look at calc.js.",
        calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }],
      },
      {
        kind: "tool_calls",
        text: "add() subtracts; fixing it.",
        calls: [
          {
            name: "filesystem__edit_file",
            args: { path: "calc.js", old_str: "return a - b;", new_str: "return a + b;" },
          },
        ],
      },
      {
        kind: "tool_calls",
        text: "Running the test.",
        calls: [{ name: "exec__bash", args: { command: "node test.js" } }],
      },
      { kind: "text", text: "Fixed add() in calc.js; the test passes." },
    );
    const r = await agent(
      [
        "run",
        "-p",
        "Fix add() in calc.js and run the tests",
        "--output-format",
        "stream-json",
        "--headless-ask",
        "allow",
        "--verbose",
      ],
      { cwd: repo, env },
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a + b;");

    firstRun = records(r.stdout);
    const init = firstRun[0]!;
    expect(init).toMatchObject({
      type: "init",
      model: "anthropic/claude-sonnet-5",
      profile: "default",
      headless_ask: "allow",
    });
    // The tools as the model was sent them (not the profile's patterns), with kind and risk.
    const listed = init["tools"] as Array<Record<string, string>>;
    const sent = (fake.requests[0]!.json as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(listed.map((t) => t["name"])).toEqual(sent);
    expect(sent).toContain("filesystem__edit_file");
    expect(listed.find((t) => t["name"] === "filesystem__read_file")).toEqual({
      name: "filesystem__read_file",
      provider: "filesystem",
      tool: "read_file",
      kind: "data_source",
      risk: "read_only",
    });
    expect(listed.find((t) => t["name"] === "exec__bash")).toMatchObject({
      provider: "exec",
      tool: "bash",
      kind: "resource",
    });
    sessionId = String(init["session_id"]);
    expect(firstRun.every((rec) => rec["session_id"] === sessionId)).toBe(true);

    const of = (type: string) => firstRun.filter((rec) => rec["type"] === type);
    expect(
      of("delta")
        .map((d) => d["text"])
        .join(""),
    ).toContain("add() subtracts; fixing it.");
    expect(of("tool_call").map((c) => `${c["provider"]}.${c["tool_name"]}`)).toEqual([
      "filesystem.read_file",
      "filesystem.edit_file",
      "exec.bash",
    ]);
    const bash = of("tool_result").find((t) => t["tool_name"] === "bash")!;
    expect(bash).toMatchObject({ exit_code: 0, denied: false });
    expect(String(bash["output"] ?? JSON.stringify(bash["result"]))).toContain("ok: add(2, 3) = 5");
    // Plan decisions name what decided them: a policy rule, or the headless setting
    // answering the rule's ask.
    expect(
      of("plan_decision").map((p) => [
        p["tool_name"],
        p["decision"],
        p["decided_by"],
        p["policy_decision"],
        p["outcome"],
      ]),
    ).toEqual([
      ["edit_file", "allow", expect.stringContaining("allow_file_edits"), "allow", "applied"],
      ["bash", "allow", "headless:allow", "ask", "applied"],
    ]);
    expect(of("plan_decision")[1]!["policy_rule"]).toContain("ask_other_changes");
    // A call's plan_decision comes before its tool_result.
    for (const d of of("plan_decision")) {
      const result = firstRun.findIndex(
        (x) => x["type"] === "tool_result" && x["tool_call_id"] === d["tool_call_id"],
      );
      expect(result).toBeGreaterThan(firstRun.indexOf(d));
    }
    const usage = of("usage");
    expect(usage).toHaveLength(4);

    const result = firstRun.at(-1)!;
    expect(result).toMatchObject({
      type: "result",
      subtype: "success",
      is_error: false,
      session_id: sessionId,
      num_turns: 4,
      result: "Fixed add() in calc.js; the test passes.",
      permission_denials: [],
    });
    const cost = usage.reduce((sum, u) => sum + Number(u["cost_usd"]), 0);
    expect(result["total_cost_usd"]).toBeCloseTo(cost, 12);
    expect(result["total_cost_usd"]).toBeGreaterThan(0);
    expect((result["usage"] as Record<string, number>)["input_tokens"]).toBe(
      usage.reduce((sum, u) => sum + Number(u["input_tokens"]), 0),
    );

    // The session file holds the same story: events, plan items and the cost ledger.
    const reader = openSessionReader(sessionId, { dir: sessionsDir() });
    try {
      expect(reader.meta().status).toBe(SessionStatus.COMPLETED);
      const kinds = new Set(reader.readEvents().map((e) => eventKindText(e.kind)));
      for (const k of ["message", "tool_call", "tool_result", "plan", "apply"]) expect(kinds).toContain(k);
      // plan_items keep the decision reached at plan-ready.
      expect(reader.planItems().map((p) => [p.toolName, p.decision, p.decidedBy])).toEqual([
        ["edit_file", PlanDecision.ALLOW, expect.stringContaining("allow_file_edits")],
        ["bash", PlanDecision.ASK, expect.stringContaining("ask_other_changes")],
      ]);
      const ledger = reader.costLedger();
      expect(ledger).toHaveLength(4);
      expect(
        ledger.every((row) => row.providerName === "anthropic" && row.modelId === "claude-sonnet-5"),
      ).toBe(true);
      expect(ledger.reduce((s, row) => s + row.costUsd, 0)).toBeCloseTo(Number(result["total_cost_usd"]), 12);
    } finally {
      reader.close();
    }
    expect(fake.requests).toHaveLength(4);
  });

  it("replays the session through the recorded producers exactly as it was rendered live; lists and shows it", async () => {
    const live = firstRun.filter((rec) => rec["type"] === "render").map((rec) => String(rec["text"]));
    expect(live.length).toBeGreaterThan(5);
    // Read-only commands: run side by side.
    // Replay starts only the producers whose events it renders (AGENT_DEBUG_LAUNCH_LOG
    // names each launch): not the model provider, the context providers or the rest.
    const launchLog = join(repo, "..", "replay-launches.log");
    const [r, list, show] = await Promise.all([
      agent(["sessions", "replay", sessionId], {
        cwd: repo,
        env: { ...env, AGENT_DEBUG_LAUNCH_LOG: launchLog },
      }),
      agent(["sessions", "list"], { cwd: repo, env }),
      agent(["sessions", "show", sessionId], { cwd: repo, env }),
    ]);
    expect([...new Set(readFileSync(launchLog, "utf8").split("\n").filter(Boolean))].sort()).toEqual([
      "exec",
      "filesystem",
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${live.join("\n\n")}\n`);
    // The filesystem plugin's own Render (not the kernel's generic one) drew the edit.
    expect(r.stdout).toContain("+  return a + b;");
    expect(fake.requests).toHaveLength(4);

    // The listing: id, start time, directory, model, status, live (nobody runs it now), cost, title.
    expect(list.code).toBe(0);
    const row = list.stdout.split("\n").find((l) => l.startsWith(sessionId))!;
    expect(row).toMatch(
      /^\S+\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+~\/repo\s+anthropic\/\S+\s+completed\s+-\s+\$\S+\s+Fix add\(\) in calc\.js/,
    );
    // show: the kernel's generic rendering of the file, no plugin started.
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("Fixed add() in calc.js; the test passes.");
    expect(show.stdout).not.toBe(r.stdout);
    // Each call once (its tool_call event), with its result once (its tool_result event):
    // messages no longer repeat the model's tool_use blocks or the tool_result blocks.
    const count = (text: string, what: string) => text.split(what).length - 1;
    for (const call of ["filesystem.read_file", "filesystem.edit_file", "exec.bash"]) {
      expect([call, count(show.stdout, `→ ${call}`), count(show.stdout, `✓ ${call}`)]).toEqual([call, 1, 1]);
    }
    for (const text of [show.stdout, r.stdout]) {
      expect(text).not.toContain("Tool call ");
      expect(text).not.toContain("Result of ");
      expect(text).not.toContain("filesystem__read_file");
    }
  });

  it("resumes the session with --resume and --continue", async () => {
    fake.push(
      { kind: "text", text: "I replaced - with + in add()." },
      { kind: "text", text: "Nothing else changed." },
    );
    const r = await agent(
      ["run", "--resume", sessionId, "-p", "What did you change?", "--output-format", "json"],
      {
        cwd: repo,
        env,
      },
    );
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const result = JSON.parse(lines[0]!);
    expect(result).toMatchObject({
      type: "result",
      subtype: "success",
      session_id: sessionId,
      num_turns: 1,
      result: "I replaced - with + in add().",
    });
    expect(result.session_cost_usd).toBeGreaterThan(result.total_cost_usd);
    // The model saw the earlier conversation.
    expect(JSON.stringify(fake.requests[4]!.json)).toContain("Fix add() in calc.js and run the tests");

    const c = await agent(["run", "--continue", "-p", "Anything else?"], { cwd: repo, env });
    expect(c.code).toBe(0);
    expect(c.stdout).toBe("Nothing else changed.\n");
    const reader = openSessionReader(sessionId, { dir: sessionsDir() });
    try {
      expect(reader.costLedger()).toHaveLength(6);
    } finally {
      reader.close();
    }
  });

  it("gives distinct exit codes for a denied call and a reached bound; --plan withholds changing tools", async () => {
    // Three independent sessions at once: denied (4), max turns (3), plan mode.
    const denyRepo = sb.repo("deny");
    const boundRepo = sb.repo("bound");
    const script = [
      { kind: "tool_calls" as const, calls: [{ name: "exec__bash", args: { command: "node test.js" } }] },
      { kind: "text" as const, text: "I could not run the tests." },
    ];
    const denyFake = await startFakeVendor({ vendor: "anthropic", script });
    const boundFake = await startFakeVendor({ vendor: "anthropic", script });
    const planRepo = sb.repo("plan");
    const planFake = await startFakeVendor({
      vendor: "anthropic",
      script: [{ kind: "text", text: "Plan: fix add()." }],
    });
    try {
      const [denied, bound, plan] = await Promise.all([
        agent(["run", "-p", "run the tests", "--output-format", "json"], {
          cwd: denyRepo,
          env: { ...env, FAKE_ANTHROPIC_URL: denyFake.url, FIXTURE_ROOT: denyRepo },
        }),
        agent(
          [
            "run",
            "-p",
            "run the tests",
            "--output-format",
            "json",
            "--max-turns",
            "1",
            "--headless-ask",
            "allow",
          ],
          {
            cwd: boundRepo,
            env: { ...env, FAKE_ANTHROPIC_URL: boundFake.url, FIXTURE_ROOT: boundRepo },
          },
        ),
        // Plan mode: the model is offered no tool that changes anything.
        agent(["run", "-p", "plan a fix", "--plan"], {
          cwd: planRepo,
          env: { ...env, FAKE_ANTHROPIC_URL: planFake.url, FIXTURE_ROOT: planRepo },
        }),
      ]);
      expect(plan).toMatchObject({ code: 0, stdout: "Plan: fix add().\n" });
      const offered = ((planFake.requests[0]!.json as { tools?: { name: string }[] }).tools ?? []).map(
        (t) => t.name,
      );
      expect(offered).toContain("filesystem__read_file");
      expect(offered).not.toContain("filesystem__edit_file");
      expect(offered).not.toContain("exec__bash");
      expect(denied.code).toBe(4);
      const d = JSON.parse(denied.stdout);
      expect(d).toMatchObject({ subtype: "error_permission_denied", is_error: true, exit_code: 4 });
      expect(d.permission_denials).toEqual([
        {
          provider: "exec",
          tool_name: "bash",
          tool_call_id: expect.any(String),
          decided_by: "headless:deny",
          reason: expect.stringContaining("rerun with --headless-ask allow"),
        },
      ]);
      expect(bound.code).toBe(3);
      expect(JSON.parse(bound.stdout)).toMatchObject({
        subtype: "error_max_turns",
        num_turns: 2,
        exit_code: 3,
      });
    } finally {
      await denyFake.close();
      await boundFake.close();
      await planFake.close();
    }
  });
});

describe("agent run -p: cancelled and failed", () => {
  it("exits 4 on SIGINT (the run is cancelled) and 1 when the session fails", async () => {
    const cancelRepo = sb.repo("cancel");
    const failRepo = sb.repo("fail");
    const slow = await startFakeVendor({
      vendor: "anthropic",
      script: [
        {
          kind: "text",
          text: "one two three four five six seven eight nine ten",
          chunks: 10,
          chunkDelayMs: 400,
        },
      ],
    });
    const broken = await startFakeVendor({
      vendor: "anthropic",
      script: [
        { kind: "error", status: 401, errorType: "authentication_error", message: "invalid x-api-key" },
      ],
    });
    try {
      const cancelled = new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
        const child = spawn(AGENT_BIN, ["run", "-p", "count", "--output-format", "stream-json"], {
          cwd: cancelRepo,
          env: { ...env, FAKE_ANTHROPIC_URL: slow.url, FIXTURE_ROOT: cancelRepo },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let sent = false;
        child.stdout!.setEncoding("utf8").on("data", (d: string) => {
          stdout += d;
          // Ctrl-C once the answer is streaming.
          if (!sent && stdout.includes('"type":"delta"')) {
            sent = true;
            child.kill("SIGINT");
          }
        });
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout }));
      });
      const [c, f] = await Promise.all([
        cancelled,
        agent(["run", "-p", "hello", "--output-format", "json"], {
          cwd: failRepo,
          env: { ...env, FAKE_ANTHROPIC_URL: broken.url, FIXTURE_ROOT: failRepo },
        }),
      ]);
      expect(c.code).toBe(4);
      expect(records(c.stdout).at(-1)).toMatchObject({ type: "result", subtype: "cancelled", exit_code: 4 });
      expect(f.code).toBe(1);
      expect(JSON.parse(f.stdout)).toMatchObject({
        type: "result",
        subtype: "failed",
        is_error: true,
        exit_code: 1,
      });
    } finally {
      await slow.close();
      await broken.close();
    }
  });
});

describe("agent sessions prune", () => {
  it("deletes only the session it is told to", async () => {
    // A second, unrelated session file; pruning it by id leaves the first one alone.
    const other = createSession({ profile: "other", depth: 0 }, { dir: sessionsDir(), durability: "normal" });
    const otherId = other.sessionId;
    other.setStatus(SessionStatus.CANCELLED);
    other.close();
    const prune = await agent(["sessions", "prune", otherId], { cwd: repo, env });
    expect(prune.code).toBe(0);
    expect(prune.stdout).toContain(`deleted ${otherId}`);
    const left = readdirSync(sessionsDir()).filter((f) => f.endsWith(".sqlite"));
    expect(left).toContain(`${sessionId}.sqlite`);
    expect(left.some((f) => f.startsWith(otherId))).toBe(false);
  });
});
