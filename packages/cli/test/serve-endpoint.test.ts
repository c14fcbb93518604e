// The served kernel's runtime directory and records: private or refused; records of dead
// servers are dropped; only this user's private records are believed.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  ensurePrivateDir,
  liveServers,
  type ServerRecord,
  socketPath,
  writeRecord,
} from "../src/serve/endpoint.ts";
import { loopbackHost } from "../src/serve/server.ts";

const made: string[] = [];
const scratch = () => {
  const d = mkdtempSync(join(tmpdir(), "agent-serve-"));
  made.push(d);
  return d;
};
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("the serve runtime directory", () => {
  it("is created 0700, and one open to others or a symlink is refused", () => {
    const base = scratch();
    const dir = join(base, "agent");
    ensurePrivateDir(dir);
    const open = join(base, "open");
    mkdirSync(open, { mode: 0o755 });
    chmodSync(open, 0o755);
    expect(() => ensurePrivateDir(open)).toThrow(/open to other users \(mode 755\)/);
    const link = join(base, "link");
    symlinkSync(dir, link);
    expect(() => ensurePrivateDir(link)).toThrow(/not a directory/);
  });

  it("lists live servers only, and ignores records others could have written", () => {
    const run = scratch();
    const env = { XDG_RUNTIME_DIR: run };
    const dir = ensurePrivateDir(join(run, "agent"));
    const record = (projectDir: string, pid: number): ServerRecord => ({
      version: 1,
      pid,
      projectDir,
      socket: socketPath(dir, projectDir),
      token: "t",
      startedAt: new Date().toISOString(),
    });
    writeRecord(dir, record("/live", process.pid));
    writeRecord(dir, record("/dead", 2 ** 22 + 12345));
    const loose = join(dir, "serve-0123456789abcdef.json");
    writeFileSync(loose, JSON.stringify(record("/loose", process.pid)), { mode: 0o644 });
    chmodSync(loose, 0o644);
    expect(liveServers(env).map((r) => r.projectDir)).toEqual(["/live"]);
    // The dead server's record is gone.
    expect(liveServers(env)).toHaveLength(1);
  });

  it("listens on loopback only", () => {
    expect(loopbackHost("localhost")).toBe("127.0.0.1");
    expect(loopbackHost("::1")).toBe("::1");
    expect(() => loopbackHost("0.0.0.0")).toThrow(/loopback only/);
    expect(() => loopbackHost("192.168.1.2")).toThrow(/loopback only/);
  });
});
