// Fault kinds of the session guarantees (issue 15, part A): kills at random points of a
// turn then a resume against each first-party vendor, a second writer, arguments nested
// too deeply, damaged session files, a failed turn, interleaved denials, clean files.
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type FakeVendor, scenarios, startFakeVendor } from "@pluggableharness/fake-vendors";
import {
  agent,
  copySession,
  KILL_POINTS,
  type KillPoint,
  killScript,
  project,
  runAndKill,
  type Sandbox,
  sandbox,
  VENDORS,
  type VendorCase,
  validatingFake,
} from "../kill-resume.ts";
import type { FaultOutcome, FaultScenario } from "../scenario.ts";

/** Each event of a session file by sequence, as a hash of what identifies it. */
function eventDigests(file: string): Map<number, string> {
  const out = new Map<number, string>();
  if (!existsSync(file)) return out;
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    for (const row of db.prepare("SELECT sequence, kind, payload FROM events").all() as {
      sequence: number;
      kind: string;
      payload: Uint8Array;
    }[])
      out.set(Number(row.sequence), createHash("sha256").update(row.kind).update(row.payload).digest("hex"));
  } finally {
    db.close();
  }
  return out;
}

async function withSandbox(run: (sb: Sandbox) => Promise<FaultOutcome>): Promise<FaultOutcome> {
  const sb = sandbox();
  try {
    return await run(sb);
  } finally {
    sb.cleanup();
  }
}

const noStackTrace = (s: string) => !/\n\s+at /.test(s);

/** Kill at a point chosen by `index`, resume against the same vendor, validated. */
function killResume(vendor: VendorCase): FaultScenario {
  return {
    name: `kill then resume (${vendor.provider})`,
    proves: "1: resumable after any kill",
    runs: 20,
    run: (index) =>
      withSandbox(async (sb) => {
        // Every step of the turn in turn, and every third run a random moment.
        const point: KillPoint = index % 3 === 2 ? "random" : KILL_POINTS[index % KILL_POINTS.length]!;
        // Inside the project: the bash sandbox lets a command write only there.
        const marker = join(sb.root, "killed", "started.marker");
        const killFake = await startFakeVendor({ vendor: vendor.fake, script: killScript(point, marker) });
        let resumeFake: FakeVendor | undefined;
        try {
          const dir = project(sb, "killed", vendor, killFake.baseUrl());
          const run = await runAndKill(sb, dir, killFake, point, marker, 200 + ((index * 137) % 1500));
          await killFake.close();
          // What the killed process had committed, read from a copy (reading the original
          // would already recover its WAL).
          const snapshot = join(sb.root, "snapshot");
          copySession(run, snapshot);
          const committed = eventDigests(join(snapshot, `${run.sessionId}.sqlite`));
          resumeFake = await validatingFake(vendor);
          const resumeDir = project(sb, "resumed", vendor, resumeFake.baseUrl());
          copySession(run, join(resumeDir, ".state", "agent", "sessions"));
          const r = await agent(sb, resumeDir, ["run", "--resume", run.sessionId, "-p", "go on"]);
          const after = eventDigests(
            join(resumeDir, ".state", "agent", "sessions", `${run.sessionId}.sqlite`),
          );
          let lost = 0;
          for (const [seq, digest] of committed) if (after.get(seq) !== digest) lost++;
          const rejected = resumeFake.requests.filter((q) => q.rejected);
          const survived = r.code === 0 && rejected.length === 0 && r.stdout === "Resumed.\n";
          return {
            survived,
            lost,
            ...(survived
              ? {}
              : {
                  note: `${point}: exit ${r.code}${rejected.length ? `, rejected: ${rejected[0]!.rejected?.message}` : ""} ${r.stderr.slice(0, 200)}`,
                }),
          };
        } finally {
          await killFake.close();
          await resumeFake?.close();
        }
      }),
  };
}

/** A live `agent run`, then a second --resume of it: refused at once, naming the holder. */
const secondResume: FaultScenario = {
  name: "second --resume of a live session",
  proves: "5: one writer per session",
  runs: 20,
  run: (index) =>
    withSandbox(async (sb) => {
      const fake = await startFakeVendor({
        vendor: "anthropic",
        script: [scenarios.stall({ afterFrames: 1 + (index % 3) }), scenarios.text("Took over.")],
      });
      try {
        const dir = project(sb, "live", VENDORS[0]!, fake.baseUrl());
        const first = agent(sb, dir, ["run", "-p", "work", "--output-format", "stream-json"], {}, 20_000);
        await fake.waitForStall();
        const sessions = join(dir, ".state", "agent", "sessions");
        const id = readdirSync(sessions)
          .find((f) => f.endsWith(".sqlite"))!
          .slice(0, 26);
        const second = await agent(sb, dir, ["run", "--resume", id, "-p", "me too"]);
        fake.releaseStalls();
        const refused =
          second.code === 1 &&
          /is open in another agent process \(pid \d+.*since /.test(second.stderr) &&
          second.ms < 5_000;
        const firstDone = await first;
        return {
          survived: refused && firstDone.code !== null && fake.requests.length <= 2,
          lost: 0,
          ...(refused
            ? {}
            : { note: `second run: exit ${second.code} in ${second.ms} ms: ${second.stderr.slice(0, 160)}` }),
        };
      } finally {
        await fake.close();
      }
    }),
};

/** Tool arguments nested from 33 to 100,000 levels: invalid_arguments, and the session goes on. */
const deepArguments: FaultScenario = {
  name: "tool arguments nested too deeply",
  proves: "7: bad input is an error, not a crash",
  runs: 20,
  run: (index) =>
    withSandbox(async (sb) => {
      const depth = [33, 48, 100, 1_000, 10_000, 100_000][index % 6]!;
      const args = `${'{"a":'.repeat(depth - 1)}{"path":"calc.js"}${"}".repeat(depth - 1)}`;
      const fake = await startFakeVendor({
        vendor: "anthropic",
        validate: true,
        script: [
          { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args }] },
          scenarios.text("Recovered."),
        ],
      });
      try {
        const dir = project(sb, "deep", VENDORS[0]!, fake.baseUrl());
        const r = await agent(sb, dir, ["run", "-p", "read", "--output-format", "stream-json"]);
        const result = r.stdout.split("\n").find((l) => l.includes('"type":"tool_result"')) ?? "";
        const survived =
          r.code === 0 &&
          result.includes("invalid_arguments") &&
          r.stdout.includes("Recovered.") &&
          noStackTrace(r.stderr);
        return {
          survived,
          lost: 0,
          ...(survived ? {} : { note: `depth ${depth}: exit ${r.code} ${r.stderr.slice(0, 160)}` }),
        };
      } finally {
        await fake.close();
      }
    }),
};

const DAMAGE = [
  "DROP TABLE producers",
  "DROP TABLE cost_ledger",
  "DROP TABLE plan_items",
  "DROP TABLE events",
  "UPDATE events SET payload = x'0aff0aff' WHERE sequence % 2 = 0",
  "UPDATE events SET kind = 'no_such_kind' WHERE kind = 'tool_call'",
  "UPDATE events SET producer_category = 'zzz'",
];

/** A finished session damaged in one of several ways: show and replay report it and show the rest. */
const damagedFile: FaultScenario = {
  name: "damaged session file",
  proves: "7: sessions show/replay never crash on a damaged file",
  runs: 21,
  run: (index) =>
    withSandbox(async (sb) => {
      const fake = await startFakeVendor({
        vendor: "anthropic",
        script: [
          { kind: "tool_calls", calls: [{ name: "filesystem__read_file", args: { path: "calc.js" } }] },
          scenarios.text("All read."),
        ],
      });
      try {
        const dir = project(sb, "damaged", VENDORS[0]!, fake.baseUrl());
        const r = await agent(sb, dir, ["run", "-p", "read", "--output-format", "json"]);
        const id = JSON.parse(r.stdout).session_id as string;
        const sql = DAMAGE[index % DAMAGE.length]!;
        const db = new DatabaseSync(join(dir, ".state", "agent", "sessions", `${id}.sqlite`), {
          enableForeignKeyConstraints: false,
        });
        db.exec(sql);
        db.close();
        const [show, replay] = await Promise.all([
          agent(sb, dir, ["sessions", "show", id]),
          agent(sb, dir, ["sessions", "replay", id]),
        ]);
        const ok = (x: typeof show) =>
          noStackTrace(x.stderr) &&
          (x.code === 0 || /damaged:/.test(x.stderr)) &&
          (sql.includes("events") || x.stdout.length > 0);
        const survived = ok(show) && ok(replay);
        return {
          survived,
          lost: 0,
          ...(survived
            ? {}
            : {
                note: `${sql}: show ${show.code} ${show.stderr.slice(0, 120)} replay ${replay.code} ${replay.stderr.slice(0, 120)}`,
              }),
        };
      } finally {
        await fake.close();
      }
    }),
};

/** A model call failing for good: exit 1 with the reason, then --resume goes on. */
const failedTurn: FaultScenario = {
  name: "failed turn, then resume",
  proves: "2: a failed turn is not a dead session",
  runs: 20,
  run: (index) =>
    withSandbox(async (sb) => {
      const failure = [
        { kind: "error" as const, status: 401, errorType: "authentication_error", message: "bad key" },
        { kind: "error" as const, status: 400, errorType: "invalid_request_error", message: "bad request" },
        { kind: "text" as const, text: "half", vendorStopReason: "model_context_window_exceeded" },
      ][index % 3]!;
      const fake = await startFakeVendor({ vendor: "anthropic", script: [failure, scenarios.text("Back.")] });
      try {
        const dir = project(sb, "failed", VENDORS[0]!, fake.baseUrl());
        const first = await agent(sb, dir, ["run", "-p", "hello", "--output-format", "json"]);
        const id = JSON.parse(first.stdout).session_id as string;
        const second = await agent(sb, dir, ["run", "--resume", id, "-p", "again"]);
        const survived = first.code === 1 && second.code === 0 && second.stdout === "Back.\n";
        return {
          survived,
          lost: 0,
          ...(survived
            ? {}
            : { note: `exit ${first.code} then ${second.code}: ${second.stderr.slice(0, 160)}` }),
        };
      } finally {
        await fake.close();
      }
    }),
};

/** A denied write retried between allowed reads: the breaker trips and the exit status is 4. */
const interleavedDenials: FaultScenario = {
  name: "denials interleaved with allowed calls",
  proves: "10: breakers that count; exit codes",
  runs: 20,
  run: (index) =>
    withSandbox(async (sb) => {
      const turn = (i: number) => ({
        kind: "tool_calls" as const,
        calls: [
          { name: "exec__bash", args: { command: index % 2 ? `echo ${i}` : "echo same" } },
          // Reads that differ call by call and turn by turn: the doom-loop detector is not
          // what stops this run.
          ...["calc.js", "test.js", "agent.hcl"]
            .slice(0, 1 + (index % 3))
            .map((path) => ({ name: "filesystem__read_file", args: { path, limit: 100 + i } })),
        ],
      });
      const fake = await startFakeVendor({
        vendor: "anthropic",
        script: (_r, i) => (i < 40 ? turn(i) : scenarios.text("Stopping.")),
      });
      try {
        const dir = project(sb, "denials", VENDORS[0]!, fake.baseUrl());
        appendFileSync(
          join(dir, "agent.hcl"),
          '\npolicy "no_bash" {\n  match  = { provider = "exec" }\n  action = "deny"\n}\n',
        );
        const r = await agent(sb, dir, ["run", "-p", "go", "--output-format", "json", "--max-turns", "45"]);
        const result = JSON.parse(r.stdout || "{}") as { exit_code?: number; num_turns?: number };
        const survived = r.code === 4 && result.exit_code === 4 && (result.num_turns ?? 99) <= 12;
        return {
          survived,
          lost: 0,
          ...(survived
            ? {}
            : { note: `exit ${r.code}, ${result.num_turns} turns: ${r.stdout.slice(0, 300)}` }),
        };
      } finally {
        await fake.close();
      }
    }),
};

/** A 10 MB write_file: the file is written whole and the session stores the content once. */
const largeWrite: FaultScenario = {
  name: "10 MB write_file",
  proves: "7: a large input is stored once",
  runs: 5,
  run: (index) =>
    withSandbox(async (sb) => {
      const content = `${String(index).repeat(1023)}\n`.repeat(10_000);
      const fake = await startFakeVendor({
        vendor: "anthropic",
        script: [
          {
            kind: "tool_calls",
            calls: [{ name: "filesystem__write_file", args: { path: "big.txt", content } }],
          },
          scenarios.text("Wrote it."),
        ],
      });
      try {
        const dir = project(sb, "big", VENDORS[0]!, fake.baseUrl());
        const r = await agent(sb, dir, ["run", "-p", "write", "--output-format", "json"], {}, 120_000);
        const id = JSON.parse(r.stdout).session_id as string;
        const db = new DatabaseSync(join(dir, ".state", "agent", "sessions", `${id}.sqlite`), {
          readOnly: true,
        });
        const total = Number(
          (db.prepare("SELECT sum(length(payload)) AS n FROM events").get() as { n: number }).n,
        );
        db.close();
        const written = existsSync(join(dir, "big.txt"));
        const survived = written && total < content.length + 200 * 1024;
        return {
          survived,
          lost: 0,
          ...(survived
            ? {}
            : { note: `written: ${written}; ${total} bytes of payloads for ${content.length}` }),
        };
      } finally {
        await fake.close();
      }
    }),
};

/** After a clean run the session is one file; after a SIGKILL the next run sweeps the temp dirs. */
const cleanFiles: FaultScenario = {
  name: "clean files after runs and kills",
  proves: "9: clean files",
  runs: 20,
  run: (index) =>
    withSandbox(async (sb) => {
      const tmp = join(sb.root, "tmp");
      mkdirSync(tmp);
      const fake = await startFakeVendor({
        vendor: "anthropic",
        script: [scenarios.stall({ afterFrames: 1 + (index % 4) }), scenarios.text("Clean.")],
      });
      try {
        const dir = project(sb, "clean", VENDORS[0]!, fake.baseUrl());
        sb.env["TMPDIR"] = tmp;
        const run = await runAndKill(sb, dir, fake, "mid-stream", join(sb.root, "m"));
        const leftByKill = readdirSync(tmp).filter((n) => n.startsWith("ph-"));
        const again = await agent(sb, dir, ["run", "--resume", run.sessionId, "-p", "go on"]);
        const stillThere = leftByKill.filter((n) => existsSync(join(tmp, n)));
        const sidecars = readdirSync(run.sessionsDir).filter((n) => /-(wal|shm)$/.test(n));
        const survived = again.code === 0 && stillThere.length === 0 && sidecars.length === 0;
        return {
          survived,
          lost: 0,
          ...(survived
            ? {}
            : {
                note: `exit ${again.code}; temp dirs left: ${stillThere.length}; sidecars: ${sidecars.join(",")}`,
              }),
        };
      } finally {
        await fake.close();
      }
    }),
};

export const sessionScenarios: FaultScenario[] = [
  ...VENDORS.map(killResume),
  secondResume,
  failedTurn,
  deepArguments,
  damagedFile,
  interleavedDenials,
  cleanFiles,
  largeWrite,
];
