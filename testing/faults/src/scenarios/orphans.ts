// No orphans (issue 15, point 6): a real `agent run` whose bash call has a process tree
// running, and a SIGKILL at a varied point, either of the exec plugin alone (the session
// must carry on) or of the agent itself. Afterwards nothing the run started may be alive.
// Odd runs turn exec's bubblewrap sandbox off, so the exec watchdog is proven on its own.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeVendor } from "@pluggableharness/fake-vendors";
import type { FaultOutcome, FaultScenario } from "../scenario.ts";
import {
  eventSequences,
  killLeftovers,
  latestSession,
  processesIn,
  rng,
  scratch,
  start,
  until,
} from "../support.ts";

/** A tree (a subshell with children, background and nohup'd jobs) that records its pids as it grows. */
function treeCommand(dir: string): string {
  const pids = join(dir, "tree.pids");
  return [
    `echo $$ >> ${pids}`,
    `(sleep 401 & echo $! >> ${pids}; sleep 402 & echo $! >> ${pids}; wait) &`,
    `echo $! >> ${pids}`,
    "sleep 0.2",
    `nohup sleep 403 >/dev/null 2>&1 & echo $! >> ${pids}`,
    `sh -c 'sleep 404' & echo $! >> ${pids}`,
    "wait",
  ].join("\n");
}

/** The exec plugin's pid: the process in `dir` running the exec provider's entry. */
function execPlugin(dir: string): number | undefined {
  const line = processesIn(dir).find((p) => /providers\/exec\/(src\/main\.ts|.*main\.mjs)/.test(p));
  return line ? Number(line.split(":")[0]) : undefined;
}

/** Events missing from a session file: gaps in its sequence numbers. */
function gaps(seqs: number[]): number {
  let lost = 0;
  for (let i = 1; i < seqs.length; i++) lost += Math.max(0, seqs[i]! - seqs[i - 1]! - 1);
  return lost;
}

async function treeRun(index: number, victim: "plugin" | "agent"): Promise<FaultOutcome> {
  const random = rng(index * 7919 + (victim === "plugin" ? 1 : 2));
  const s = scratch();
  const fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const repo = s.repo();
  // Every other run without the bubblewrap sandbox: the watchdog alone must do it then.
  const unsandboxed = index % 2 === 1;
  if (unsandboxed) {
    const file = join(repo, "agent.hcl");
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace(
        'provider "exec" {\n  roots = [env("FIXTURE_ROOT")]',
        'provider "exec" {\n  roots   = [env("FIXTURE_ROOT")]\n  sandbox = "off"',
      ),
    );
  }
  try {
    fake.push(
      { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: treeCommand(repo) } }] },
      { kind: "text", text: "the tool died; carrying on" },
    );
    const env = {
      ...s.env,
      ANTHROPIC_API_KEY: "sk-ant-faults",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const run = start(["run", "-p", "run the script", "--headless-ask", "allow"], repo, env);
    if (!(await until(() => existsSync(join(repo, "tree.pids")), 30_000))) {
      run.child.kill("SIGKILL");
      return { survived: false, lost: 0, note: "the command never started" };
    }
    // A varied point while the tree grows (it is complete after about 0.2 s).
    await new Promise((r) => setTimeout(r, Math.floor(random() * 400)));
    const tree = readFileSync(join(repo, "tree.pids"), "utf8").trim().split("\n").length;
    if (victim === "plugin") {
      const pid = execPlugin(repo);
      if (pid === undefined) return { survived: false, lost: 0, note: "no exec plugin process found" };
      process.kill(pid, "SIGKILL");
    } else run.child.kill("SIGKILL");
    const result = await run.done;
    // The plugins of a killed agent notice within a second; allow a few.
    const clean = await until(() => processesIn(repo).length === 0, 5_000);
    const left = processesIn(repo);
    const id = latestSession(s);
    const lost = id ? gaps(eventSequences(s, id)) : 0;
    if (!clean)
      return {
        survived: false,
        lost,
        note: `${left.length} process(es) left after a ${tree}-pid tree: ${left[0]}`,
      };
    if (victim === "plugin" && (result.code !== 0 || !result.stdout.includes("carrying on")))
      return {
        survived: false,
        lost,
        note: `the session did not carry on (exit ${result.code}): ${result.stderr.slice(-200)}`,
      };
    return { survived: true, lost };
  } finally {
    killLeftovers(repo);
    await fake.close();
    s.cleanup();
  }
}

export const pluginKilledWithTree: FaultScenario = {
  name: "exec plugin SIGKILL, command tree running",
  proves: "6: a dead tool plugin takes its commands' process groups with it; the session goes on",
  runs: 20,
  run: (i) => treeRun(i, "plugin"),
};

export const agentKilledWithTree: FaultScenario = {
  name: "agent SIGKILL, command tree running",
  proves: "6: after agent exits nothing it started is alive",
  runs: 20,
  run: (i) => treeRun(i, "agent"),
};

/** A background process (with children) running while a foreground call runs; the agent is SIGKILLed. */
async function backgroundRun(index: number): Promise<FaultOutcome> {
  const random = rng(index * 104729 + 3);
  const s = scratch();
  const fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  const repo = s.repo();
  if (index % 2 === 1) {
    const file = join(repo, "agent.hcl");
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace(
        'provider "exec" {\n  roots = [env("FIXTURE_ROOT")]',
        'provider "exec" {\n  roots   = [env("FIXTURE_ROOT")]\n  sandbox = "off"',
      ),
    );
  }
  try {
    fake.push(
      {
        kind: "tool_calls",
        calls: [
          {
            name: "exec__background_start",
            args: {
              command: `(sleep 411 & sleep 412 & wait) & sleep 413 & touch ${join(repo, "bg.ready")}; wait`,
            },
          },
        ],
      },
      { kind: "tool_calls", calls: [{ name: "exec__bash", args: { command: "sleep 60" } }] },
    );
    const env = {
      ...s.env,
      ANTHROPIC_API_KEY: "sk-ant-faults",
      FAKE_ANTHROPIC_URL: fake.url,
      FIXTURE_ROOT: repo,
    };
    const run = start(["run", "-p", "start the server", "--headless-ask", "allow"], repo, env);
    if (!(await until(() => existsSync(join(repo, "bg.ready")), 30_000))) {
      run.child.kill("SIGKILL");
      return { survived: false, lost: 0, note: "the background process never started" };
    }
    // A varied point: while the next model request or the foreground call runs.
    await new Promise((r) => setTimeout(r, Math.floor(random() * 600)));
    run.child.kill("SIGKILL");
    await run.done;
    const clean = await until(() => processesIn(repo).length === 0, 5_000);
    const left = processesIn(repo);
    return clean
      ? { survived: true, lost: 0 }
      : { survived: false, lost: 0, note: `${left.length} process(es) left: ${left[0]}` };
  } finally {
    killLeftovers(repo);
    await fake.close();
    s.cleanup();
  }
}

export const agentKilledWithBackground: FaultScenario = {
  name: "agent SIGKILL, background process running",
  proves: "issue 26, 5: a background process started through exec dies with the agent",
  runs: 20,
  run: (i) => backgroundRun(i),
};
