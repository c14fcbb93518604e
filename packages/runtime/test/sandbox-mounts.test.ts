// The mounts wrap() asks bubblewrap for, read from its command line (no bwrap needed):
// git metadata inside a writable root is mounted read-only with every directory between
// the root and it pinned (bound onto itself, so it cannot be renamed away); an absent
// control file of an existing git directory is held by a placeholder, a commondir one
// saying "."; a project without a repository gets nothing that would make one.
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
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { gitMetadataPaths } from "../../config/src/git-paths.ts";
import { removePlaceholders, wrap } from "../src/sandbox.ts";

let root: string;
let project: string;

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "ph-mounts-")));
  project = join(root, "project");
  mkdirSync(project);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The --bind and --ro-bind targets of a wrap under the test's directory, in order. */
function mounts(writable: string[], protectedPaths: string[]) {
  // No private /tmp: the test lives under /tmp, where protected paths would be bound back read-only.
  const w = wrap(
    { bwrap: "bwrap", writable, protectedPaths, network: false, cwd: project, privateTmp: false },
    ["true"],
  );
  const out: string[] = [];
  for (let i = 0; i < w.args.length; i++) {
    const a = w.args[i]!;
    if (a === "--bind" || a === "--ro-bind") {
      const target = w.args[i + 2]!;
      if (target.startsWith(root)) out.push(`${a === "--bind" ? "rw" : "ro"} ${target}`);
      i += 2;
    }
  }
  return { binds: out, placeholders: w.placeholders };
}

describe("sandbox mounts for git metadata", () => {
  it("mounts nothing for a project without a repository, and makes no .git", () => {
    const m = mounts([project], gitMetadataPaths(project));
    expect(m.binds).toEqual([`rw ${project}`]);
    expect(existsSync(join(project, ".git"))).toBe(false);
  });

  it("pins .git and its nested directories, then mounts the control files read-only", () => {
    const git = join(project, ".git");
    mkdirSync(join(git, "hooks"), { recursive: true });
    mkdirSync(join(git, "modules", "lib"), { recursive: true });
    writeFileSync(join(git, "HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(git, "config"), "");
    writeFileSync(join(git, "modules", "lib", "config"), "");
    const m = mounts([project], gitMetadataPaths(project));
    expect(m.binds).toEqual([
      `rw ${project}`,
      `rw ${git}`,
      `rw ${join(git, "modules")}`,
      `rw ${join(git, "modules", "lib")}`,
      `ro ${join(git, "config")}`,
      `ro ${join(git, "commondir")}`,
      `ro ${join(git, "hooks")}`,
      `ro ${join(git, "modules", "lib", "config")}`,
      `ro ${join(git, "modules", "lib", "hooks")}`,
    ]);
    // The absent commondir is held by a file saying "." (what absent means), removed after.
    expect(readFileSync(join(git, "commondir"), "utf8")).toBe(".\n");
    expect(m.placeholders).toEqual([join(git, "commondir"), join(git, "modules", "lib", "hooks")]);
    removePlaceholders(m.placeholders);
    expect(existsSync(join(git, "commondir"))).toBe(false);
  });

  it("protects a worktree's .git file and the git directories it points to, when they are writable", () => {
    const main = join(root, "main.git");
    const wt = join(main, "worktrees", "project");
    mkdirSync(join(main, "hooks"), { recursive: true });
    mkdirSync(wt, { recursive: true });
    writeFileSync(join(main, "HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(main, "config"), "");
    writeFileSync(join(wt, "HEAD"), "ref: refs/heads/wt\n");
    writeFileSync(join(wt, "commondir"), "../..\n");
    writeFileSync(join(project, ".git"), `gitdir: ${wt}\n`);
    const paths = gitMetadataPaths(project);
    expect(paths).toEqual(
      expect.arrayContaining([join(project, ".git"), join(wt, "commondir"), join(main, "config")]),
    );
    // Only the project writable: the .git file is mounted read-only, the rest is read-only anyway.
    expect(mounts([project], paths).binds).toEqual([`rw ${project}`, `ro ${join(project, ".git")}`]);
    // The common directory writable too: its config and hooks and the worktree's commondir.
    const both = mounts([project, main], paths).binds;
    expect(both).toEqual(
      expect.arrayContaining([
        `ro ${join(main, "config")}`,
        `ro ${join(main, "hooks")}`,
        `ro ${join(wt, "commondir")}`,
        `rw ${join(main, "worktrees")}`,
      ]),
    );
    removePlaceholders(mounts([project, main], paths).placeholders);
  });

  it("pins the directories between a writable root and any protected path inside it", () => {
    const app = join(root, "code", "app");
    mkdirSync(join(app, ".agent"), { recursive: true });
    const m = mounts([root], [join(app, ".agent")]);
    expect(m.binds).toEqual([
      `rw ${root}`,
      `rw ${join(root, "code")}`,
      `rw ${app}`,
      `ro ${join(app, ".agent")}`,
    ]);
  });
});

describe("a program installed under a private /tmp", () => {
  it("gets back the directory of a script an interpreter is given, read-only", () => {
    // An MCP server `command = [node, "/tmp/…/server.mjs"]` from a checkout under /tmp:
    // the private /tmp hid the script (MODULE_NOT_FOUND) while the node binary was bound.
    const app = join(root, "app");
    mkdirSync(join(app, "test", "fixtures"), { recursive: true });
    const script = join(app, "test", "fixtures", "server.mjs");
    writeFileSync(script, "");
    const w = wrap({ bwrap: "bwrap", writable: [], protectedPaths: [], network: false, cwd: "/" }, [
      "/usr/bin/node",
      script,
      "/tmp/not-a-file-here",
    ]);
    const roBinds = w.args.flatMap((a, i) => (a === "--ro-bind" ? [w.args[i + 1]] : []));
    expect(w.args).toContain("--tmpfs");
    expect(roBinds).toContain(join(app, "test", "fixtures"));
    expect(roBinds).not.toContain("/tmp/not-a-file-here");
  });
});
