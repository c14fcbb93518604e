// A kernel killed (SIGKILL, a real `agent` process) at each step of a turn leaves a session
// that resumes against every first-party model provider: the conversation it sends passes
// each fake vendor's request validator, every open call is answered exactly once, and the
// audit trail says what may have applied. (The long loop, with random kill points and the
// resume run as a process too, is `npm run faults`.)
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { createKernel } from "@pluggableharness/kernel";
import { ApplyEventSchema, MessageEventSchema } from "@pluggableharness/protocol/event";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { ApplyOutcome } from "@pluggableharness/protocol/plan";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { openSessionReader } from "@pluggableharness/state";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  copySession,
  KILL_POINTS,
  type KilledRun,
  killScript,
  project,
  REPO_ROOT,
  runAndKill,
  type Sandbox,
  sandbox,
  VENDORS,
  validatingFake,
} from "../src/kill-resume.ts";

let sb: Sandbox;
const killed = new Map<string, KilledRun>();

beforeAll(async () => {
  sb = sandbox();
  // One killed session per step of the turn (the kill runs talk to a fake Anthropic).
  for (const point of KILL_POINTS) {
    const fake = await startFakeVendor({
      vendor: "anthropic",
      script: killScript(point, join(sb.root, `kill-${point}`, "started.marker")),
    });
    try {
      const dir = project(sb, `kill-${point}`, VENDORS[0]!, fake.baseUrl());
      killed.set(
        point,
        await runAndKill(sb, dir, fake, point, join(sb.root, `kill-${point}`, "started.marker")),
      );
    } finally {
      await fake.close();
    }
  }
}, 120_000);

afterAll(() => sb?.cleanup());

describe("resuming after a SIGKILL at every step of a turn", () => {
  for (const vendor of VENDORS) {
    it(`${vendor.provider}: every killed session resumes, and its conversation passes the vendor's validator`, async () => {
      const fake: FakeVendor = await validatingFake(vendor);
      const dir = project(sb, `resume-${vendor.provider}`, vendor, fake.baseUrl());
      const stateDir = join(dir, ".state", "agent", "sessions");
      for (const run of killed.values()) copySession(run, stateDir);
      const kernel = await createKernel({
        projectDir: dir,
        installationRoot: REPO_ROOT,
        env: sb.env,
        stateDir,
        globalConfig: false,
        headlessAsk: "allow",
        durability: "normal",
        describeCache: false,
        tokenCountCache: false,
        prelaunchPlan: false,
      });
      try {
        for (const [point, run] of killed) {
          const before = fake.requests.length;
          const s = await kernel.resumeSession(run.sessionId);
          s.send("go on");
          const status = await s.idle();
          expect(status, point).toBe(SessionStatus.COMPLETED);
          const sent = fake.requests.slice(before);
          expect(sent.length, point).toBeGreaterThan(0);
          expect(
            sent.filter((r) => r.rejected),
            `${point}: ${JSON.stringify(sent.map((r) => r.rejected))}`,
          ).toEqual([]);
        }
      } finally {
        await kernel.shutdown();
        await fake.close();
      }
    }, 60_000);
  }

  it("answers each open call exactly once, saying what may have applied, in the file's audit trail", () => {
    const run = killed.get("during-bash")!;
    const r = openSessionReader(run.sessionId, {
      dir: join(sb.root, "resume-anthropic", ".state", "agent", "sessions"),
    });
    try {
      const messages = r
        .readEvents({ kinds: [EventKind.MESSAGE] })
        .map((e) => fromBinary(MessageEventSchema, e.payload));
      const results = messages.flatMap((m) =>
        (m.message?.content ?? []).flatMap((b) => (b.block.case === "toolResult" ? [b.block.value] : [])),
      );
      const uses = messages.flatMap((m) =>
        (m.message?.content ?? []).flatMap((b) => (b.block.case === "toolUse" ? [b.block.value.id] : [])),
      );
      expect(results.map((x) => x.toolUseId).sort()).toEqual([...uses].sort());
      const bash = results.find((x) => JSON.stringify(x).includes("interrupted:"));
      expect(JSON.stringify(bash)).toMatch(/may or may not have taken effect/);
      const applies = r
        .readEvents({ kinds: [EventKind.APPLY] })
        .map((e) => fromBinary(ApplyEventSchema, e.payload));
      expect(applies.flatMap((a) => a.apply?.items ?? []).map((i) => i.outcome)).toContain(
        ApplyOutcome.INTERRUPTED,
      );
    } finally {
      r.close();
    }
  });
});
