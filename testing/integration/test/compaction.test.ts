// Compaction, never a dead end (issue 19, point 1), through the real kernel, the real
// first-party model providers and the compactor provider in worker threads (the default
// isolation of first-party plugins), against validating fake vendors:
// - a 300-turn tool loop in a 16k window completes with several compactions, every request
//   under the window, and each vendor's validator accepting every compacted history (tool
//   pairs intact; Anthropic thinking signatures and Gemini 3 thought signatures carried);
// - a context_length_exceeded answer is followed by a compaction and one retry that succeeds;
// - the compacted session resumes from the compacted history, byte for byte;
// - no secret of the environment reaches the summary request or the session file.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  type FakeVendor,
  type RecordedRequest,
  startFakeVendor,
  type VendorId,
} from "@pluggableharness/fake-vendors";
import { createKernel, type Kernel, type SessionHandle } from "@pluggableharness/kernel";
import { MessageSchema } from "@pluggableharness/protocol/content";
import { CompactionEventSchema, MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const WINDOW = 16_000;
const TURNS = Number(process.env["COMPACTION_TURNS"] ?? 300);
const CANARY = "sk-canary-5f0c1e9a7d3b";

interface VendorCase {
  readonly name: string;
  readonly fake: VendorId;
  readonly model: string;
  readonly block: (url: string) => string;
  /** Scripted tool-call turns carry signed thinking (Anthropic). */
  readonly thinking?: boolean;
}

const ALL_CASES: readonly VendorCase[] = [
  {
    name: "anthropic",
    fake: "anthropic",
    model: "claude-sonnet-5",
    thinking: true,
    block: (url) => `api_key = env("VENDOR_KEY")\n  base_url = "${url}"`,
  },
  {
    name: "openai",
    fake: "openai-responses",
    model: "gpt-5.6-sol",
    block: (url) => `api_key = env("VENDOR_KEY")\n  base_url = "${url}/v1"`,
  },
  {
    name: "google",
    fake: "gemini",
    model: "gemini-3.8-flash",
    block: (url) => `api_key = env("VENDOR_KEY")\n  base_url = "${url}"`,
  },
  {
    name: "xai",
    fake: "xai",
    model: "grok-4.3",
    block: (url) => `api_key = env("VENDOR_KEY")\n  base_url = "${url}/v1"`,
  },
  {
    name: "openai-compatible",
    fake: "openai-chat",
    model: "local-model",
    block: (url) =>
      `api_key = env("VENDOR_KEY")\n  base_url = "${url}/v1"\n  model = "local-model"\n  context_window = 32768\n  free = true`,
  },
];

/** COMPACTION_VENDORS=anthropic,google runs only those (while debugging). */
const only = process.env["COMPACTION_VENDORS"]?.split(",");
const CASES = only ? ALL_CASES.filter((c) => only.includes(c.name)) : ALL_CASES;

/** A compactor's summary request: its transcript message (instructions may sit in a cache). */
const isSummary = (r: RecordedRequest) =>
  r.bodyText.includes("The conversation so far:") ||
  r.bodyText.includes("Summary of the conversation before this part:");

/** The provider's local name in agent.hcl. */
const local = (c: VendorCase) => (c.name === "openai-compatible" ? "compat" : c.name);

function hcl(c: VendorCase, url: string, project: string, compaction = `context_window = ${WINDOW}`): string {
  return `required_providers {
  ${local(c)} = { source = "pluggableharness/${c.name}", version = ">= 0.0.0" }
  filesystem = { source = "pluggableharness/filesystem", version = ">= 0.0.0" }
  compactor  = { source = "pluggableharness/compactor", version = ">= 0.0.0" }
}

provider "${local(c)}" {
  ${c.block(url)}
}

provider "filesystem" {
  roots = ["${project}"]
}

policy "reads" {
  match  = { kind = "data_source" }
  action = "allow"
}

agent_profile "default" {
  model {
    primary {
      provider = "${local(c)}"
      id       = "${c.model}"
    }
  }
  tools     = ["filesystem.read_file"]
  max_turns = ${TURNS + 50}
}

settings {
  compaction {
    ${compaction}
  }
  retry {
    base_delay_ms  = 0
    backoff_factor = 1
    max_retries    = 0
  }
}
`;
}

/** One line of notes.txt per turn's read: ~1.7 KB, so the window fills every ~20 turns. */
const NOTES = Array.from(
  { length: 24 },
  (_, i) => `note ${i}: ${"the quick brown fox jumps ".repeat(2)}`,
).join("\n");

interface Run {
  fake: FakeVendor;
  kernel: Kernel;
  project: string;
  stateDir: string;
  sessionId: string;
  status: SessionStatus;
  dirs: string[];
  logs: string[];
  handle: SessionHandle;
}

async function runSession(
  c: VendorCase,
  script: (r: RecordedRequest, mainTurn: number) => Record<string, unknown>,
  prompt: string,
  compaction?: string,
): Promise<Run> {
  const project = mkdtempSync(join(tmpdir(), `ph-compact-${c.name}-`));
  const stateDir = join(project, ".state");
  // Six files read in turn: the same call repeated in a row would trip the doom-loop guard.
  for (let i = 0; i < 6; i++)
    writeFileSync(join(project, `notes-${i}.txt`), `${NOTES}\nsecret in a file: ${CANARY}\n`);
  let main = 0;
  const gaps = new Map<string, number>();
  let prevT = performance.now();
  let prevName = "start";
  const logs: string[] = [];
  const fake = await startFakeVendor({
    vendor: c.fake,
    validate: true,
    ...(c.fake === "openai-chat" ? {} : {}),
    script: (r) => {
      if (isSummary(r))
        return { kind: "text", text: `Summary: notes.txt was read ${main} times; keep reading.` };
      return script(r, main++) as never;
    },
  });
  writeFileSync(join(project, "agent.hcl"), hcl(c, fake.url, project, compaction));
  const kernel = await createKernel({
    projectDir: project,
    installationRoot: ROOT,
    stateDir,
    env: { VENDOR_KEY: CANARY, HOME: project, PATH: process.env["PATH"] ?? "" },
    globalConfig: false,
    durability: "normal",
    logLevel: (process.env["COMPACTION_LOG"] ?? "warn") as "warn",
    logSink: (r) => logs.push(`${r.level} ${r.message} ${JSON.stringify(r.fields ?? {})}`),
    tokenCountCache: false,
    ...(process.env["COMPACTION_TRACE"]
      ? {
          trace: (e: { name: string; step?: string }) => {
            const t = performance.now();
            const key = `${prevName}->${e.name}${e.step ? `:${e.step}` : ""}`;
            gaps.set(key, (gaps.get(key) ?? 0) + (t - prevT));
            prevT = t;
            prevName = `${e.name}${e.step ? `:${e.step}` : ""}`;
          },
        }
      : {}),
  });
  const session = await kernel.startSession();
  session.send(prompt);
  const status = await session.idle();
  if (process.env["COMPACTION_TRACE"])
    console.log(
      [...gaps.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([k, v]) => `${k} ${v.toFixed(0)}ms`)
        .join("\n"),
    );
  return {
    fake,
    kernel,
    project,
    stateDir,
    sessionId: session.id,
    status,
    dirs: [project],
    logs,
    handle: session,
  };
}

function toolTurn(c: VendorCase, n: number): Record<string, unknown> {
  const call = {
    type: "tool_call",
    name: "filesystem__read_file",
    args: { path: `notes-${n % 6}.txt` },
    id: `call_${n}`,
    signature: `sig-call-${n}`,
  };
  const blocks = c.thinking
    ? [{ type: "thinking", text: `I read the notes again (${n}).`, signature: `sig-think-${n}` }, call]
    : [call];
  return { kind: "turn", blocks };
}

/** What went wrong, for a failed assertion: the log and the failed turns' records. */
function why(run: Run): string {
  const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
  try {
    const failed = reader
      .readEvents({ kinds: [EventKind.MESSAGE] })
      .map((e) => fromBinary(MessageEventSchema, e.payload))
      .filter((m) => m.syntheticReason === "turn_failed")
      .map((m) => JSON.stringify(m.message?.content));
    return [`${run.fake.requests.length} requests`, ...failed, ...run.logs].join("\n");
  } finally {
    reader.close();
  }
}

async function close(run: Run): Promise<void> {
  await run.kernel.shutdown();
  await run.fake.close();
  for (const d of run.dirs) rmSync(d, { recursive: true, force: true });
}

describe.each(CASES)("compaction against the $name fake", (c) => {
  let run: Run;
  beforeAll(async () => {
    run = await runSession(
      c,
      (_r, n) => (n < TURNS - 1 ? toolTurn(c, n) : { kind: "text", text: "All notes read." }),
      "Read notes.txt again and again until I say stop.",
    );
  }, 240_000);
  afterAll(async () => {
    if (run) await close(run);
  });

  it(`a ${TURNS}-turn session in a ${WINDOW}-token window completes with several compactions`, () => {
    expect(run.status, why(run)).toBe(SessionStatus.COMPLETED);
    const main = run.fake.requests.filter((r) => !isSummary(r));
    const summaries = run.fake.requests.filter(isSummary);
    if (process.env["COMPACTION_LOG"])
      console.log(
        why(run),
        run.fake.requests
          .map((r) => `${r.seq} ${r.endpoint} ${isSummary(r)} ${r.bodyText.length}`)
          .join("\n"),
      );
    expect(main).toHaveLength(TURNS);
    expect(summaries.length).toBeGreaterThanOrEqual(3);
    // The validators accepted every request: no vendor error anywhere.
    expect(run.fake.requests.filter((r) => r.rejected !== undefined).map((r) => r.rejected)).toEqual([]);
    // Every request stays under the window (the whole body, JSON syntax included, / 4).
    const biggest = Math.max(...run.fake.requests.map((r) => Math.ceil(Buffer.byteLength(r.bodyText) / 4)));
    expect(biggest).toBeLessThan(WINDOW);
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    try {
      const compactions = reader.readEvents({ kinds: [EventKind.COMPACTION] });
      // Several compactions; a long older part is summarised in pieces (one call each).
      expect(compactions.length).toBeGreaterThanOrEqual(TURNS >= 300 ? 5 : 2);
      expect(compactions.length).toBeLessThanOrEqual(summaries.length);
      // The summary calls are in the cost ledger, each against a compaction_summary message.
      const summaryEvents = reader
        .readEvents({ kinds: [EventKind.MESSAGE] })
        .filter((e) => fromBinary(MessageEventSchema, e.payload).syntheticReason === "compaction_summary");
      expect(summaryEvents).toHaveLength(summaries.length);
      const ledgerEvents = new Set(reader.costLedger().map((row) => row.eventSequence));
      for (const e of summaryEvents) expect(ledgerEvents.has(e.sequence)).toBe(true);
    } finally {
      reader.close();
    }
  });

  if (c.thinking) {
    it("keeps the signed thinking of every kept assistant message with its tool results", () => {
      const after = run.fake.requests.filter((r) => !isSummary(r)).at(-1)!;
      const messages = (after.json as { messages: Array<{ role: string; content: unknown }> }).messages;
      const assistants = messages.filter((m) => m.role === "assistant");
      expect(assistants.length).toBeGreaterThan(0);
      for (const m of assistants) {
        const blocks = m.content as Array<{ type: string; signature?: string }>;
        const thinking = blocks.find((b) => b.type === "thinking");
        expect(thinking?.signature).toMatch(/^sig-think-\d+$/);
      }
      // Compacted: the first message is the summary, far fewer messages than turns.
      expect(JSON.stringify(messages[0])).toContain("[Compacted conversation]");
      expect(messages.length).toBeLessThan(100);
    });
  }
});

describe("overflow, resume and secrets", () => {
  const c = ALL_CASES[0]!;
  let run: Run;
  let refusedSeq = -1;
  beforeAll(async () => {
    let overflowed = false;
    run = await runSession(
      c,
      (r, n) => {
        if (n === 6 && !overflowed) {
          overflowed = true;
          refusedSeq = r.seq;
          return {
            kind: "error",
            status: 400,
            errorType: "invalid_request_error",
            message: "prompt is too long: 200512 tokens > 200000 maximum",
          };
        }
        return n < 9 ? toolTurn(c, n) : { kind: "text", text: "Done after the overflow." };
      },
      "Read notes.txt a few times.",
    );
  }, 120_000);
  afterAll(async () => {
    if (run) await close(run);
  });

  it("context_length_exceeded once: compaction, one retry, success", () => {
    expect(run.status).toBe(SessionStatus.COMPLETED);
    expect(run.fake.requests.filter((r) => r.rejected !== undefined)).toEqual([]);
    const rejected = run.fake.requests.filter((r) => r.seq === refusedSeq);
    expect(rejected).toHaveLength(1);
    const i = run.fake.requests.indexOf(rejected[0]!);
    // Next came the summary, then the same turn again, shorter.
    expect(isSummary(run.fake.requests[i + 1]!)).toBe(true);
    const retry = run.fake.requests[i + 2]!;
    expect(isSummary(retry)).toBe(false);
    expect(retry.bodyText.length).toBeLessThan(rejected[0]!.bodyText.length);
    expect(retry.bodyText).toContain("[Compacted conversation]");
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    try {
      const [e] = reader.readEvents({ kinds: [EventKind.COMPACTION] });
      expect(fromBinary(CompactionEventSchema, e!.payload).reason).toBe(2); // OVERFLOW
    } finally {
      reader.close();
    }
  });

  it("no secret of the environment reaches the summary request or the session file", () => {
    const summaries = run.fake.requests.filter(isSummary);
    expect(summaries.length).toBeGreaterThan(0);
    for (const s of summaries) expect(s.bodyText).not.toContain(CANARY);
    // The model read the file that holds it; the compaction records do not repeat it.
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    try {
      const records = [
        ...reader.readEvents({ kinds: [EventKind.COMPACTION] }),
        ...reader
          .readEvents({ kinds: [EventKind.MESSAGE] })
          .filter((e) => fromBinary(MessageEventSchema, e.payload).syntheticReason === "compaction_summary"),
      ];
      expect(records.length).toBeGreaterThanOrEqual(2);
      for (const e of records) expect(Buffer.from(e.payload).includes(CANARY)).toBe(false);
      // ...while the tool result that carried it is there (the canary can be found).
      const all = reader.readEvents({ kinds: [EventKind.TOOL_RESULT] });
      expect(all.some((e) => Buffer.from(e.payload).includes(CANARY))).toBe(true);
    } finally {
      reader.close();
    }
  });

  it("--resume continues from the compacted history, byte for byte", async () => {
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    let expected: Uint8Array[];
    try {
      const [last] = reader.readEvents({ kinds: [EventKind.COMPACTION] }).slice(-1);
      const compacted = fromBinary(CompactionEventSchema, last!.payload).history;
      // The compacted history, then every conversation message written after it.
      const later = reader
        .readEvents({ kinds: [EventKind.MESSAGE], afterSequence: last!.sequence })
        .map((e) => fromBinary(MessageEventSchema, e.payload))
        .filter((m) => m.syntheticReason === "")
        .map((m) => m.message!);
      expected = [...compacted, ...later].map((m) => toBinary(MessageSchema, m));
    } finally {
      reader.close();
    }
    await run.kernel.shutdown();
    run.kernel = await createKernel({
      projectDir: run.project,
      installationRoot: ROOT,
      stateDir: run.stateDir,
      env: { VENDOR_KEY: CANARY, HOME: run.project, PATH: process.env["PATH"] ?? "" },
      globalConfig: false,
      durability: "normal",
      logLevel: (process.env["COMPACTION_LOG"] ?? "warn") as "warn",
      logSink: () => {},
      tokenCountCache: false,
    });
    const before = run.fake.requests.length;
    run.fake.push({ kind: "text", text: "Resumed." });
    const session = await run.kernel.resumeSession(run.sessionId);
    session.send("Go on.");
    expect(await session.idle()).toBe(SessionStatus.COMPLETED);
    const sent = run.fake.requests[before]!.json as { messages: unknown[] };
    // The request after the resume starts with exactly the compacted history the live
    // session last sent (cache markers aside, which move with the conversation's end).
    const strip = (v: unknown) =>
      JSON.parse(JSON.stringify(v, (k, x) => (k === "cache_control" ? undefined : x)));
    const lastLive = run.fake.requests
      .slice(0, before)
      .filter((r) => !isSummary(r))
      .at(-1)!;
    const live = (lastLive.json as { messages: unknown[] }).messages;
    expect(strip(sent.messages.slice(0, live.length))).toEqual(strip(live));
    expect(sent.messages.length).toBe(expected.length + 1);
    expect(JSON.stringify(sent.messages[0])).toContain("[Compacted conversation]");
  });
});

describe("a history larger than every window", () => {
  // The threshold is off and the model's own window is small (the provider declares 8k):
  // once the history outgrows it, routing finds no candidate by size. That used to fail
  // the turn (routing_exhausted); now the first capable candidate is compacted for.
  const c = ALL_CASES.find((x) => x.name === "openai-compatible")!;
  const small: VendorCase = {
    ...c,
    block: (url) => c.block(url).replace("context_window = 32768", "context_window = 8192"),
  };
  let run: Run;
  beforeAll(async () => {
    run = await runSession(
      small,
      (_r, n) => (n < 29 ? toolTurn(small, n) : { kind: "text", text: "Read them all." }),
      "Read the notes files in turn.",
      "enabled = false",
    );
  }, 120_000);
  afterAll(async () => {
    if (run) await close(run);
  });

  it("is compacted (reason overflow) instead of failing the turn", () => {
    expect(run.status, why(run)).toBe(SessionStatus.COMPLETED);
    expect(run.fake.requests.filter((r) => !isSummary(r))).toHaveLength(30);
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    try {
      const reasons = reader
        .readEvents({ kinds: [EventKind.COMPACTION] })
        .map((e) => fromBinary(CompactionEventSchema, e.payload).reason);
      expect(reasons.length).toBeGreaterThan(0);
      expect(new Set(reasons)).toEqual(new Set([2])); // OVERFLOW only: the threshold is off
    } finally {
      reader.close();
    }
  });
});

describe("compact now (the kernel operation /compact calls)", () => {
  const c = ALL_CASES[0]!;
  let run: Run;
  beforeAll(async () => {
    run = await runSession(
      c,
      (_r, n) => (n < 5 ? toolTurn(c, n) : { kind: "text", text: "Read five times." }),
      "Read the notes five times.",
      "context_window = 200000",
    );
  }, 120_000);
  afterAll(async () => {
    if (run) await close(run);
  });

  it("compacts on request, with the operator's guidance, and no model turn", async () => {
    expect(run.fake.requests.filter(isSummary)).toEqual([]);
    const before = run.fake.requests.length;
    expect(run.handle.compact("Keep the file names.")).toBeUndefined();
    expect(await run.handle.idle()).toBe(SessionStatus.COMPLETED);
    const sent = run.fake.requests.slice(before);
    expect(sent).toHaveLength(1);
    expect(isSummary(sent[0]!)).toBe(true);
    expect(sent[0]!.bodyText).toContain("Keep the file names.");
    const reader = openSessionReader(run.sessionId, { dir: run.stateDir });
    try {
      const [e] = reader.readEvents({ kinds: [EventKind.COMPACTION] });
      const ev = fromBinary(CompactionEventSchema, e!.payload);
      expect(ev.reason).toBe(3); // OPERATOR
      expect(ev.messagesAfter).toBeLessThan(ev.messagesBefore);
    } finally {
      reader.close();
    }
    // The next message goes out with the compacted history.
    run.fake.push({ kind: "text", text: "ok" });
    run.handle.send("Anything else?");
    await run.handle.idle();
    expect(run.fake.requests.at(-1)!.bodyText).toContain("[Compacted conversation]");
  });
});
