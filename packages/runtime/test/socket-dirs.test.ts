// Socket directories of a kernel that was killed are removed by the next one; those of
// live processes never are. They live in the agent's private runtime directory when it is
// usable, else in the temp directory (docs/security/sockets.md).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { agentRuntimeDir, makeSocketDir, socketBase, sweepStaleSocketDirs } from "../src/socket-dirs.ts";

let base: string;
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe("plugin socket directories", () => {
  it("are named after the kernel's pid, and a dead kernel's are swept on the next launch", () => {
    base = mkdtempSync(join(tmpdir(), "sockdirs-"));
    const deadPid = spawnSync(process.execPath, ["-e", "0"]).pid!;
    const dead = join(base, `ph-${deadPid}-abcDEF`);
    const live = join(base, `ph-${process.ppid}-ghiJKL`);
    const unrelated = join(base, "ph-notapid");
    for (const d of [dead, live, unrelated]) mkdirSync(d);
    mkdirSync(join(dead, "inner"));
    const mine = makeSocketDir(base);
    expect(mine).toMatch(new RegExp(`/ph-${process.pid}-[A-Za-z0-9]{6}$`));
    expect(existsSync(dead)).toBe(false);
    expect([live, unrelated, mine].every((d) => existsSync(d))).toBe(true);
    // Once per process and base: later launches do not rescan.
    mkdirSync(dead);
    expect(sweepStaleSocketDirs(base)).toEqual([]);
  });
});

describe("the socket base", () => {
  it("is the agent's runtime directory: AGENT_RUNTIME_DIR, else $XDG_RUNTIME_DIR/agent, else /tmp/agent-<uid>", () => {
    base = mkdtempSync(join(tmpdir(), "sockbase-"));
    expect(agentRuntimeDir({ AGENT_RUNTIME_DIR: "/r/a", XDG_RUNTIME_DIR: "/x" })).toBe("/r/a");
    expect(agentRuntimeDir({ AGENT_RUNTIME_DIR: "relative", XDG_RUNTIME_DIR: "/x" })).toBe("/x/agent");
    expect(agentRuntimeDir({})).toBe(`/tmp/agent-${process.getuid!()}`);
    // Made 0700 when missing, and used.
    const fresh = join(base, "fresh");
    expect(socketBase({ AGENT_RUNTIME_DIR: fresh })).toBe(fresh);
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
  });

  it("falls back to the temp directory rather than use a directory that is not private or too deep", () => {
    base = mkdtempSync(join(tmpdir(), "sockbase-"));
    const open = join(base, "open");
    mkdirSync(open);
    chmodSync(open, 0o755);
    expect(socketBase({ AGENT_RUNTIME_DIR: open })).toBe(tmpdir());
    const target = join(base, "target");
    mkdirSync(target, { mode: 0o700 });
    const link = join(base, "link");
    symlinkSync(target, link);
    expect(socketBase({ AGENT_RUNTIME_DIR: link })).toBe(tmpdir());
    const deep = join(base, "d".repeat(100));
    expect(socketBase({ AGENT_RUNTIME_DIR: deep })).toBe(tmpdir());
  });
});
