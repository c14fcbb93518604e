// `agent serve` as a real background kernel (the binary, the first-party plugins, a
// loopback fake Anthropic), with real frontends attached to one session through its
// endpoint: protocol clients on the unix socket and `agent attach` (the terminal UI)
// in a real pseudo-terminal (tmux). Both see the same stream; a permission answered in
// one is withdrawn in the other; detach and reattach backfills exactly what was seen
// live; asks wait while nobody is attached; any frontend interrupts; loopback TCP needs
// the token; the socket and its directory are private; the vendor key never crosses.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { toJsonString } from "@bufbuild/protobuf";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import {
  ClientDecision,
  FrontendErrorCategory,
  type ServerEvent,
  ServerEventSchema,
} from "@pluggableharness/protocol/frontend";
import { PlanDecisionScope } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import type { ClientEventInit } from "@pluggableharness/provider-tui";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Dialled, dial, type Target } from "../src/serve/client.ts";
import { AGENT_BIN, agent, type Sandbox, sandbox, servedTarget } from "./helpers.ts";

const CANARY = "sk-ant-canary-9f3b1c7e5a2d4e6f8a0b";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;
let server: ChildProcess;
let banner = "";
let socket = "";
let tcp: { port: number; token: string };
const clients: Client[] = [];
let tmuxSocket = "";

/** One frontend connection, recording every event it receives. */
class Client {
  readonly events: ServerEvent[] = [];
  readonly #d: Dialled;
  #waiters: (() => void)[] = [];
  ended = false;
  error: Error | undefined;

  constructor(target: Target) {
    const d = dial(target);
    this.#d = d;
    clients.push(this);
    void (async () => {
      try {
        for await (const e of d.connection.events) {
          this.events.push(e);
          for (const w of this.#waiters) w();
        }
      } catch (err) {
        this.error = err as Error;
      } finally {
        this.ended = true;
        for (const w of this.#waiters) w();
      }
    })();
  }

  send(e: ClientEventInit): void {
    this.#d.connection.send(e);
  }

  close(): void {
    this.#d.close();
  }

  /** The first event at index >= from matching `pred` (its index). */
  async waitFor(pred: (e: ServerEvent) => boolean, from = 0, what = "event"): Promise<number> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const i = this.events.findIndex((e, idx) => idx >= from && pred(e));
      if (i >= 0) return i;
      if (this.ended) throw new Error(`connection ended waiting for ${what}: ${this.error?.message ?? ""}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
      this.#waiters = [];
    }
  }
}

const unix = (): Target => servedTarget(socket);
const is =
  (c: ServerEvent["event"]["case"]) =>
  (e: ServerEvent): boolean =>
    e.event.case === c;
const statusIs = (s: SessionStatus) => (e: ServerEvent) =>
  e.event.case === "sessionStatusUpdate" && e.event.value.status === s;
const json = (e: ServerEvent) => toJsonString(ServerEventSchema, e);
/** The session's own stream: what every subscriber must see alike (not replies to one of them). */
const shared = (events: ServerEvent[]) =>
  events.filter((e) => e.requestId === undefined && e.event.case !== "error");
const text = (t: string) => [{ block: { case: "text" as const, value: { text: t } } }];

function tmux(...args: string[]): string {
  return execFileSync("tmux", ["-S", tmuxSocket, ...args], { encoding: "utf8" });
}

async function waitForPane(pattern: string | RegExp, timeoutMs = 20_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const t = tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "attach");
    if (typeof pattern === "string" ? t.includes(pattern) : pattern.test(t)) return t;
    if (Date.now() > end) throw new Error(`timed out waiting for ${pattern} on the terminal:\n${t}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo("served");
  // File edits ask in this project, so there is a permission to answer.
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8").replace(
    'policy "allow_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "allow"',
    'policy "ask_file_edits" {\n  match  = { provider = "filesystem", kind = "resource" }\n  action = "ask"',
  );
  expect(hcl).toContain("ask_file_edits");
  writeFileSync(join(repo, "agent.hcl"), hcl);
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    XDG_RUNTIME_DIR: sb.dir("run"),
    ANTHROPIC_API_KEY: CANARY,
    FAKE_ANTHROPIC_URL: fake.url,
    FIXTURE_ROOT: repo,
  };
  tmuxSocket = join(sb.home, "tmux.sock");
  server = spawn(AGENT_BIN, ["serve", "--tcp"], { cwd: repo, env, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  server.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`agent serve did not start:\n${banner}\n${err}`)), 45_000);
    server.stdout!.on("data", (d: Buffer) => {
      banner += d.toString();
      if (/tcp: .*AGENT_SERVE_TOKEN=\S+/.test(banner)) {
        clearTimeout(t);
        resolve();
      }
    });
    server.once("exit", (code) => reject(new Error(`agent serve exited ${code}:\n${banner}\n${err}`)));
  });
  socket = /on unix:(\S+)/.exec(banner)![1]!;
  const m = /tcp: 127\.0\.0\.1:(\d+) .*AGENT_SERVE_TOKEN=(\S+)\)/.exec(banner)!;
  tcp = { port: Number(m[1]), token: m[2]! };
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  try {
    tmux("kill-server");
  } catch {
    // no terminal was started, or it is gone
  }
  if (server && server.exitCode === null) {
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    await exited;
  }
  await fake?.close();
  sb?.cleanup();
});

describe("agent serve", () => {
  it("listens on a private unix socket and on loopback TCP only with its token", async () => {
    expect(statSync(join(env["XDG_RUNTIME_DIR"]!, "agent")).mode & 0o777).toBe(0o700);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    const record = socket.replace(/\.sock$/, ".json");
    expect(statSync(record).mode & 0o777).toBe(0o600);

    // The socket and TCP alike: no call without the token from the private record.
    expect(servedTarget(socket).token).toBe(tcp.token);
    const strangers: Target[] = ["", "wrong-token-of-the-same-kind-000000000000"].flatMap((token) => [
      { kind: "tcp" as const, host: "127.0.0.1", port: tcp.port, token },
      { kind: "unix" as const, socket, token },
    ]);
    for (const target of strangers) {
      const stranger = new Client(target);
      stranger.send({ event: { case: "listSessions", value: { requestId: "x" } } });
      await expect(stranger.waitFor(is("sessionList"), 0, "refusal")).rejects.toThrow(/ended/);
      expect(stranger.error?.message).toMatch(/UNAUTHENTICATED|valid token/);
      expect(stranger.events).toEqual([]);
    }
    const owner = new Client({ kind: "tcp", host: "127.0.0.1", port: tcp.port, token: tcp.token });
    owner.send({ event: { case: "listSessions", value: { requestId: "y" } } });
    await owner.waitFor(is("sessionList"));
    owner.close();

    // One server per project.
    const again = await agent(["serve"], { cwd: repo, env });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("agent serve already runs for");
  });

  let sessionId = "";
  let a: Client;
  let b: Client;

  it("two frontends see one stream; a permission answered in one is withdrawn in the other", async () => {
    a = new Client(unix());
    a.send({ event: { case: "createSession", value: { requestId: "new", workingDirectory: repo } } });
    const created = a.events[await a.waitFor(is("sessionCreated"))]!;
    sessionId = created.sessionId;
    const aFrom = a.events.length;

    b = new Client(unix());
    b.send({ event: { case: "resumeSession", value: { requestId: "r1", sessionId } } });
    const bFrom = (await b.waitFor(is("backfillComplete"))) + 1;

    fake.push(
      {
        kind: "tool_calls",
        text: "Fixing add().",
        calls: [
          {
            name: "filesystem__edit_file",
            args: { path: "calc.js", old_str: "return a - b;", new_str: "return a + b;" },
          },
        ],
      },
      { kind: "text", text: "Fixed add() in calc.js.", chunks: 4 },
    );
    a.send({ sessionId, event: { case: "userMessage", value: { content: text("Fix add()") } } });
    const aAsk = a.events[await a.waitFor(is("permissionRequest"), aFrom)]!;
    const bAsk = b.events[await b.waitFor(is("permissionRequest"), bFrom)]!;
    expect(json(bAsk)).toBe(json(aAsk));
    const item = aAsk.event.case === "permissionRequest" ? aAsk.event.value.planItem! : undefined;
    expect(item?.toolName).toBe("edit_file");
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a - b;");

    // B answers; both are told; A's late answer is refused as already decided.
    b.send({
      sessionId,
      event: {
        case: "planDecision",
        value: { planItemId: item!.id, decision: ClientDecision.ALLOW, scope: PlanDecisionScope.ONCE },
      },
    });
    for (const c of [a, b]) {
      const r = c.events[await c.waitFor(is("requestResolved"), 0, "request_resolved")]!;
      expect(r.event.value).toMatchObject({
        planItemId: item!.id,
        decision: ClientDecision.ALLOW,
        resolvedBy: "human:once",
      });
    }
    const lateFrom = a.events.length;
    a.send({
      sessionId,
      event: {
        case: "planDecision",
        value: { planItemId: item!.id, decision: ClientDecision.DENY, scope: PlanDecisionScope.ONCE },
      },
    });
    const late = a.events[await a.waitFor(is("error"), lateFrom, "the late answer's refusal")]!;
    expect(late.event.case === "error" && late.event.value.error).toMatchObject({
      category: FrontendErrorCategory.INVALID_CLIENT_EVENT,
      message: expect.stringContaining("already decided"),
    });

    await a.waitFor(statusIs(SessionStatus.COMPLETED), aFrom, "completed");
    await b.waitFor(statusIs(SessionStatus.COMPLETED), bFrom, "completed");
    expect(readFileSync(join(repo, "calc.js"), "utf8")).toContain("return a + b;");
    // The same stream, event for event: deltas, renders, the request, its resolution, status.
    const aLive = shared(a.events.slice(aFrom)).map(json);
    const bLive = shared(b.events.slice(bFrom)).map(json);
    expect(bLive).toEqual(aLive);
    expect(aLive.some((j) => j.includes("streamDelta"))).toBe(true);
    expect(aLive.some((j) => j.includes("Fixed add() in calc.js."))).toBe(true);
  });

  it("detach leaves the session running; reattaching backfills exactly what was seen live", async () => {
    const detachFrom = b.events.length;
    b.send({ event: { case: "detachSession", value: { requestId: "d1", sessionId } } });
    await b.waitFor(is("sessionDetached"), detachFrom);
    const detachedAt = b.events.length;

    fake.push({ kind: "text", text: "Second answer, while B was away.", chunks: 3 });
    const aFrom = a.events.length;
    a.send({ sessionId, event: { case: "userMessage", value: { content: text("And now?") } } });
    await a.waitFor(statusIs(SessionStatus.COMPLETED), aFrom, "second turn");
    // Nothing reached B while it was detached.
    expect(b.events.length).toBe(detachedAt);

    b.send({ event: { case: "resumeSession", value: { requestId: "r2", sessionId } } });
    const opened = await b.waitFor(is("sessionAttached"), detachedAt);
    const closed = await b.waitFor(is("backfillComplete"), opened);
    const backfill = b.events
      .slice(opened + 1, closed)
      .filter(is("render"))
      .map(json);
    // A created the session and saw every persisted event rendered live.
    const live = a.events.filter(is("render")).map(json);
    expect(backfill.length).toBeGreaterThan(3);
    expect(backfill).toEqual(live);
    const joined = backfill.join("\n");
    expect(joined).toContain("Fix add()");
    expect(joined).toContain("Second answer, while B was away.");
  });

  it("an ask waits while no frontend is attached, and any frontend can interrupt", async () => {
    fake.push({
      kind: "tool_calls",
      calls: [{ name: "filesystem__write_file", args: { path: "notes.txt", content: "hello" } }],
    });
    const aFrom = a.events.length;
    a.send({ sessionId, event: { case: "userMessage", value: { content: text("Write notes") } } });
    await a.waitFor(is("permissionRequest"), aFrom);
    // Everyone leaves: the ask stays pending instead of being denied.
    a.close();
    b.close();
    const c = new Client(unix());
    c.send({ event: { case: "resumeSession", value: { requestId: "r3", sessionId } } });
    const done = await c.waitFor(is("backfillComplete"));
    const pending = await c.waitFor(is("permissionRequest"), done, "the pending request after the backfill");
    const planItemId = (c.events[pending]!.event.value as { planItem: { id: string } }).planItem.id;
    // A second late-comer interrupts.
    const d = new Client(unix());
    d.send({ event: { case: "attachSession", value: { requestId: "a4", sessionId } } });
    await d.waitFor(is("backfillComplete"));
    d.send({ sessionId, event: { case: "interrupt", value: {} } });
    const resolved = c.events[await c.waitFor(is("requestResolved"), pending)]!;
    expect(resolved.event.value).toMatchObject({ planItemId, resolvedBy: "interrupt" });
    await c.waitFor(statusIs(SessionStatus.CANCELLED), pending, "cancelled");
    await d.waitFor(statusIs(SessionStatus.CANCELLED), 0, "cancelled");
    expect(() => statSync(join(repo, "notes.txt"))).toThrow();
    c.close();
    d.close();
  });

  it("agent attach is a terminal UI on the served session; leaving only detaches", async () => {
    const script = join(sb.home, "attach.sh");
    const exports = Object.entries({ ...env, TERM: "xterm-256color" })
      .filter(([k, v]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) && v !== undefined && k !== "NO_COLOR")
      .map(([k, v]) => `export ${k}='${String(v).replace(/'/g, "'\\''")}'`)
      .join("\n");
    writeFileSync(
      script,
      `#!/bin/sh\ncd '${repo}'\n${exports}\n'${AGENT_BIN}' attach ${sessionId.slice(0, 12)}\necho "ATTACH_EXIT=$?"\nsleep 600\n`,
      { mode: 0o755 },
    );
    tmux("new-session", "-d", "-s", "attach", "-x", "110", "-y", "40", script);
    // The backfill: the transcript so far.
    await waitForPane("Second answer, while B was away.");

    const p = new Client(unix());
    p.send({ event: { case: "resumeSession", value: { requestId: "p", sessionId } } });
    const pFrom = (await p.waitFor(is("backfillComplete"))) + 1;

    // Answered by the protocol client: the terminal withdraws its prompt and says so.
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "filesystem__edit_file",
            args: { path: "calc.js", old_str: "// Adds two numbers.", new_str: "// Adds." },
          },
        ],
      },
      {
        kind: "tool_calls",
        text: "One more.",
        calls: [
          { name: "filesystem__write_file", args: { path: "notes.txt", content: "from the terminal" } },
        ],
      },
      { kind: "text", text: "Streaming to both frontends now.", chunks: 5, chunkDelayMs: 20 },
    );
    p.send({ sessionId, event: { case: "userMessage", value: { content: text("Edit the comment") } } });
    const ask = p.events[await p.waitFor(is("permissionRequest"), pFrom)]!;
    await waitForPane("Allow filesystem.edit_file");
    const id1 = (ask.event.value as { planItem: { id: string } }).planItem.id;
    p.send({
      sessionId,
      event: {
        case: "planDecision",
        value: { planItemId: id1, decision: ClientDecision.ALLOW, scope: PlanDecisionScope.ONCE },
      },
    });
    await waitForPane("filesystem.edit_file was allowed elsewhere (human:once)");

    // Answered in the terminal: the protocol client is told.
    const ask2 = await p.waitFor(
      (e) =>
        is("permissionRequest")(e) && (e.event.value as { planItem: { id: string } }).planItem.id !== id1,
      pFrom,
      "the second request",
    );
    const id2 = (p.events[ask2]!.event.value as { planItem: { id: string } }).planItem.id;
    await waitForPane("Allow filesystem.write_file");
    tmux("send-keys", "-t", "attach", "y");
    const r2 =
      p.events[
        await p.waitFor(
          (e) => is("requestResolved")(e) && (e.event.value as { planItemId: string }).planItemId === id2,
          ask2,
        )
      ]!;
    expect(r2.event.value).toMatchObject({ decision: ClientDecision.ALLOW, resolvedBy: "human:once" });
    await waitForPane("Streaming to both frontends now.");
    await p.waitFor(statusIs(SessionStatus.COMPLETED), ask2, "completed");
    expect(readFileSync(join(repo, "notes.txt"), "utf8")).toBe("from the terminal");

    // Ctrl-C twice mid-turn leaves the terminal UI; the turn runs on to the end.
    // Paragraphs, so the terminal shows each as it settles, mid-turn.
    const story = Array.from({ length: 30 }, (_, i) => `tale${i}`).join("\n\n");
    fake.push({ kind: "text", text: story, chunks: 30, chunkDelayMs: 40 });
    const storyFrom = p.events.length;
    p.send({ sessionId, event: { case: "userMessage", value: { content: text("A story, please") } } });
    await waitForPane(/tale2\b/);
    tmux("send-keys", "-t", "attach", "C-c");
    tmux("send-keys", "-t", "attach", "C-c");
    const pane = await waitForPane("ATTACH_EXIT=0");
    expect(pane).toContain(`Detached from ${sessionId}`);
    await p.waitFor(statusIs(SessionStatus.COMPLETED), storyFrom, "the story's end");
    expect(p.events.slice(storyFrom).some(statusIs(SessionStatus.CANCELLED))).toBe(false);
    expect(p.events.slice(storyFrom).map(json).join("")).toContain("tale29");
    const list = await agent(["sessions", "list", "--json"], { cwd: repo, env });
    const row = (JSON.parse(list.stdout) as { session_id: string; live: string | null }[]).find(
      (s) => s.session_id === sessionId,
    );
    expect(row?.live).toBe("serve");
    p.close();
  });

  it("agent run --detach starts a session under the server and returns", async () => {
    fake.push({ kind: "text", text: "Detached and done." });
    const r = await agent(["run", "--detach", "Say something"], { cwd: repo, env });
    expect(r.stderr).toContain("runs under agent serve");
    expect(r.code).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(/^[0-9A-Z]{26}$/);
    const c = new Client(unix());
    c.send({ event: { case: "resumeSession", value: { requestId: "w", sessionId: id } } });
    await c.waitFor(
      (e) => json(e).includes("Detached and done."),
      0,
      "the detached session's answer (live or in the backfill)",
    );
    const listed = await agent(["sessions", "list"], { cwd: repo, env });
    expect(listed.stdout).toMatch(new RegExp(`${id}.*\\bserve\\b`));
    const flags = await agent(["run", "--detach", "--plan", "x"], { cwd: repo, env });
    expect(flags.code).toBe(2);
    expect(flags.stderr).toContain("--plan cannot be combined with --detach");
    c.close();
  });

  it("serve --background outlives its command, run --detach uses it, serve --stop ends it", async () => {
    const other = sb.repo("background");
    writeFileSync(join(other, "agent.hcl"), readFileSync(join(repo, "agent.hcl"), "utf8"));
    const otherEnv = { ...env, FIXTURE_ROOT: other };
    fake.push({ kind: "text", text: "From the background." });
    // Started with everything it can print (socket, TCP, web): it must outlive this command.
    const started = await agent(["serve", "--background", "--tcp", "--web"], { cwd: other, env: otherEnv });
    expect(started.code).toBe(0);
    expect(started.stdout).toContain("web UI: http://127.0.0.1:");
    const r = await agent(["run", "--detach", "Hello from elsewhere"], { cwd: other, env: otherEnv });
    expect(r.code).toBe(0);
    const id = r.stdout.trim();
    const status = await agent(["serve", "--status"], { cwd: other, env: otherEnv });
    expect(status.code).toBe(0);
    const pid = Number(/pid (\d+)\)/.exec(status.stdout)![1]);
    expect(pid).not.toBe(server.pid);
    const c = new Client(servedTarget(/on unix:(\S+)/.exec(status.stdout)![1]!));
    c.send({ event: { case: "resumeSession", value: { requestId: "bg", sessionId: id } } });
    await c.waitFor((e) => json(e).includes("From the background."), 0, "the answer");
    c.close();
    expect((await agent(["serve", "--stop"], { cwd: other, env: otherEnv })).code).toBe(0);
    const gone = Date.now() + 20_000;
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    while (alive() && Date.now() < gone) await new Promise((res) => setTimeout(res, 50));
    expect(alive()).toBe(false);
    expect((await agent(["serve", "--status"], { cwd: other, env: otherEnv })).code).toBe(1);
  });

  it("no secret crosses the endpoint", () => {
    const all = clients.flatMap((c) => c.events.map(json)).join("\n");
    expect(all.length).toBeGreaterThan(1000);
    expect(all).not.toContain(CANARY);
    expect(banner).not.toContain(CANARY);
  });
});
