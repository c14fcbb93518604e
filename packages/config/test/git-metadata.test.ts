// The repository's git metadata as protected paths (git-paths.ts, docs/security/git.md):
// named for the project's repository (or its future .git), refused to tool calls by the
// gate's argument check like the kernel's own files, and left out when the operator sets
// settings.allow_git_metadata_writes.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gitMetadataPaths } from "../src/git-paths.ts";
import { loadConfigSource } from "../src/load.ts";
import { kernelProtectedPaths, protectedHitOf } from "../src/protected-paths.ts";

let root: string;
let project: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "ph-git-paths-")));
  // The project is a package inside a repository: the repository's .git is what counts.
  execFileSync("git", ["init", "-q", root]);
  project = join(root, "packages", "app");
  mkdirSync(project, { recursive: true });
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("git metadata paths", () => {
  it("names the control files and nested git directories of the repository holding the project", () => {
    const git = join(root, ".git");
    expect(gitMetadataPaths(project)).toEqual(
      ["config", "config.worktree", "commondir", "hooks", "modules", "worktrees"].map((n) => join(git, n)),
    );
    // No repository yet: the project's own future .git.
    const bare = realpathSync(mkdtempSync(join(tmpdir(), "ph-git-none-")));
    expect(gitMetadataPaths(bare)[0]).toBe(join(bare, ".git", "config"));
    rmSync(bare, { recursive: true });
  });

  it("follows a .git file to the worktree's git directory and the common one", () => {
    const wt = join(root, "wt");
    const gd = join(root, ".git", "worktrees", "wt");
    mkdirSync(wt);
    mkdirSync(gd, { recursive: true });
    writeFileSync(join(wt, ".git"), `gitdir: ${gd}\n`);
    writeFileSync(join(gd, "commondir"), "../..\n");
    const paths = gitMetadataPaths(wt);
    expect(paths.slice(0, 3)).toEqual([join(wt, ".git"), join(gd, "config.worktree"), join(gd, "commondir")]);
    expect(paths).toContain(join(root, ".git", "config"));
    expect(paths).toContain(join(root, ".git", "hooks"));
  });

  it("are protected by default and not with the opt-in", () => {
    expect(kernelProtectedPaths(project, { HOME: root })).toContain(join(root, ".git", "hooks"));
    expect(kernelProtectedPaths(project, { HOME: root }, { gitMetadata: false })).not.toContain(
      join(root, ".git", "hooks"),
    );
  });

  it("stop tool calls that would write them, and leave git and plain reads alone", () => {
    const paths = kernelProtectedPaths(project, { HOME: root });
    const hit = (args: Record<string, unknown>) => protectedHitOf(args, root, paths)?.path;
    expect(hit({ path: ".git/hooks/pre-commit", content: "x" })).toBe(join(root, ".git", "hooks"));
    expect(hit({ path: ".git/config", content: "x" })).toBe(join(root, ".git", "config"));
    expect(hit({ path: ".git/commondir", content: "/elsewhere" })).toBe(join(root, ".git", "commondir"));
    expect(hit({ path: ".git/modules/lib/config", content: "x" })).toBe(join(root, ".git", "modules"));
    expect(hit({ command: "printf '#!/bin/sh' > .git/hooks/post-checkout" })).toBe(
      join(root, ".git", "hooks"),
    );
    expect(hit({ command: "cp evil.sh .git/hooks/pre-commit" })).toBe(join(root, ".git", "hooks"));
    for (const fine of [
      "git commit -m x",
      "git status",
      "cat .git/config",
      "find . -path ./.git -prune -o -name '*.ts' -print",
      "rg --glob '!.git' x",
    ])
      expect(hit({ command: fine }), fine).toBeUndefined();
    expect(hit({ path: ".git/info/exclude", content: "x" })).toBeUndefined();
  });
});

describe("settings.allow_git_metadata_writes", () => {
  const load = (text: string) => loadConfigSource(Buffer.from(text), "agent.hcl", "/project");

  it("defaults to false and takes a boolean; anything else is an error at its position", () => {
    const d = load("");
    if (!d.ok) throw new Error(JSON.stringify(d.diagnostics));
    expect(d.config.settings.allow_git_metadata_writes).toBe(false);
    const on = load("settings {\n  allow_git_metadata_writes = true\n}\n");
    if (!on.ok) throw new Error(JSON.stringify(on.diagnostics));
    expect(on.config.settings.allow_git_metadata_writes).toBe(true);
    const bad = load('settings {\n  allow_git_metadata_writes = "yes"\n}\n');
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.diagnostics.map((x) => x.line)).toEqual([2]);
  });
});
