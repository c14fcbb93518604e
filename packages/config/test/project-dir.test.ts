// findProjectDir: agent.hcl is looked for upward from the starting directory, as git looks
// for .git, but never above the repository the directory belongs to.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findProjectDir } from "../src/project-dir.ts";

const base = mkdtempSync(join(tmpdir(), "project-dir-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

function tree(paths: string[]): string {
  const root = mkdtempSync(join(base, "t-"));
  for (const p of paths) {
    if (p.endsWith("/")) mkdirSync(join(root, p), { recursive: true });
    else {
      mkdirSync(join(root, p, ".."), { recursive: true });
      writeFileSync(join(root, p), "");
    }
  }
  return root;
}

describe("findProjectDir", () => {
  it("finds the agent.hcl of the repository from a subdirectory", () => {
    const root = tree(["repo/.git/", "repo/agent.hcl", "repo/src/lib/"]);
    expect(findProjectDir(join(root, "repo/src/lib"))).toEqual({
      dir: join(root, "repo"),
      file: join(root, "repo/agent.hcl"),
    });
  });

  it("prefers the nearest agent.hcl", () => {
    const root = tree(["repo/.git/", "repo/agent.hcl", "repo/pkg/agent.hcl", "repo/pkg/src/"]);
    expect(findProjectDir(join(root, "repo/pkg/src")).dir).toBe(join(root, "repo/pkg"));
  });

  it("stops at the repository root: an agent.hcl above it is not picked up", () => {
    const root = tree(["agent.hcl", "repo/.git/", "repo/src/"]);
    expect(findProjectDir(join(root, "repo/src"))).toEqual({ dir: join(root, "repo/src"), file: undefined });
  });

  it("stops at a nested repository (a submodule's .git file counts)", () => {
    const root = tree(["repo/.git/", "repo/agent.hcl", "repo/vendor/lib/.git", "repo/vendor/lib/src/"]);
    expect(findProjectDir(join(root, "repo/vendor/lib/src")).file).toBeUndefined();
  });

  it("without a repository, searches up to the filesystem root", () => {
    const root = tree(["proj/agent.hcl", "proj/a/b/c/"]);
    expect(findProjectDir(join(root, "proj/a/b/c")).dir).toBe(join(root, "proj"));
  });

  it("does not look above a directory that does not exist", () => {
    const root = tree(["repo/.git/", "repo/agent.hcl"]);
    expect(findProjectDir(join(root, "repo/typo")).file).toBeUndefined();
  });

  it("ignores a directory named agent.hcl", () => {
    const root = tree(["repo/.git/", "repo/src/agent.hcl/"]);
    expect(findProjectDir(join(root, "repo/src")).file).toBeUndefined();
  });
});
