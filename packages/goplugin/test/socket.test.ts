import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  assertSocketPath,
  clearStaleSocket,
  maxSocketPathBytes,
  newSocketPath,
  SocketPathTooLongError,
} from "../src/index.ts";

const dir = mkdtempSync(join(tmpdir(), "ph-sock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("socket paths", () => {
  it("knows the platform limits", () => {
    expect(maxSocketPathBytes("linux")).toBe(107);
    expect(maxSocketPathBytes("darwin")).toBe(103);
  });

  it("accepts a path at the limit and rejects one byte more, counting bytes not characters", () => {
    expect(() => assertSocketPath(`/${"a".repeat(106)}`, "linux")).not.toThrow();
    expect(() => assertSocketPath(`/${"a".repeat(107)}`, "linux")).toThrow(SocketPathTooLongError);
    expect(() => assertSocketPath(`/${"é".repeat(54)}`, "linux")).toThrow(SocketPathTooLongError);
    expect(() => assertSocketPath(`/${"a".repeat(103)}`, "darwin")).toThrow(
      /over this platform's limit of 103/,
    );
  });

  it("makes fresh, distinct names inside the directory", () => {
    const a = newSocketPath(dir);
    const b = newSocketPath(dir);
    expect(a.startsWith(join(dir, "plugin"))).toBe(true);
    expect(a).not.toBe(b);
    expect(() => newSocketPath(join(dir, "d".repeat(120)))).toThrow(SocketPathTooLongError);
  });

  it("removes a stale socket left by a killed process", async () => {
    const path = join(dir, "stale.sock");
    const child = spawn(process.execPath, [
      "-e",
      `require("net").createServer().listen(${JSON.stringify(path)}, () => console.log("up"))`,
    ]);
    await new Promise<void>((r) => child.stdout.once("data", () => r()));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    expect(existsSync(path)).toBe(true);
    await clearStaleSocket(path);
    expect(existsSync(path)).toBe(false);
    await clearStaleSocket(path); // nothing there: fine
  });

  it("refuses to remove a live socket or a regular file", async () => {
    const live = join(dir, "live.sock");
    const server = createServer();
    await new Promise<void>((r) => server.listen(live, () => r()));
    try {
      await expect(clearStaleSocket(live)).rejects.toThrow(/in use/);
    } finally {
      server.close();
    }
    const file = join(dir, "file");
    writeFileSync(file, "x");
    await expect(clearStaleSocket(file)).rejects.toThrow(/not a socket/);
  });
});
