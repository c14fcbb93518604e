// Fleet mode end to end (issue 37): real redis-server and PostgreSQL on loopback ports,
// several real `agent worker` processes, `agent batch` commands, and the loopback fake
// Anthropic answering each request by what it carries (which task, which step). The
// engines start once for the file; each case submits its own batch.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { RecordedRequest, ScriptedResponse } from "@pluggableharness/fake-vendors";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CALL_USD, type FleetWorld, requestState, startFleetWorld, twoStep, USAGE } from "./fleet.ts";
import { agent } from "./helpers.ts";

let w: FleetWorld;

beforeAll(async () => {
  w = await startFleetWorld();
}, 60_000);

afterAll(async () => {
  await w?.close();
});

// Whatever a case started stops with it, passed or failed: a stray worker would take the
// next case's jobs.
afterEach(async () => {
  await w?.killWorkers();
});

/** A JSONL file of `n` tasks named <prefix><i>, each on a target of its own. */
function jsonl(prefix: string, n: number): string {
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({ target: w.target(`${prefix}${i + 1}`), name: `${prefix}${i + 1}` }),
  );
  const file = join(w.sb.home, `${prefix}.jsonl`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

const ready = (worker: ReturnType<FleetWorld["worker"]>) =>
  w.waitFor("the worker to be ready", async () => {
    if (worker.child.exitCode !== null)
      throw new Error(`the worker exited (${worker.child.exitCode}):\n${worker.output()}`);
    return worker.output().includes(" ready: ");
  });

const finished = (batchId: string, timeoutMs = 40_000) =>
  w.waitFor(
    `batch ${batchId} to finish`,
    async () => {
      const tasks = await w.catalog.tasks(batchId);
      return tasks.every((t) => t.finishedAt) && tasks;
    },
    timeoutMs,
  );

const forTask = (name: string) => (r: RecordedRequest) => requestState(r).task === name;

describe("fleet mode", () => {
  it("runs a batch of 20 tasks on three workers; Redis and PostgreSQL crashes mid-batch lose nothing finished", async () => {
    w.script = (req) => twoStep(req);
    const workers = [1, 2, 3].map(() => w.worker(["--concurrency", "2"]));
    await Promise.all(workers.map(ready));
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", jsonl("t", 20)]);

    // Part-way through, Redis is killed (-9) and started again on its append-only file.
    const before = await w.waitFor("six finished tasks", async () => {
      const done = (await w.catalog.tasks(id)).filter((t) => t.status === "completed");
      return done.length >= 6 && done;
    });
    await w.engines.redis.restart();
    // Then PostgreSQL crashes and comes back: claims wait for it, results are retried.
    await w.waitFor("twelve finished tasks", async () => {
      const done = (await w.catalog.tasks(id)).filter((t) => t.status === "completed");
      return done.length >= 12;
    });
    await w.engines.postgres.restart();
    const tasks = await finished(id, 50_000);

    expect(tasks.map((t) => t.status)).toEqual(Array(20).fill("completed"));
    for (const t of tasks) {
      const name = `t${t.idx}`;
      expect(t.finalMessage).toBe(`Finished ${name}.`);
      expect(t.exitCode).toBe(0);
      expect(t.workDiff).toContain(`+++ b/out/${name}.txt`);
      expect(t.workDiff).toContain(`+done ${name}`);
      // Each task's first step was asked exactly once: nothing ran twice.
      expect(w.fake.requests.filter((r) => forTask(name)(r) && requestState(r).results === 0)).toHaveLength(
        1,
      );
    }
    // What finished before the crash is still there, as it was.
    for (const b of before) {
      const now = tasks.find((t) => t.id === b.id)!;
      expect(now).toMatchObject({ status: "completed", attempt: 1, sessionId: b.sessionId });
      expect(now.finishedAt?.getTime()).toBe(b.finishedAt?.getTime());
    }

    // status, from this machine as from any: every task done, the spend of 40 calls.
    const status = await w.batch(["status", id, "--json"]);
    expect(status.code).toBe(0);
    const view = JSON.parse(status.stdout) as { done: number; status: string; spent_usd: number };
    expect(view).toMatchObject({ done: 20, status: "finished" });
    expect(view.spent_usd).toBeCloseTo(40 * CALL_USD, 6);

    // results: one JSON line per task.
    const results = await w.batch(["results", id]);
    const rows = results.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows).toHaveLength(20);
    expect(rows[4]).toMatchObject({ index: 5, status: "completed", final_message: "Finished t5.", turns: 2 });
    expect(rows[4]!["input_tokens"]).toBe(2 * USAGE.inputTokens);

    // The catalog's sessions, read like local ones; their ledgers add up to the batch's spend.
    const list = await agent(["sessions", "list", "--batch", id, "--json"], { cwd: w.project, env: w.env });
    expect(list.code).toBe(0);
    const sessions = JSON.parse(list.stdout) as Array<{
      session_id: string;
      cost_usd: number;
      status: string;
    }>;
    expect(sessions).toHaveLength(20);
    const cents = (n: number) => Math.round(n * 100);
    expect(cents(sessions.reduce((a, s) => a + s.cost_usd, 0))).toBe(cents(view.spent_usd));
    const one = tasks[2]!;
    const show = await agent(["sessions", "show", one.sessionId!, "--batch", id], {
      cwd: w.project,
      env: w.env,
    });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("Finished t3.");
    const replay = await agent(["sessions", "replay", one.sessionId!, "--batch", id], {
      cwd: w.project,
      env: w.env,
    });
    expect(replay.code).toBe(0);
    expect(replay.stdout).toContain("Finished t3.");
  }, 120_000);

  it("a worker killed mid-task: another resumes its uploaded session and the task completes once", async () => {
    w.script = (req) => {
      const s = requestState(req);
      if (s.resumed) return { kind: "text", text: `Finished ${s.task} after resuming.`, usage: USAGE };
      // The second step never answers: the worker is killed while it waits.
      if (s.results > 0) return { kind: "stall_before_headers" };
      return twoStep(req);
    };
    const a = w.worker();
    await ready(a);
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", jsonl("k", 1)]);
    const taskId = `${id}-1`;
    // The first turn is uploaded and the second is waiting on the model: kill -9.
    await w.waitFor(
      "the first turn's upload",
      async () => (await w.catalog.taskSessionFiles(taskId)).length > 0,
    );
    await w.fake.waitForStall();
    const holder = (await w.catalog.task(taskId))!;
    expect(holder.worker).toBe(`${holder.worker!.split(":")[0]}:${a.child.pid}`);
    a.kill("SIGKILL");
    await a.exited;
    w.fake.releaseStalls();

    w.worker();
    const [task] = await finished(id);
    expect(task).toMatchObject({
      status: "completed",
      attempt: 2,
      resumedFrom: 1,
      finalMessage: "Finished k1 after resuming.",
    });
    // The first step was not redone: the second worker replayed its upload (the file the
    // first worker wrote is in the result) and went on from the recorded history.
    expect(w.fake.requests.filter((r) => forTask("k1")(r) && requestState(r).results === 0)).toHaveLength(1);
    expect(task!.workDiff).toContain("+done k1");
    const resumed = w.fake.requests.find((r) => forTask("k1")(r) && requestState(r).resumed)!;
    expect(requestState(resumed).results).toBe(1);
    // The dead worker's attempt never completed; the second did, exactly once.
    const attempts = await w.catalog.attempts(taskId);
    expect(attempts.map((x) => [x.attempt, x.outcome ?? null])).toEqual([
      [1, null],
      [2, "completed"],
    ]);
    const again = {
      status: "failed" as const,
      costUsd: 0,
      inputTokens: 0,
      outputTokens: 0,
      turns: 0,
      denials: 0,
    };
    expect(await w.catalog.complete(taskId, 1, again)).toBe(false);
    expect(await w.catalog.complete(taskId, 2, again)).toBe(false);
    expect((await w.catalog.task(taskId))!.status).toBe("completed");
  }, 60_000);

  it("a 429 with retry-after holds every worker back until it has passed", async () => {
    let limitedAt: number | undefined;
    let leader: string | undefined;
    let limited!: () => void;
    const sent = new Promise<void>((resolve) => {
      limited = resolve;
    });
    w.script = async (req) => {
      const s = requestState(req);
      leader ??= s.task;
      if (s.task === leader && s.results === 1 && limitedAt === undefined) {
        limitedAt = req.receivedAt.wallMs;
        setTimeout(limited, 600);
        return { kind: "error", status: 429, retryAfterSeconds: 2 } as ScriptedResponse;
      }
      // The others' first step is answered just after the 429, so that their second step
      // would come inside the window if nothing held them back.
      if (s.task !== leader && s.results === 0) await sent;
      return twoStep(req);
    };
    const workers = [1, 2, 3].map(() => w.worker());
    await Promise.all(workers.map(ready));
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", jsonl("r", 3)]);
    const tasks = await finished(id);
    expect(tasks.map((t) => t.status)).toEqual(["completed", "completed", "completed"]);
    expect(limitedAt).toBeDefined();
    const mine = w.fake.requests.filter((r) => /task-r\d/.test(JSON.stringify(r.json)));
    // Nobody called the vendor while it asked to be left alone (a request already on its
    // way when the 429 went out may land just after it).
    const inWindow = mine.filter(
      (r) => r.receivedAt.wallMs > limitedAt! + 900 && r.receivedAt.wallMs < limitedAt! + 1_900,
    );
    expect(inWindow.map((r) => requestState(r))).toEqual([]);
    for (const name of ["r1", "r2", "r3"].filter((n) => n !== leader)) {
      const second = mine.find((r) => forTask(name)(r) && requestState(r).results === 1)!;
      expect(second.receivedAt.wallMs - limitedAt!).toBeGreaterThanOrEqual(1_900);
    }
  }, 60_000);

  it("the batch budget stops the batch within one task's spend", async () => {
    w.script = (req) => twoStep(req);
    const workers = [w.worker(), w.worker()];
    await Promise.all(workers.map(ready));
    const taskUsd = 2 * CALL_USD;
    const budget = 1.0;
    const id = await w.submit([
      "-p",
      "Do task-{{name}} please.",
      "--jsonl",
      jsonl("b", 6),
      "--budget-usd",
      String(budget),
    ]);
    const tasks = await finished(id);
    const batch = (await w.catalog.batch(id))!;
    expect(batch.spentUsd).toBeLessThanOrEqual(budget + taskUsd + 1e-9);
    const completed = tasks.filter((t) => t.status === "completed");
    const skipped = tasks.filter((t) => t.status === "skipped");
    expect(completed.length).toBeGreaterThanOrEqual(2);
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(completed.length + skipped.length).toBe(6);
    expect(skipped[0]!.detail).toMatch(
      /^the batch budget cannot cover this task: \$\d+\.\d\d of \$1\.00 left/,
    );
    // Spend is what the sessions' ledgers say.
    expect(batch.spentUsd).toBeCloseTo(
      completed.reduce((a, t) => a + t.costUsd, 0),
      9,
    );
    const status = JSON.parse((await w.batch(["status", id, "--json"])).stdout) as {
      counts: Record<string, number>;
    };
    expect(status.counts["skipped"]).toBe(skipped.length);
  }, 60_000);

  it("a batch's --concurrency holds across workers; a git target runs at its ref", async () => {
    // Task n2's target is a git repository whose README changed after the tag v1.
    const repo = w.target("n2-repo", { "README.md": "v1\n" });
    const git = (...args: string[]) =>
      execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
        cwd: repo,
        stdio: "pipe",
      });
    git("init", "-q");
    git("add", "-A");
    git("commit", "-qm", "one");
    git("tag", "v1");
    writeFileSync(join(repo, "README.md"), "v2\n");
    git("commit", "-qam", "two");
    w.script = (req) => {
      const s = requestState(req);
      if (s.task === "n2" && s.results === 0) {
        return {
          kind: "tool_calls",
          calls: [
            { name: "filesystem__edit_file", args: { path: "README.md", old_str: "v1", new_str: "patched" } },
          ],
          usage: USAGE,
          latencyMs: 300,
        } as ScriptedResponse;
      }
      return twoStep(req, { latencyMs: 300 });
    };
    const workers = [w.worker(), w.worker()];
    await Promise.all(workers.map(ready));
    const file = jsonl("n", 3);
    const lines = readFileSync(file, "utf8").trim().split("\n");
    lines[1] = JSON.stringify({ target: repo, ref: "v1", name: "n2" });
    writeFileSync(file, `${lines.join("\n")}\n`);
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", file, "--concurrency", "1"]);
    let most = 0;
    const tasks = await w.waitFor("the batch to finish", async () => {
      const ts = await w.catalog.tasks(id);
      most = Math.max(most, ts.filter((t) => t.status === "running").length);
      return ts.every((t) => t.finishedAt) && ts;
    });
    expect(tasks.map((t) => t.status)).toEqual(["completed", "completed", "completed"]);
    // Two idle workers, yet never two of the batch's tasks at once.
    expect(most).toBe(1);
    // Cloned at v1 (HEAD says v2), and the change measured against v1.
    expect(tasks[1]!.workDiff).toContain("-v1\n+patched");
  }, 60_000);

  it("cancel stops everything: nothing queued starts, running tasks are interrupted", async () => {
    w.script = (req) => twoStep(req, { latencyMs: 1_000 });
    const workers = [w.worker(), w.worker()];
    await Promise.all(workers.map(ready));
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", jsonl("c", 6)]);
    await w.waitFor("two running tasks", async () => {
      const tasks = await w.catalog.tasks(id);
      return tasks.filter((t) => t.status === "running").length === 2;
    });
    const r = await w.batch(["cancel", id]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("4 queued task(s) will not run; 2 running task(s) stop at their next check");
    const tasks = await finished(id, 15_000);
    expect(tasks.map((t) => t.status)).toEqual(Array(6).fill("cancelled"));
    const requestsNow = w.fake.requests.length;
    await new Promise((res) => setTimeout(res, 1_500));
    expect(w.fake.requests.length).toBe(requestsNow);
  }, 60_000);

  it("SIGTERM drains a worker (its task finishes, nothing new starts); a second one hands the task back", async () => {
    w.script = (req) => twoStep(req, { latencyMs: 700 });
    const a = w.worker();
    await ready(a);
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", jsonl("d", 2)]);
    await w.waitFor(
      "the first task running",
      async () => (await w.catalog.task(`${id}-1`))?.status === "running",
    );
    a.kill("SIGTERM");
    expect(await a.exited).toBe(0);
    expect(await w.catalog.task(`${id}-1`)).toMatchObject({ status: "completed", attempt: 1 });
    expect(await w.catalog.task(`${id}-2`)).toMatchObject({ status: "queued", attempt: 0 });

    const b = w.worker();
    await w.waitFor(
      "the second task's first upload",
      async () => (await w.catalog.taskSessionFiles(`${id}-2`)).length > 0,
    );
    b.kill("SIGTERM");
    // Two signals sent at once may be delivered as one.
    await w.waitFor("the drain to begin", async () => b.output().includes("draining"));
    b.kill("SIGTERM");
    expect(await b.exited).toBe(0);
    const handed = (await w.catalog.task(`${id}-2`))!;
    expect(handed).toMatchObject({ status: "queued", attempt: 1 });
    expect((await w.catalog.attempts(handed.id))[0]?.outcome).toBe("handed back (worker stopping)");
    // Back in the queue at once: the next worker resumes it from the upload.
    w.worker();
    await w.waitFor(
      "the handed-back task",
      async () => (await w.catalog.task(`${id}-2`))?.status === "completed",
    );
    expect(await w.catalog.task(`${id}-2`)).toMatchObject({ attempt: 2, resumedFrom: 1 });
  }, 60_000);

  it("a poison task fails after its attempts with its reason, without blocking the batch; retry --failed reruns it", async () => {
    w.script = (req) => twoStep(req);
    const worker = w.worker(["--concurrency", "2"]);
    await ready(worker);
    const file = jsonl("p", 2);
    // The first target is gone before any worker gets to it: every attempt crashes.
    rmSync(join(w.sb.home, "targets", "p1"), { recursive: true });
    const id = await w.submit(["-p", "Do task-{{name}} please.", "--jsonl", file, "--max-attempts", "2"]);
    const tasks = await finished(id);
    expect(tasks[1]).toMatchObject({ status: "completed", finalMessage: "Finished p2." });
    expect(tasks[0]).toMatchObject({ status: "failed", exitCode: 1 });
    expect(tasks[0]!.detail).toMatch(/^failed 2 attempt\(s\); the last: target \S+p1 does not exist$/);
    const attempts = await w.catalog.attempts(tasks[0]!.id);
    expect(attempts).toHaveLength(2);
    expect(attempts.every((x) => x.outcome?.includes("does not exist"))).toBe(true);

    // Fixed, and retried: the task runs again with a fresh session.
    w.target("p1");
    const retry = await w.batch(["retry", id, "--failed"]);
    expect(retry.stdout).toContain("1 task(s) queued again");
    await w.waitFor(
      "the retried task",
      async () => (await w.catalog.task(tasks[0]!.id))?.status === "completed",
    );

    // No engines configured in the environment: the error names the variable where it is written.
    const env = { ...w.env };
    delete env["FLEET_POSTGRES_URL"];
    const bad = await agent(["worker"], { cwd: w.project, env });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/agent\.hcl:\d+:\d+/);
    expect(bad.stderr).toContain("FLEET_POSTGRES_URL");
  }, 60_000);
});
