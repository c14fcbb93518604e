// Issue 31, point 8's small defects, end to end with the real `agent`, the first-party
// plugins and a scripted model on the loopback fake vendor:
// - a doom loop of denied calls exits 4 (a denial), not 1;
// - retry-after: 3600 is cut to settings.max_retry_delay_ms, and the cut is reported;
// - a 10 MB write_file input does not end the session (routing_exhausted): what later
//   requests carry of it is elided, the file gets all of it, and the session goes on;
// - a 10 MB single-delta answer reaches a slow stream-json reader whole, every record one
//   JSON line, and the run exits 0 only then;
// - a stdout that fails (the reader closes it, EPIPE; a full disk, ENOSPC) exits non-zero;
// - an attempt the kernel cut (a stall) is in the cost ledger, marked as estimated.
import { spawn } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import { MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_BIN, agent, records, type Sandbox, sandbox } from "./helpers.ts";

let sb: Sandbox;
let fake: FakeVendor;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  sb = sandbox();
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: "sk-ant-small-defects", FAKE_ANTHROPIC_URL: fake.url };
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

/** A copy of the fixture project, with `settings` lines added. */
function project(name: string, settings = ""): string {
  const dir = sb.repo(name);
  if (settings) {
    const hcl = readFileSync(join(dir, "agent.hcl"), "utf8");
    writeFileSync(join(dir, "agent.hcl"), `${hcl}\nsettings {\n${settings}\n}\n`);
  }
  return dir;
}

const bash = (command: string) => ({ name: "exec__bash", args: { command } });

describe("a doom loop of denied calls", () => {
  it("exits 4, as every denial-ended run does", async () => {
    const dir = project("doom");
    // The same denied call three times: the doom-loop detector ends the run (one final turn).
    const call = { kind: "tool_calls" as const, calls: [bash("touch pwned")] };
    fake.push(call, call, call, { kind: "text", text: "giving up" });
    const r = await agent(["run", "-p", "loop", "--output-format", "stream-json", "--headless-ask", "deny"], {
      cwd: dir,
      env: { ...env, FIXTURE_ROOT: dir },
    });
    const result = records(r.stdout).find((x) => x["type"] === "result")!;
    expect(String(result["detail"])).toMatch(/^doom_loop: /);
    expect(result["permission_denials"]).toHaveLength(3);
    expect(result["exit_code"]).toBe(4);
    expect(r.code, r.stderr).toBe(4);
  });
});

/** A 10 MB answer in one text delta. */
const HUGE = "x".repeat(10 * 1024 * 1024);

/** Resolves once a session's writer lock was taken and released again (the kernel closed it). */
async function kernelClosed(): Promise<void> {
  const dir = join(String(env["XDG_STATE_HOME"]), "agent", "sessions");
  const owners = () => {
    try {
      return readdirSync(dir).filter((f) => f.endsWith(".owner")).length;
    } catch {
      return 0;
    }
  };
  let seen = false;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const n = owners();
    if (n > 0) seen = true;
    else if (seen) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs `agent run -p <prompt> --output-format stream-json` with stdout going where `stdout`
 * says: a pipe read only once the run is over, a pipe closed after the first line, or a file
 * descriptor.
 */
function runStreamJson(
  dir: string,
  stdout: { pauseUntilDone: true } | { closeAfterFirstLine: true } | { fd: number },
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(AGENT_BIN, ["run", "-p", "answer", "--output-format", "stream-json"], {
      cwd: dir,
      env: { ...env, FIXTURE_ROOT: dir, ...extraEnv },
      stdio: ["ignore", "fd" in stdout ? stdout.fd : "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stderr!.setEncoding("utf8").on("data", (d: string) => {
      err += d;
    });
    if (child.stdout) {
      const s = child.stdout.setEncoding("utf8");
      if ("pauseUntilDone" in stdout) {
        // Nothing is read until the agent's kernel has closed the session (its writer lock's
        // owner file is gone) and the 3 s exit grace after the command has passed.
        s.pause();
        void kernelClosed().then(() =>
          setTimeout(() => {
            s.on("data", (d: string) => {
              out += d;
            });
            s.resume();
          }, 3_500),
        );
      } else if ("closeAfterFirstLine" in stdout) {
        s.on("data", (d: string) => {
          out += d;
          if (out.includes("\n")) s.destroy();
        });
      }
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`agent timed out\nstderr:\n${err}`));
    }, 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: out, stderr: err });
    });
  });
}

describe("stream-json with a 10 MB single-delta answer", () => {
  it("reaches a slow reader whole, one JSON line per record, and exits 0", async () => {
    const dir = project("huge-answer");
    fake.push({ kind: "text", text: HUGE, chunks: 1 });
    // The reader starts reading after the agent is done and past its 3 s exit grace.
    const r = await runStreamJson(dir, { pauseUntilDone: true });
    expect(r.stdout.endsWith("\n"), `stdout cut after ${r.stdout.length} bytes`).toBe(true);
    const lines = r.stdout.split("\n").filter(Boolean);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const text = parsed
      .filter((x) => x["type"] === "delta")
      .map((x) => String(x["text"]))
      .join("");
    expect(text).toHaveLength(HUGE.length);
    expect(parsed.at(-1)).toMatchObject({ type: "result", exit_code: 0 });
    expect(r.stderr).not.toContain("internal error");
    expect(r.code).toBe(0);
  });

  it("exits 1 when the reader closes the pipe (EPIPE), and the session is interrupted", async () => {
    const dir = project("closed-reader");
    fake.push({ kind: "text", text: HUGE, chunks: 1 });
    const r = await runStreamJson(dir, { closeAfterFirstLine: true });
    expect(r.stderr).toMatch(
      /the output could not be written \(EPIPE: the reader closed it\); session \w+ was interrupted/,
    );
    expect(r.code).toBe(1);
  });

  it("exits 1 when the output cannot be written (ENOSPC on /dev/full), with no stack trace", async () => {
    const dir = project("full-disk");
    // A vendor of its own: the first record's write fails, so the run may end before it asks
    // the model, and the unused answer must not be left to the next test.
    const own = await startFakeVendor({ vendor: "anthropic", script: [] });
    own.push({ kind: "text", text: "short", chunks: 1 });
    const fd = openSync("/dev/full", "w");
    try {
      const r = await runStreamJson(dir, { fd }, { FAKE_ANTHROPIC_URL: own.url });
      expect(r.stderr).toContain("the output could not be written (ENOSPC: no space left on the device)");
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(1);
    } finally {
      closeSync(fd);
      await own.close();
    }
  });
});

describe("a vendor's retry-after of an hour", () => {
  it("is cut to settings.max_retry_delay_ms, retried, and the cut is reported", async () => {
    // A vendor of its own: a run that waits the hour must not leave its answer to the next test.
    const own = await startFakeVendor({ vendor: "anthropic", script: [] });
    try {
      const dir = project("retry-after", "  max_retry_delay_ms = 1000");
      own.push(scenarios.rateLimited(3600), { kind: "text", text: "after the cut" });
      const started = Date.now();
      const r = await agent(["run", "-p", "go", "--output-format", "stream-json"], {
        cwd: dir,
        env: { ...env, FIXTURE_ROOT: dir, FAKE_ANTHROPIC_URL: own.url },
        timeoutMs: 20_000,
      });
      expect(r.code, r.stderr).toBe(0);
      expect(Date.now() - started).toBeLessThan(20_000);
      const recs = records(r.stdout);
      expect(recs.find((x) => x["type"] === "result")).toMatchObject({ result: "after the cut" });
      const notices = recs.filter((x) => x["type"] === "notice").map((x) => String(x["text"]));
      expect(notices.join("\n")).toContain("the vendor asked to wait 3600 s, waiting at most 1 s");
    } finally {
      await own.close();
    }
  });
});

interface Vendor {
  readonly provider: string;
  readonly fake: "anthropic" | "openai-responses" | "gemini" | "xai" | "ollama";
  readonly model: string;
  readonly block: (url: string) => string;
}

const KEYED = (base: string) => `  api_key  = env("VENDOR_KEY")\n  base_url = "${base}"\n`;
const VENDORS: Vendor[] = [
  { provider: "anthropic", fake: "anthropic", model: "claude-haiku-4-5-20251001", block: (u) => KEYED(u) },
  { provider: "openai", fake: "openai-responses", model: "gpt-5.4-mini", block: (u) => KEYED(`${u}/v1`) },
  { provider: "google", fake: "gemini", model: "gemini-2.5-flash-lite", block: (u) => KEYED(u) },
  { provider: "xai", fake: "xai", model: "grok-4.3", block: (u) => KEYED(`${u}/v1`) },
  {
    provider: "openai-compatible",
    fake: "ollama",
    model: "local-model",
    block: (u) => `  base_url = "${u}/v1"\n  dialect  = "ollama"\n  models   = ["local-model"]\n`,
  },
];

/** A project on `v` whose model may write files. */
function vendorProject(v: Vendor, url: string): string {
  const dir = sb.dir(`huge-input-${v.provider}`);
  writeFileSync(
    join(dir, "agent.hcl"),
    `required_providers {
  ${v.provider} = { source = "pluggableharness/${v.provider}", version = ">= 0.1.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.1.0" }
}

provider "${v.provider}" {
${v.block(url)}}

provider "filesystem" {
  roots = ["${dir}"]
}

policy "allow_file_edits" {
  match  = { provider = "filesystem" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "${v.provider}"
      id       = "${v.model}"
    }
  }
  tools = ["filesystem.*"]
}
`,
  );
  return dir;
}

describe("a huge write_file input", () => {
  // The defect: a 10 MB write_file ended the session with routing_exhausted, the next
  // request carrying all of it. Every vendor's request is built from the conversation, so
  // each gets the shortened input; Anthropic's run writes 10 MB and then goes on in a
  // resumed session, the others 300 KB (over the 64 KiB budget, and quicker).
  for (const v of VENDORS) {
    it(`${v.provider}: the file gets every byte, later requests carry a shortened input, the session goes on`, async () => {
      const size = v.provider === "anthropic" ? 10 * 1024 * 1024 : 300 * 1024;
      const own = v.provider === "anthropic" ? fake : await startFakeVendor({ vendor: v.fake, script: [] });
      try {
        const dir = vendorProject(v, own.url);
        const runEnv = { ...env, VENDOR_KEY: "sk-huge-input", AGENT_NO_PRELAUNCH: "1" };
        const before = own.requests.length;
        own.push(
          {
            kind: "tool_calls",
            calls: [{ name: "filesystem__write_file", args: { path: "big.txt", content: "b".repeat(size) } }],
          },
          { kind: "text", text: "written" },
        );
        const r = await agent(["run", "-p", "write it", "--output-format", "json"], {
          cwd: dir,
          env: runEnv,
        });
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(statSync(join(dir, "big.txt")).size).toBe(size);
        const after = own.requests.slice(before);
        expect(after).toHaveLength(2);
        expect(after[1]!.bodyText.length).toBeLessThan(64 * 1024);
        expect(after[1]!.bodyText).toContain(`the tool received all ${size} bytes`);
        if (v.provider !== "anthropic") return;
        // A resumed session rebuilds the same shortened input from the file.
        own.push({ kind: "text", text: "still here" });
        const again = await agent(["run", "-c", "-p", "and now?", "--output-format", "json"], {
          cwd: dir,
          env: runEnv,
        });
        expect(again.code, again.stderr).toBe(0);
        const third = own.requests.at(-1)!;
        expect(third.bodyText.length).toBeLessThan(64 * 1024);
        expect(third.bodyText).toContain(`the tool received all ${size} bytes`);
      } finally {
        if (own !== fake) await own.close();
      }
    }, 60_000);
  }
});

describe("a model attempt the kernel cut", () => {
  it("is in the cost ledger, its usage estimated, beside the retry that answered", async () => {
    const dir = project(
      "stalled-attempt",
      "  stream_idle_timeout_ms = 1000\n  retry {\n    base_delay_ms  = 50\n    backoff_factor = 2\n    max_retries    = 2\n  }",
    );
    // Anthropic reports usage only at the end: the stalled attempt reported none.
    fake.push(scenarios.stall({ afterFrames: 2 }), { kind: "text", text: "recovered" });
    const r = await agent(["run", "-p", "go", "--output-format", "json"], {
      cwd: dir,
      env: { ...env, FIXTURE_ROOT: dir },
    });
    expect(r.code, r.stderr).toBe(0);
    const id = String((JSON.parse(r.stdout) as Record<string, unknown>)["session_id"]);
    const reader = openSessionReader(id, { dir: join(String(env["XDG_STATE_HOME"]), "agent", "sessions") });
    try {
      const ledger = reader.costLedger();
      expect(ledger).toHaveLength(2);
      expect(ledger[0]!.costUsd).toBeGreaterThan(0);
      const attempts = reader
        .readEvents()
        .filter((e) => e.kind === EventKind.MESSAGE)
        .map((e) => fromBinary(MessageEventSchema, e.payload))
        .filter((m) => m.syntheticReason.startsWith("attempt_failed:"));
      expect(attempts.map((m) => [m.syntheticReason, m.usage.map((u) => u.estimated)])).toEqual([
        ["attempt_failed:overloaded", [true]],
      ]);
    } finally {
      reader.close();
    }
  });
});
