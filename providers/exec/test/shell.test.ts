// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell source, where ${ is parameter expansion.
// The stateful shell over the real plugin boundary: a session's working directory and
// exported variables carry over between bash calls (through exit and timeouts), stdin
// from an argument, a pseudo-terminal on request, and background processes started,
// read incrementally, written to, listed and stopped, with nothing left running.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runConformance, ToolHarness } from "@pluggableharness/conformance";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../src/sandbox.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let dir: string;
let h: ToolHarness;

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), "ph-shell-")));
  mkdirSync(join(dir, "sub", "deeper"), { recursive: true });
  h = new ToolHarness({ executable: MAIN, name: "exec-shell" });
  // Unconfined: the processes are followed by pid on the host (the sandbox case is below).
  await h.configure({ kill_grace_ms: 300, max_output_bytes: 4096, sandbox: "off" });
});

afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

let sessions = 0;
const newSession = () => `01SHELLTEST${String(++sessions).padStart(15, "0")}`;

async function run(sessionId: string, tool: string, args: Record<string, unknown>) {
  const inv = await h.invoke(tool, args as never, { cwd: dir, sessionId });
  return inv;
}

async function bash(sessionId: string, command: string, extra: Record<string, unknown> = {}) {
  const inv = await run(sessionId, "bash", { command, ...extra });
  if (!inv.result) throw new Error(`bash failed: ${JSON.stringify(inv.error)}`);
  return inv.result as { exit_code: number; output: string };
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** Live processes in process group `pgid` (the table read from /proc). */
function groupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") found.push(Number(name));
    } catch {}
  }
  return found;
}

describe("stateful bash", () => {
  it("keeps the working directory and exported variables between calls of one session", async () => {
    const s = newSession();
    await bash(s, "cd sub && export GREETING='hello world' && LOCAL_ONLY=1");
    const r = await bash(s, 'pwd; echo "$GREETING"; echo "local=${LOCAL_ONLY:-unset}"');
    expect(r.output).toBe(`${join(dir, "sub")}\nhello world\nlocal=unset\n`);
    // unset carries over too
    await bash(s, "unset GREETING; cd deeper");
    expect((await bash(s, 'pwd; echo "${GREETING:-gone}"')).output).toBe(
      `${join(dir, "sub", "deeper")}\ngone\n`,
    );
    // Another session starts fresh.
    expect((await bash(newSession(), 'pwd; echo "${GREETING:-none}"')).output).toBe(`${dir}\nnone\n`);
  });

  it("survives a command that exits the shell, and one that hangs until its timeout", async () => {
    const s = newSession();
    const exited = await bash(s, "cd sub; export AFTER_EXIT=yes; exit 7");
    expect(exited.exit_code).toBe(7);
    expect((await bash(s, 'pwd; echo "$AFTER_EXIT"')).output).toBe(`${join(dir, "sub")}\nyes\n`);
    // A hanging command is stopped at its deadline (SIGTERM): like a shell whose command
    // was interrupted, the next call is where the shell was when it stopped.
    const hung = await run(s, "bash", { command: "cd deeper; export HUNG=1; sleep 30", timeout_ms: 300 });
    expect(hung.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect((await bash(s, 'pwd; echo "${HUNG:-no}"; echo "$AFTER_EXIT"')).output).toBe(
      `${join(dir, "sub", "deeper")}\n1\nyes\n`,
    );
    // A shell that ignores SIGTERM is killed (SIGKILL) before it can say where it was: the
    // state before it stays.
    const killed = await run(s, "bash", {
      command: "trap '' TERM; cd ..; export KILLED=1; while :; do sleep 0.05; done",
      timeout_ms: 300,
    });
    expect(killed.error?.category).toBe(ToolErrorCategory.TIMEOUT);
    expect((await bash(s, 'pwd; echo "${KILLED:-no}"')).output).toBe(`${join(dir, "sub", "deeper")}\nno\n`);
  });

  it("resets a working directory outside the project, saying so", async () => {
    const s = newSession();
    const r = await bash(s, "cd /");
    expect(r.output).toContain("outside the project");
    expect((await bash(s, "pwd")).output).toBe(`${dir}\n`);
    // A directory that was removed meanwhile: back to the project, with a notice.
    await bash(s, "mkdir -p gone-soon && cd gone-soon");
    rmSync(join(dir, "gone-soon"), { recursive: true });
    const back = await bash(s, "pwd");
    expect(back.output).toBe(
      `[working directory ${join(dir, "gone-soon")} is gone; back in ${dir}]\n${dir}\n`,
    );
  });

  it("gives the stdin argument to the command, else end-of-file", async () => {
    const s = newSession();
    expect((await bash(s, "tr a-z A-Z", { stdin: "hello\nthere\n" })).output).toBe("HELLO\nTHERE\n");
    expect((await bash(s, "cat; echo eof")).output).toBe("eof\n");
  });

  it("runs the command on a pseudo-terminal when asked", async () => {
    const s = newSession();
    const plain = await bash(s, "[ -t 0 ] && [ -t 1 ] && echo tty || echo no-tty");
    expect(plain.output).toBe("no-tty\n");
    await bash(s, "cd sub; export IN_PTY=kept");
    const pty = await bash(s, '[ -t 0 ] && [ -t 1 ] && echo tty; pwd; echo "$IN_PTY"; exit 3', { pty: true });
    expect(pty.exit_code).toBe(3);
    expect(pty.output.replaceAll("\r\n", "\n")).toBe(`tty\n${join(dir, "sub")}\nkept\n`);
    // State left by a PTY command carries over as well.
    await bash(s, "cd deeper; export FROM_PTY=1", { pty: true });
    expect((await bash(s, 'pwd; echo "$FROM_PTY"')).output).toBe(`${join(dir, "sub", "deeper")}\n1\n`);
  });
});

describe("background processes", () => {
  it("starts a server, reads its output incrementally, stops it, and leaves nothing running", async () => {
    const s = newSession();
    await bash(s, "cd sub && export SERVER_NAME=bg-test");
    const server = [
      "const http = require('node:http');",
      "const srv = http.createServer((q, r) => { console.log('request', q.url); r.end(process.env.SERVER_NAME); });",
      "srv.listen(0, '127.0.0.1', () => console.log('listening', srv.address().port, process.cwd()));",
    ].join(" ");
    const started = await run(s, "background_start", {
      command: `${process.execPath} -e "${server}"`,
      description: "test server",
    });
    const { id, pid, cwd } = started.result as { id: string; pid: number; cwd: string };
    expect(cwd).toBe(join(dir, "sub"));
    expect(alive(pid)).toBe(true);
    const first = (await run(s, "background_read", { id, wait_ms: 10_000 })).result as {
      output: string;
      running: boolean;
    };
    expect(first.running).toBe(true);
    const m = /listening (\d+) (.*)\n/.exec(first.output);
    expect(m?.[2]).toBe(join(dir, "sub"));
    const body = await (await fetch(`http://127.0.0.1:${m![1]}/hello`)).text();
    expect(body).toBe("bg-test");
    // Only what is new since the last read.
    const second = (await run(s, "background_read", { id, wait_ms: 10_000 })).result as { output: string };
    expect(second.output).toBe("request /hello\n");
    const empty = (await run(s, "background_read", { id })).result as { output: string };
    expect(empty.output).toBe("");
    // Listed as running; another session does not see it.
    const list = (await run(s, "background_list", {})).result as {
      processes: Array<Record<string, unknown>>;
    };
    expect(list.processes).toEqual([expect.objectContaining({ id, running: true, pid, unread_bytes: 0 })]);
    expect(
      ((await run(newSession(), "background_list", {})).result as { processes: unknown[] }).processes,
    ).toEqual([]);
    const foreign = await run(newSession(), "background_read", { id });
    expect(foreign.error?.category).toBe(ToolErrorCategory.NOT_FOUND);

    const stopped = (await run(s, "background_stop", { id })).result as Record<string, unknown>;
    expect(stopped).toMatchObject({ id, already_exited: false, signal: "SIGTERM", exit_code: 143 });
    // Nothing of its process group is left in the process table.
    expect(alive(pid)).toBe(false);
    expect(groupMembers(pid)).toEqual([]);
    const after = (await run(s, "background_list", {})).result as {
      processes: Array<Record<string, unknown>>;
    };
    expect(after.processes).toEqual([expect.objectContaining({ id, running: false, exit_code: 143 })]);
  });

  it("writes to a process's stdin, reports its exit, and keeps only the newest output when a reader falls behind", async () => {
    const s = newSession();
    const started = await run(s, "background_start", {
      command: 'while read -r line; do echo "got $line"; done; echo bye; exit 4',
      keep_stdin_open: true,
      stdin: "one\n",
    });
    const { id } = started.result as { id: string };
    expect(
      ((await run(s, "background_read", { id, wait_ms: 5_000 })).result as { output: string }).output,
    ).toBe("got one\n");
    expect((await run(s, "background_write", { id, input: "two\n", close: true })).result).toEqual({
      id,
      bytes: 4,
    });
    let out = "";
    let res: Record<string, unknown> = {};
    for (let i = 0; i < 50 && res["running"] !== false; i++) {
      res = (await run(s, "background_read", { id, wait_ms: 2_000 })).result as Record<string, unknown>;
      out += String(res["output"]);
    }
    expect(out).toBe("got two\nbye\n");
    expect(res).toMatchObject({ running: false, exit_code: 4 });
    const late = await run(s, "background_write", { id, input: "x" });
    expect(late.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
    expect((await run(s, "background_stop", { id })).result).toMatchObject({
      already_exited: true,
      exit_code: 4,
    });

    // 1.5 MiB of output against the 1 MiB buffer: the oldest is dropped and counted.
    const noisy = await run(s, "background_start", {
      command: "head -c 1572864 /dev/zero | tr '\\0' x; echo; echo END",
    });
    const nid = (noisy.result as { id: string }).id;
    let total = 0;
    let dropped = 0;
    let tail = "";
    for (let i = 0; i < 100; i++) {
      const r = (await run(s, "background_read", { id: nid, wait_ms: 2_000, max_bytes: 2_000_000 }))
        .result as {
        output: string;
        running: boolean;
        dropped_bytes: number;
      };
      total += r.output.length;
      dropped += r.dropped_bytes;
      // The end may arrive in pieces ("…x" in one read, "\nEND\n" in the next): keep the tail
      // of everything read.
      tail = (tail + r.output).slice(-64);
      if (!r.running) {
        const last = (await run(s, "background_read", { id: nid, max_bytes: 2_000_000 })).result as {
          output: string;
        };
        total += last.output.length;
        tail = (tail + last.output).slice(-64);
        break;
      }
    }
    expect(tail.endsWith("x\nEND\n")).toBe(true);
    expect(total + dropped).toBe(1572864 + 5);
  });

  it("leaves no background process behind when the plugin is killed outright", async () => {
    const victim = new ToolHarness({ executable: MAIN, name: "exec-bg-victim" });
    try {
      await victim.configure({ sandbox: "off" });
      const s = newSession();
      const inv = await victim.invoke(
        "background_start",
        { command: "sleep 311 & sleep 312 & wait" },
        { cwd: dir, sessionId: s },
      );
      const pid = (inv.result as { pid: number }).pid;
      const until = Date.now() + 3_000;
      while (groupMembers(pid).length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
      const members = groupMembers(pid);
      expect(members.length).toBeGreaterThanOrEqual(3);
      process.kill(victim.plugin.host.pid!, "SIGKILL");
      const end = Date.now() + 5_000;
      while (groupMembers(pid).length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(groupMembers(pid)).toEqual([]);
    } finally {
      await victim.close();
    }
  });

  it("stops every background process when the plugin shuts down (the session ends)", async () => {
    const p = new ToolHarness({ executable: MAIN, name: "exec-bg-shutdown" });
    await p.configure({ sandbox: "off" });
    const inv = await p.invoke(
      "background_start",
      { command: "sleep 313" },
      { cwd: dir, sessionId: newSession() },
    );
    const pid = (inv.result as { pid: number }).pid;
    expect(alive(pid)).toBe(true);
    await p.close();
    const end = Date.now() + 5_000;
    while (groupMembers(pid).length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(groupMembers(pid)).toEqual([]);
  });
});

describe.skipIf(!probeSandbox().ok)("stateful shell in the bubblewrap sandbox", () => {
  it("keeps cwd and variables, runs a PTY and a background process inside the sandbox", async () => {
    const box = new ToolHarness({ executable: MAIN, name: "exec-shell-box" });
    try {
      await box.configure({ sandbox: "required", kill_grace_ms: 300 });
      const s = newSession();
      const call = async (tool: string, args: Record<string, unknown>) =>
        (await box.invoke(tool, args as never, { cwd: dir, sessionId: s })).result as Record<string, unknown>;
      await call("bash", { command: "cd sub && export BOXED=1" });
      // Still confined: outside the project nothing is writable, and the PID namespace hides the host.
      const r = await call("bash", {
        command: 'pwd; echo "$BOXED"; touch /usr/x 2>/dev/null || echo ro; echo $$',
      });
      expect(r["output"]).toBe(`${join(dir, "sub")}\n1\nro\n2\n`);
      const pty = await call("bash", { command: "[ -t 1 ] && echo tty; pwd", pty: true });
      expect(String(pty["output"]).replaceAll("\r\n", "\n")).toBe(`tty\n${join(dir, "sub")}\n`);
      const bg = await call("background_start", { command: 'echo "bg in $(pwd) $BOXED"; sleep 30' });
      const read = await call("background_read", { id: bg["id"], wait_ms: 5_000 });
      expect(read["output"]).toBe(`bg in ${join(dir, "sub")} 1\n`);
      const stop = await call("background_stop", { id: bg["id"] });
      expect(stop["already_exited"]).toBe(false);
      expect(groupMembers(Number(bg["pid"]))).toEqual([]);
    } finally {
      await box.close();
    }
  });
});

describe("conformance", () => {
  it("passes agent conform's tool-provider checks for the shell and background operations", async () => {
    const report = await runConformance({
      isolation: "process",
      executable: MAIN,
      config: { kill_grace_ms: 300, sandbox: "off" },
      samples: [
        { tool: "bash", arguments: { command: "cd /tmp; echo hi", stdin: "x" }, expect: "result" },
        { tool: "bash", arguments: { command: "tty", pty: true }, expect: "result" },
        { tool: "background_start", arguments: { command: "sleep 2" }, expect: "result" },
        { tool: "background_list", arguments: {}, expect: "result" },
        { tool: "background_read", arguments: { id: "bg-none" }, expect: "not_found" },
        { tool: "background_write", arguments: { id: "bg-none", input: "x" }, expect: "not_found" },
        { tool: "background_stop", arguments: { id: "bg-none" }, expect: "not_found" },
      ],
    });
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    for (const t of [
      "background_start",
      "background_list",
      "background_read",
      "background_write",
      "background_stop",
    ])
      expect(
        report.results.some((r) => r.id.includes(t) && r.status === "pass"),
        t,
      ).toBe(true);
    expect(report.exitCode).toBe(0);
  });
});
