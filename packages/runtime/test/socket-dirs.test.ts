// Socket directories of a kernel that was killed are removed by the next one; those of
// live processes never are.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeSocketDir, sweepStaleSocketDirs } from "../src/socket-dirs.ts";

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
