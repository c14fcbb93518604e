import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../..");
const committed = join(root, "packages/protocol/src/gen");

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listFiles(full));
    else out.push(full);
  }
  return out.sort();
}

describe("generated protocol code", () => {
  const scratch = mkdtempSync(join(tmpdir(), "ph-gen-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("is up to date with proto/ (run `npm run gen` if this fails)", () => {
    execFileSync(process.execPath, [join(root, "scripts/gen.ts"), scratch], { cwd: root, stdio: "pipe" });
    const fresh = join(scratch, "packages/protocol/src/gen");
    const want = listFiles(fresh).map((f) => relative(fresh, f));
    const have = listFiles(committed).map((f) => relative(committed, f));
    expect(have).toEqual(want);
    for (const file of want) {
      expect(readFileSync(join(committed, file), "utf8"), file).toBe(readFileSync(join(fresh, file), "utf8"));
    }
    // buf generate with protoc-gen-es takes ~8 s of CPU; on two loaded cores that is past
    // the default 30 s.
  }, 120_000);

  it("passes buf lint and buf format", () => {
    const buf = join(root, "node_modules/.bin/buf");
    expect(() => execFileSync(buf, ["lint"], { cwd: root, stdio: "pipe" })).not.toThrow();
    expect(() =>
      execFileSync(buf, ["format", "--diff", "--exit-code"], { cwd: root, stdio: "pipe" }),
    ).not.toThrow();
  }, 60_000);
});
