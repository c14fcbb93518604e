// bash over the real plugin boundary: live output in order, one exit_status, output
// limits, timeouts, cancellation (SIGTERM then SIGKILL to the group, reported through
// the kernel's Log callback) and no orphaned processes.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { OutputStream, ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let dir: string;
let h: ToolHarness;

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ph-exec-")));
  h = new ToolHarness({ executable: MAIN, name: "exec" });
  // These tests follow the command's processes by pid on the host, which a PID namespace
  // hides: they run unconfined. The sandbox has its own tests (sandbox.test.ts).
  await h.configure({ kill_grace_ms: 300, max_output_bytes: 4096, sandbox: "off" });
});

afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

/** True while `pid` runs (zombies count as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

async function gone(pid: number, ms = 3_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !alive(pid);
}

/** Resolves once `path` exists (the command's side of a handshake). */
async function fileAppears(path: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > end) throw new Error(`${path} did not appear`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const bash = (command: string, extra: Record<string, unknown> = {}, cwd = dir) =>
  h.invoke("bash", { command, ...extra } as never, { cwd });

describe("bash", () => {
  it("streams output live and in order, then one exit_status, then the result", async () => {
    const marker = join(dir, "go");
    let chunksBeforeMarker = 0;
    let release!: () => void;
    const sawFirst = new Promise<void>((r) => {
      release = r;
    });
    const run = h.invoke(
      "bash",
      {
        command: `for i in 1 2 3; do echo "line $i"; done; while [ ! -e ${marker} ]; do sleep 0.01; done; echo after`,
      },
      {
        cwd: dir,
        onEvent: (ev) => {
          if (ev.event.case === "outputChunk" && !existsSync(marker)) {
            chunksBeforeMarker++;
            release();
          }
        },
      },
    );
    // The first lines arrive while the command is still blocked on the marker.
    await sawFirst;
    writeFileSync(marker, "");
    const res = await run;
    expect(chunksBeforeMarker).toBeGreaterThan(0);
    expect(res.output).toBe("line 1\nline 2\nline 3\nafter\n");
    const kinds = res.events.map((e) => e.event.case);
    expect(kinds.filter((k) => k === "exitStatus")).toHaveLength(1);
    expect(kinds.at(-1)).toBe("result");
    expect(kinds.at(-2)).toBe("exitStatus");
    expect(kinds.slice(0, -2).every((k) => k === "outputChunk")).toBe(true);
    expect(res.result).toMatchObject({
      exit_code: 0,
      output: "line 1\nline 2\nline 3\nafter\n",
      truncated: false,
    });
  });

  it("reports non-zero exits and stderr as an ordinary result", async () => {
    const res = await bash("echo out; echo err >&2; exit 3");
    expect(res.exitStatus?.exitCode).toBe(3);
    expect(res.result).toMatchObject({ exit_code: 3, output: expect.stringContaining("err") });
    const streams = res.events.flatMap((e) => (e.event.case === "outputChunk" ? [e.event.value.stream] : []));
    expect(streams).toContain(OutputStream.STDERR);
    expect(streams).toContain(OutputStream.STDOUT);
  });

  it("runs in call_context.working_directory with a closed stdin", async () => {
    mkdirSync(join(dir, "wd"), { recursive: true });
    const res = await bash("pwd; cat; echo done", {}, join(dir, "wd"));
    expect(res.result!["output"]).toBe(`${join(dir, "wd")}\ndone\n`);
  });

  it("cuts output at max_output_bytes with a truncation notice", async () => {
    const res = await bash("head -c 10000 /dev/zero | tr '\\0' x");
    expect(res.result).toMatchObject({ truncated: true, dropped_bytes: 10000 - 4096 });
    expect(res.output).toMatch(
      /\[output truncated: 5904 more bytes were dropped after the 4096-byte limit\]/,
    );
    expect(res.output.replace(/\n\[output truncated.*\]\n$/, "")).toBe("x".repeat(4096));
  });

  it("times out: SIGTERM to the group, partial output and exit_status reported, then a timeout error", async () => {
    const res = await bash("echo started; sleep 30", { timeout_ms: 300 });
    expect(res.output).toMatch(/^started\n/);
    expect(res.output).toMatch(/timed out after 300 ms: SIGTERM sent to the process group/);
    expect(res.exitStatus).toMatchObject({ exitCode: 143, signal: "SIGTERM" });
    expect(res.events.some((e) => e.event.case === "partialResult")).toBe(true);
    expect(res.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect(res.error?.retryable).toBe(true);
  });

  it("escalates to SIGKILL when the command ignores SIGTERM", async () => {
    const res = await bash("trap '' TERM; echo $$; while true; do sleep 0.05; done", { timeout_ms: 200 });
    expect(res.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect(res.error?.message).toMatch(/then SIGKILL/);
    expect(await gone(Number(res.output.split("\n")[0]))).toBe(true);
  });

  it("cancels: kills the whole process group, reports what happened, leaves no orphans", async () => {
    const ready = join(dir, "ready");
    const ac = new AbortController();
    const callId = "cancel-me-1";
    const res = await h.invoke(
      "bash",
      { command: `sleep 300 & echo "bg $!"; touch ${ready}; wait` },
      {
        cwd: dir,
        callId,
        signal: ac.signal,
        onEvent: (ev) => {
          if (ev.event.case === "outputChunk") void fileAppears(ready).then(() => ac.abort());
        },
      },
    );
    expect(res.aborted).toBe(true);
    expect(res.result).toBeUndefined();
    const bg = Number(/bg (\d+)/.exec(res.output)![1]);
    expect(await gone(bg)).toBe(true);
    const report = await h.kernel.waitForLog((l) => l.fields["call_id"] === callId, 3_000);
    expect(report?.message).toBe("tool call cancelled");
    expect(report?.fields["report"]).toMatchObject({
      command_started: true,
      sigterm_sent: true,
      exited: true,
      signal: "SIGTERM",
      output_bytes_streamed: res.output.length,
    });
    // The plugin itself carries on.
    expect((await bash("echo still here")).result!["output"]).toBe("still here\n");
  });

  it("stops background processes a command leaves behind", async () => {
    const res = await bash("sleep 300 & echo $!");
    expect(res.result!["exit_code"]).toBe(0);
    expect(await gone(Number(String(res.result!["output"]).trim()))).toBe(true);
  });

  it("takes a command's whole tree down when the plugin itself is killed (SIGKILL, no cleanup)", async () => {
    const victim = new ToolHarness({ executable: MAIN, name: "exec-victim" });
    try {
      // Unsandboxed: the watchdog alone must do it (the sandbox has its own test, sandbox.test.ts).
      await victim.configure({ sandbox: "off" });
      const pids = join(dir, "tree-pids");
      const ready = join(dir, "tree-ready");
      // A shell, a background subshell with two children, another background job and a
      // nohup'd one: everything in the command's process group.
      const command = [
        `(sleep 301 & echo $! >> ${pids}; sleep 302 & echo $! >> ${pids}; wait) &`,
        `echo $! >> ${pids}`,
        `sleep 303 & echo $! >> ${pids}`,
        `nohup sleep 304 >/dev/null 2>&1 & echo $! >> ${pids}`,
        `echo $$ >> ${pids}`,
        `touch ${ready}`,
        "wait",
      ].join("\n");
      const call = victim.invoke("bash", { command }, { cwd: dir });
      call.catch(() => {});
      await fileAppears(ready);
      // The background subshell records its children on its own schedule.
      const lines = () => readFileSync(pids, "utf8").trim().split("\n");
      const until = Date.now() + 5_000;
      while (lines().length < 6 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      const tree = lines().map(Number);
      expect(tree).toHaveLength(6);
      for (const pid of tree) expect(alive(pid)).toBe(true);
      const plugin = victim.plugin.host.pid!;
      process.kill(plugin, "SIGKILL"); // the plugin alone, as the OOM killer would
      expect(await gone(plugin)).toBe(true);
      for (const pid of tree) expect(await gone(pid), `pid ${pid} outlived its plugin`).toBe(true);
    } finally {
      await victim.close();
    }
  });

  it("takes a command's whole tree down when its worker thread is ended (worker transport)", async () => {
    // On the worker transport the plugin's pid is the kernel's: the thread ending (crash,
    // watchdog, heap limit) closes the lifeline, and the watchdog alone must do the rest.
    const victim = new ToolHarness({ executable: MAIN, name: "exec-worker-victim", isolation: "worker" });
    try {
      await victim.configure({ sandbox: "off" });
      expect(victim.plugin.host.isolation).toBe("worker");
      const pids = join(dir, "worker-tree-pids");
      const ready = join(dir, "worker-tree-ready");
      const command = [
        `(sleep 305 & echo $! >> ${pids}; wait) &`,
        `echo $! >> ${pids}`,
        `nohup sleep 306 >/dev/null 2>&1 & echo $! >> ${pids}`,
        `echo $$ >> ${pids}`,
        `touch ${ready}`,
        "wait",
      ].join("\n");
      const call = victim.invoke("bash", { command }, { cwd: dir });
      call.catch(() => {});
      await fileAppears(ready);
      const lines = () => readFileSync(pids, "utf8").trim().split("\n");
      const until = Date.now() + 5_000;
      while (lines().length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      const tree = lines().map(Number);
      expect(tree).toHaveLength(4);
      for (const pid of tree) expect(alive(pid)).toBe(true);
      victim.plugin.host.kill(); // terminate(): no cleanup code of the plugin runs
      await expect(call).rejects.toThrow();
      for (const pid of tree) expect(await gone(pid), `pid ${pid} outlived its worker`).toBe(true);
    } finally {
      await victim.close();
    }
  });

  it("classifies bad calls", async () => {
    expect((await bash("")).error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect((await h.invoke("bash", {}, { cwd: dir })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
    expect((await bash("true", { timeout_ms: 10_000_000 })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
    expect((await bash("true", {}, "")).error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect((await bash("true", {}, join(dir, "missing"))).error?.category).toBe(ToolErrorCategory.NOT_FOUND);
  });

  it("denies working directories outside configured roots and reports a shell that cannot start", async () => {
    const other = new ToolHarness({ executable: MAIN, name: "exec-roots" });
    try {
      mkdirSync(join(dir, "allowed"), { recursive: true });
      await other.configure({ roots: [join(dir, "allowed")], shell: "/nonexistent/shell" });
      const denied = await other.invoke("bash", { command: "true" }, { cwd: dir });
      expect(denied.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      const broken = await other.invoke("bash", { command: "true" }, { cwd: join(dir, "allowed") });
      expect(broken.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
      expect(broken.error?.message).toMatch(/cannot start \/nonexistent\/shell/);
      // An omitted roots attribute reaches Configure as []: no restriction, not an error.
      await other.configure({ roots: [] });
      const anywhere = await other.invoke("bash", { command: "true" }, { cwd: dir });
      expect(anywhere.error).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it("previews the command line without running it", async () => {
    const flag = join(dir, "ran");
    const preview = await h.preview("bash", { command: `touch ${flag}`, description: "make a flag" }, dir);
    expect(existsSync(flag)).toBe(false);
    const group = preview?.node.case === "group" ? preview.node.value.children : [];
    const code = group.find((c) => c.node.case === "codeBlock");
    expect(code?.node.value).toMatchObject({ content: `touch ${flag}`, language: "bash" });
  });

  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks, cancellation included over the %s transport",
    async (isolation) => {
      const report = await runConformance({
        isolation,
        executable: MAIN,
        config: { kill_grace_ms: 300 },
        samples: [
          { tool: "bash", arguments: { command: "echo hi; exit 2" }, expect: "result" },
          { tool: "bash", arguments: { command: "sleep 5", timeout_ms: 200 }, expect: "timeout" },
          { tool: "bash", arguments: { command: "echo start; sleep 30" }, cancel: true },
        ],
      });
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      expect(report.results.find((r) => r.id.startsWith("tool.cancel.bash"))?.status).toBe("pass");
      expect(report.exitCode).toBe(0);
      expect(report.isolation).toBe(isolation);
    },
  );
});
