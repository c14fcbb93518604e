// First-party tool providers the plugin sandbox confines share one sandbox host: a single
// bubblewrap-confined Node process with each provider in a worker thread of its own
// (runtime/src/sandbox-host.ts). Two copies of the hazard fixture, installed as the
// first-party "task" and "web" packages, stand for two such providers. The test counts the
// kernel's bwrap children from /proc, crashes one provider's thread and checks that only it
// is reported and relaunched while the other keeps its state, and probes the host from
// inside a thread: no kernel /proc entry, no secret in its environment or the thread's,
// kernel-owned paths read-only, nothing writable outside the roots. Last, the host process
// is killed with calls in flight: both providers crash, and both relaunch in a new host.
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventKind } from "@pluggableharness/protocol/kernel";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { sandboxHostPids } from "@pluggableharness/runtime";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { calls, Harness, reply, type TestKernel, tool } from "../loop/harness.ts";

const HAZARD = fileURLToPath(new URL("../../../runtime/test/fixtures/hazard", import.meta.url));
const SECRET = "sandbox-host-canary-91c2";
// Set before any host starts: neither a host nor a thread may see it.
process.env["PH_HOST_TEST_SECRET_TOKEN"] = SECRET;

const probe = probeSandbox();
const h = new Harness();
afterAll(async () => {
  await h.dispose();
  delete process.env["PH_HOST_TEST_SECRET_TOKEN"];
});

/** bubblewrap processes the kernel (this process) started: one per sandbox. */
function bwrapChildren(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "bwrap" && ppid === process.pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Node processes running the sandbox host's program (its marker is in the command line). */
function hostPrograms(): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.startsWith(process.execPath) && cmdline.includes("const threads = new Map()"))
        out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function results(
  k: TestKernel,
  id: string,
): Array<{ name: string; outcome: string | number; detail: unknown }> {
  return k
    .file(id)
    .toolResults()
    .map((r) => {
      if (r.outcome.case === "error")
        return { name: r.toolName, outcome: r.outcome.value.category, detail: r.outcome.value.message };
      const payload = r.outcome.case === "result" ? (r.outcome.value.payload as Record<string, unknown>) : {};
      const detail = typeof payload["detail"] === "string" ? JSON.parse(payload["detail"]) : payload;
      return { name: r.toolName, outcome: "result", detail };
    });
}

describe.skipIf(!probe.ok)("the sandbox host", () => {
  it("runs the confined first-party providers as threads of one bwrap process; a crash relaunches only the crashed one; the host sees no kernel /proc and no secret", async () => {
    const k = await h.kernel({
      providers: [
        { name: "alpha", fixture: "installed", firstParty: "task" },
        { name: "beta", fixture: "installed", firstParty: "web" },
      ],
      install: { task: HAZARD, web: HAZARD },
      sandbox: true,
      limits: { crashBreaker: 10 },
      hcl: `
settings {
  sandbox = "required"
}

agent_profile "default" {
  model {
    primary {
      provider = "model"
      id       = "alpha"
    }
  }
  tools = ["alpha.*", "beta.*"]
}`,
    });
    expect(
      k.kernel
        .listProviders()
        .filter((p) => p.isolation === "hosted")
        .map((p) => p.name),
    ).toEqual(["alpha", "beta"]);
    const outside = join(k.root, "outside");
    mkdirSync(outside, { recursive: true });
    k.script("go", {
      turns: [
        calls(tool("c1", "alpha__count", {}), tool("c2", "beta__count", {})),
        calls(tool("x1", "alpha__throw_sync", {})),
        calls(tool("c3", "alpha__count", {}), tool("c4", "beta__count", {})),
        calls(
          tool("p1", "beta__probe", { path: join(k.projectDir, "agent.hcl"), kernel_pid: process.pid }),
          tool("p2", "beta__probe", { path: join(outside, "escape.txt"), kernel_pid: process.pid }),
          tool("p3", "beta__probe", { path: join(k.projectDir, "made.txt"), kernel_pid: process.pid }),
          tool("e1", "beta__env", {}),
        ),
        reply("done"),
      ],
    });
    let sandboxes: number[] = [];
    let hosts: number[] = [];
    const s = await k.kernel.startSession({ prompt: "[go] try" });
    // Both providers run once the first turn's calls have been answered.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && k.file(s.id).toolResults().length < 2)
      await new Promise((r) => setTimeout(r, 20));
    sandboxes = bwrapChildren();
    hosts = sandboxHostPids();
    expect(await s.idle()).toBe(SessionStatus.COMPLETED);

    // (a) Both providers in one sandbox: one bwrap child of the kernel, and it is the host.
    expect(sandboxes).toHaveLength(1);
    expect(hosts).toEqual(sandboxes);

    // (b) The crash is alpha's alone: reported once, alpha relaunched (its count starts
    // again), beta untouched (its count goes on, same thread).
    const r = results(k, s.id);
    const byCall = (name: string, n: number) => r.filter((x) => x.name === name)[n]!;
    expect(byCall("throw_sync", 0)).toMatchObject({ outcome: ToolErrorCategory.PROCESS_CRASHED });
    expect(String(byCall("throw_sync", 0).detail)).toContain("hazard: thrown from a timer");
    const counts = r
      .filter((x) => x.name === "count")
      .map((x) => x.detail as { count: number; threadId: number });
    expect(counts.map((c) => c.count).sort()).toEqual([1, 1, 1, 2]);
    const failures = k.logs.filter((l) => /plugin failed|keeps failing/.test(l.message));
    expect(failures.map((l) => l.fields?.["plugin"] ?? l.message)).toHaveLength(1);
    expect(failures[0]!.message).toContain("hazard: thrown from a timer");
    expect(k.logs.some((l) => /plugin failed/.test(l.message) && /beta/.test(JSON.stringify(l)))).toBe(false);
    // Still one host after the relaunch: the new thread joined it.
    expect(bwrapChildren()).toHaveLength(1);

    // (c) From inside a hosted thread: the kernel's /proc entry is not there, kernel-owned
    // files and everything outside the roots are read-only, the roots are writable, and
    // no capability is held; no secret in the host's or the thread's environment.
    const probes = r.filter((x) => x.name === "probe").map((x) => x.detail as Record<string, unknown>);
    expect(probes[0]).toMatchObject({
      wrote: false,
      environ: "hidden",
      capEff: "0000000000000000",
      seccomp: "2",
    });
    expect(probes[1]).toMatchObject({ wrote: false, environ: "hidden" });
    expect(probes[2]).toMatchObject({ wrote: true });
    expect(existsSync(join(outside, "escape.txt"))).toBe(false);
    expect(readFileSync(join(k.projectDir, "agent.hcl"), "utf8")).not.toContain("written by a hosted plugin");
    const hostEnv = probes[0]!["hostEnviron"] as string[];
    expect(hostEnv.join("\n")).not.toContain(SECRET);
    // Only what the host needs: PATH and its TMPDIR (and the PWD the filter's shell sets).
    const hostNames = hostEnv.map((v) => v.split("=")[0]!);
    expect(hostNames.filter((n) => !/^(PATH|TMPDIR|PWD)$/.test(n))).toEqual([]);
    const env = r.find((x) => x.name === "env")!;
    expect(JSON.stringify(env)).not.toContain(SECRET);

    // The host itself dies with calls in flight: every provider it ran is crashed and
    // relaunched (in a new host), each from scratch.
    k.script("die", {
      turns: [
        calls(tool("b1", "alpha__busy", { ms: 8_000 }), tool("b2", "beta__busy", { ms: 8_000 })),
        calls(tool("c5", "alpha__count", {}), tool("c6", "beta__count", {})),
        reply("recovered"),
      ],
    });
    const [host] = sandboxHostPids();
    const d = await k.kernel.startSession({ prompt: "[die] go" });
    // Both calls are recorded, then dispatched to their threads, which stay busy for 8 s.
    const recorded = Date.now() + 20_000;
    while (
      Date.now() < recorded &&
      k.file(d.id).events.filter((e) => e.kind === EventKind.TOOL_CALL).length < 2
    )
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 2_000));
    process.kill(host!, "SIGKILL");
    expect(await d.idle()).toBe(SessionStatus.COMPLETED);
    const after = results(k, d.id);
    expect(after.map((x) => [x.name, x.outcome])).toEqual([
      ["busy", ToolErrorCategory.PROCESS_CRASHED],
      ["busy", ToolErrorCategory.PROCESS_CRASHED],
      ["count", "result"],
      ["count", "result"],
    ]);
    expect(String(after[0]!.detail)).toMatch(/sandbox host process was killed by SIGKILL/);
    expect(after.slice(2).map((x) => (x.detail as { count: number }).count)).toEqual([1, 1]);
    // Nothing of the killed host is left: one host program runs, the new one.
    expect(hostPrograms()).toHaveLength(1);
    const relaunched = sandboxHostPids();
    expect(relaunched).toHaveLength(1);
    expect(relaunched[0]).not.toBe(host);
    expect(bwrapChildren()).toEqual(relaunched);

    await k.close();
    // Nothing outlives the providers: the host is gone with its last thread.
    await h.pool.shutdown();
    const end = Date.now() + 5_000;
    while (Date.now() < end && bwrapChildren().length > 0) await new Promise((r) => setTimeout(r, 20));
    expect(bwrapChildren()).toEqual([]);
    expect(sandboxHostPids()).toEqual([]);
    expect(hostPrograms()).toEqual([]);
  });
});
