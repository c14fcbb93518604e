// End-to-end: the real `agent` binary with the first-party workspace-context and memory
// providers as their own processes (memory in the plugin sandbox, real bubblewrap where it
// can run) against a loopback fake Anthropic, in a real git repository. A fact remembered
// in one session is recalled in the next session's context; forget removes it; the git
// state reaches the prompt; --verbose shows each provider's budget; a secret from the
// environment is refused by the kernel and stored nowhere (with the SQLite store: both
// stores are covered case by case over the plugin boundary in providers/memory/test).
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { MemoryMutationEventSchema } from "@pluggableharness/protocol/event";
import { listSessions, openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let env: NodeJS.ProcessEnv;

const CANARY = "canary-7f3a9e21c4d5b6";
/** Each test runs the agent binary two or three times, every run launching its plugins. */
const E2E_TIMEOUT_MS = 90_000;

const HCL = (store: string) => `
required_providers {
  anthropic         = { source = "pluggableharness/anthropic", version = ">= 0.1.0" }
  workspace-context = { source = "pluggableharness/workspace-context", version = ">= 0.1.0" }
  memory            = { source = "pluggableharness/memory", version = ">= 0.1.0" }
}

provider "anthropic" {
  api_key  = env("ANTHROPIC_API_KEY")
  base_url = env("FAKE_ANTHROPIC_URL")
}

provider "workspace-context" {
  token_budget = 1200
}

provider "memory" {
  store = "${store}"
}

policy "memory_writes" {
  match  = { provider = "memory" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "anthropic"
      id       = "claude-sonnet-5"
    }
  }
  tools     = ["memory.*"]
  max_turns = 5
}
`;

/** Everything the request sent to the fake, as text (system blocks and messages). */
const sent = (i: number) => JSON.stringify(fake.requests[i]!.json);

function dump(dir: string): string {
  if (!existsSync(dir)) return "";
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(join(e.parentPath, e.name), "latin1"))
    .join("\n");
}

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  const git = (...a: string[]) =>
    execFileSync("git", ["-c", "user.name=E2E", "-c", "user.email=e2e@example.com", ...a], {
      cwd: repo,
      stdio: "pipe",
    });
  git("init", "-q", "-b", "release");
  git("add", ".");
  git("commit", "-q", "-m", "initial import");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = {
    ...sb.env,
    ANTHROPIC_API_KEY: "sk-ant-test",
    FAKE_ANTHROPIC_URL: fake.url,
    VENDOR_API_KEY: CANARY,
  };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

const sessionsDir = () => join(sb.env["XDG_STATE_HOME"]!, "agent", "sessions");

/** The memory_* events of the newest session: kind, record id, origin, links. */
function memoryEvents(): [string, string, string, string[]][] {
  const newest = listSessions({ dir: sessionsDir() }).sessions.sort((a, b) =>
    Number((b.startedAt?.seconds ?? 0n) - (a.startedAt?.seconds ?? 0n)),
  )[0]!;
  const reader = openSessionReader(newest.sessionId, { dir: sessionsDir() });
  try {
    return [...reader.events()]
      .filter((e) => e.kindText.startsWith("memory_"))
      .map((e) => {
        const m = fromBinary(MemoryMutationEventSchema, e.payload);
        return [e.kindText, m.record?.id ?? "", m.origin, m.record?.links ?? []];
      });
  } finally {
    reader.close();
  }
}

const memory = (...args: string[]) => agent(["memory", ...args], { cwd: repo, env, timeoutMs: 60_000 });

const run = (prompt: string, extra: string[] = []) =>
  agent(["run", "-p", prompt, "--headless-ask", "deny", ...extra], { cwd: repo, env, timeoutMs: 60_000 });

describe.each(["markdown"])("memory across sessions (%s store, the default)", (store) => {
  beforeAll(() => writeFileSync(join(repo, "agent.hcl"), HCL(store)));

  it(
    "recalls in a new session what the previous one remembered",
    async () => {
      const before = fake.requests.length;
      fake.push(
        {
          kind: "tool_calls",
          text: "Noting that.",
          calls: [
            {
              name: "memory__remember",
              args: {
                type: "project",
                title: "Release day",
                content: `Releases ship on Thursdays (${store}); see [[Deploy Checklist]].`,
              },
            },
          ],
        },
        { kind: "text", text: "Saved." },
      );
      const first = await run("Remember: releases ship on Thursdays.", ["--verbose"]);
      expect(first.stderr).not.toContain("error");
      expect(first.code).toBe(0);
      // Turn 1's context: git state from the real repository, within the configured budget.
      expect(sent(before)).toContain("Branch: release");
      expect(sent(before)).toContain("initial import (E2E,");
      expect(sent(before)).not.toContain("Releases ship on Thursdays");
      // --verbose prints each provider's contribution against its budget.
      expect(first.stdout + first.stderr).toMatch(/Context from workspace-context — \d+\/1200 tokens/);
      // The write went through the kernel: a memory_write event in the session file, with
      // the links the kernel parsed.
      // The autonomous path's draft of "Remember: …" is a write too, and its removal at
      // session-end (the model recorded the fact itself) a delete.
      expect(memoryEvents()).toEqual([
        ["memory_write", "releases-ship-on-thursdays", "memory:auto", []],
        ["memory_write", "release-day", "memory.remember", ["deploy-checklist"]],
        ["memory_delete", "releases-ship-on-thursdays", "memory:auto", []],
      ]);

      fake.push({ kind: "text", text: "Thursday." });
      const second = await run("Which day do releases ship?");
      expect(second.code).toBe(0);
      const recalled = sent(fake.requests.length - 1);
      expect(recalled).toContain(`Releases ship on Thursdays (${store}); see [[Deploy Checklist]].`);
      expect(recalled).toContain('[Recalled memory \\"release-day\\" (project, project scope): Release day]');
      // The autonomous path drafted "Remember: …" too; session-end dropped that draft since
      // the model recorded the fact itself.
      expect(dump(join(repo, ".agent", "memory"))).not.toContain("recorded_by: memory:auto");
    },
    E2E_TIMEOUT_MS,
  );

  it(
    "drafts an explicit standing instruction the model did not record, as pending, and recalls it only once confirmed",
    async () => {
      fake.push({ kind: "text", text: "Understood." });
      expect((await run("From now on, write commit messages in English.")).code).toBe(0);
      const dir = join(repo, ".agent", "memory");
      const draft = readdirSync(dir).find((f) => readFileSync(join(dir, f), "utf8").includes("memory:auto"));
      expect(draft).toBeDefined();
      const file = readFileSync(join(dir, draft!), "utf8");
      expect(file).toContain("status: pending");
      expect(file).toContain("From now on, write commit messages in English");
      expect(memoryEvents()).toEqual([["memory_write", draft!.replace(/\.md$/, ""), "memory:auto", []]]);
      fake.push({ kind: "text", text: "ok" });
      expect((await run("What are the commit rules?")).code).toBe(0);
      expect(sent(fake.requests.length - 1)).not.toContain("write commit messages in English");
      // The operator audits memory without a model (no vendor key in the environment):
      // the draft is listed first, shown, and approved; the next session recalls it.
      const noKey = { ...env };
      delete noKey["ANTHROPIC_API_KEY"];
      const audit = (...args: string[]) =>
        agent(["memory", ...args], { cwd: repo, env: noKey, timeoutMs: 60_000 });
      const id = draft!.replace(/\.md$/, "");
      const listed = await audit("list");
      expect(listed.stderr).toContain("1 pending: agent memory approve <id>");
      expect(listed.code).toBe(0);
      const lines = listed.stdout.trim().split("\n");
      expect(lines[0]).toBe(
        `memory/${id}  [pending, feedback, project]  ${readFileSync(join(dir, draft!), "utf8").match(/^title: (.*)$/m)![1]}`,
      );
      expect(lines.some((l) => l.startsWith("memory/release-day  [in use, project, project]"))).toBe(true);
      const pendingOnly = await audit("list", "--pending", "--json");
      expect(JSON.parse(pendingOnly.stdout).map((r: { id: string }) => r.id)).toEqual([id]);
      const shown = await audit("show", "memory/release-day");
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain("recorded by memory.remember in session ");
      expect(shown.stdout).toContain("links: deploy-checklist");
      expect(shown.stdout).toContain(
        `Releases ship on Thursdays (${store}); see [[Deploy Checklist]] (deploy-checklist).`,
      );
      const approved = await audit("approve", id);
      expect(approved.stdout).toBe(`Approved memory "${id}" (memory): recall now uses it.\n`);
      expect(approved.code).toBe(0);
      expect(readFileSync(join(dir, draft!), "utf8")).toContain("status: canonical");
      // Approving twice, rejecting a record in use, or naming no record: clear errors.
      const again = await audit("approve", id);
      expect([again.code, again.stderr]).toEqual([
        2,
        `agent: "${id}" is not a pending draft: it is already in use\n`,
      ]);
      const reject = await audit("reject", "release-day");
      expect(reject.stderr).toContain(
        '"release-day" is not a pending draft; to delete a record in use, forget it',
      );
      const missing = await audit("show", "no-such-record");
      expect([missing.code, missing.stderr]).toEqual([1, 'agent: no memory record "no-such-record"\n']);
      fake.push({ kind: "text", text: "English." });
      expect((await run("What are the commit rules?")).code).toBe(0);
      expect(sent(fake.requests.length - 1)).toContain("write commit messages in English");
    },
    E2E_TIMEOUT_MS,
  );

  it(
    "forgets it when asked: the next session no longer sees it",
    async () => {
      fake.push(
        { kind: "tool_calls", text: "", calls: [{ name: "memory__forget", args: { id: "release-day" } }] },
        { kind: "text", text: "Forgotten." },
      );
      expect((await run("Forget the release day.")).code).toBe(0);
      expect(memoryEvents()).toEqual([
        ["memory_delete", "release-day", "memory.forget", ["deploy-checklist"]],
      ]);
      // A draft the operator rejects is gone; forget deletes a record in use.
      writeFileSync(
        join(repo, ".agent", "memory", "tabs.md"),
        "---\ntitle: Tabs\ntype: feedback\nstatus: pending\n---\n\nIndent with tabs.\n",
      );
      expect((await memory("reject", "tabs")).stdout).toBe(
        'Rejected the memory draft "tabs" (memory): it is gone.\n',
      );
      expect(existsSync(join(repo, ".agent", "memory", "tabs.md"))).toBe(false);
      expect((await memory("list", "--pending")).stdout).toBe("No memory drafts await approval.\n");
      fake.push({ kind: "text", text: "I don't know." });
      expect((await run("Which day do releases ship?")).code).toBe(0);
      expect(sent(fake.requests.length - 1)).not.toContain("Releases ship on Thursdays");
    },
    E2E_TIMEOUT_MS,
  );
});

describe("memory and secrets", () => {
  beforeAll(() => writeFileSync(join(repo, "agent.hcl"), HCL("sqlite")));

  it(
    "refuses to remember the value of a secret environment variable, and stores nothing of it",
    async () => {
      fake.push(
        {
          kind: "tool_calls",
          text: "",
          calls: [
            {
              name: "memory__remember",
              args: { type: "reference", title: "Vendor key", content: `The key is ${CANARY}.` },
            },
          ],
        },
        { kind: "text", text: "Could not save it." },
      );
      const r = await run("Remember the vendor key.", ["--output-format", "stream-json"]);
      expect(r.stderr).toBe("");
      const results = records(r.stdout).filter((rec) => rec["type"] === "tool_result");
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({
        denied: true,
        tool_name: "remember",
        error: { category: "permission_denied" },
      });
      expect(JSON.stringify(results[0])).toContain("memory never stores secrets");
      expect(JSON.stringify(results[0])).not.toContain(CANARY);
      const stores =
        dump(join(repo, ".agent", "memory")) + dump(join(sb.home, ".local", "share", "agent", "memory"));
      expect(stores).not.toContain(CANARY);
      fake.push({ kind: "text", text: "ok" });
      await run("anything");
      expect(sent(fake.requests.length - 1)).not.toContain(CANARY);
    },
    E2E_TIMEOUT_MS,
  );
});

describe("agent validate", () => {
  it(
    "rejects what the memory and workspace-context providers' Configure would, at the attribute",
    async () => {
      const bad = HCL("redis").replace("token_budget = 1200", "token_budget = -3\n  tree_max_depth = 0");
      writeFileSync(join(repo, "agent.hcl"), bad);
      const lineOf = (needle: string) => bad.split("\n").findIndex((l) => l.includes(needle)) + 1;
      const r = await agent(["validate"], { cwd: repo, env });
      expect(r.code).not.toBe(0);
      const out = r.stdout + r.stderr;
      expect(out).toContain('store must be "markdown" or "sqlite", not "redis"');
      expect(out).toContain("token_budget must be a whole number of tokens");
      expect(out).toContain("tree_max_depth must be a whole number from 1 to 20");
      expect(out).toMatch(new RegExp(`agent\\.hcl:${lineOf('store = "redis"')}:\\d+: error`));
      writeFileSync(join(repo, "agent.hcl"), HCL("sqlite"));
      const ok = await agent(["validate"], { cwd: repo, env });
      expect(ok.stdout + ok.stderr).not.toContain("error");
      expect(ok.code).toBe(0);
    },
    E2E_TIMEOUT_MS,
  );
});
