// The git provider over the real plugin boundary, against real repositories made here
// with the real git binary: every data source, every resource with its preview (which
// changes nothing), kernel-owned files out of reach, hooks off unless allowed, the
// sandbox, declarations per the seed, and conformance over both transports.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { validateToolSchemas } from "@pluggableharness/kernel/domain";
import type { RenderNode } from "@pluggableharness/protocol/render";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { probeSandbox } from "@pluggableharness/runtime/sandbox";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const sandboxed = probeSandbox().ok;

let base: string;
let repo: string;
let h: ToolHarness;

const IDENTITY = {
  GIT_AUTHOR_NAME: "Test Author",
  GIT_AUTHOR_EMAIL: "author@example.com",
  GIT_COMMITTER_NAME: "Test Author",
  GIT_COMMITTER_EMAIL: "author@example.com",
};

function sh(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: { PATH: process.env["PATH"], HOME: base, ...IDENTITY, GIT_CONFIG_NOSYSTEM: "1" },
  });
}

function freshRepo(name: string): string {
  const dir = join(base, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  sh(dir, "init", "-q", "-b", "main");
  sh(dir, "config", "user.name", "Test Author");
  sh(dir, "config", "user.email", "author@example.com");
  writeFileSync(join(dir, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(dir, "b.txt"), "bee\n");
  sh(dir, "add", "-A");
  sh(dir, "commit", "-q", "-m", "first commit");
  writeFileSync(join(dir, "a.txt"), "one\n2\nthree\n");
  sh(dir, "commit", "-q", "-am", "second: two becomes 2");
  return dir;
}

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-git-")));
  h = new ToolHarness({ executable: MAIN, name: "git", env: { HOME: base } });
  await h.configure({ roots: [base] });
});

afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

beforeEach(() => {
  repo = freshRepo("repo");
});

const call = (tool: string, args: JsonObject = {}) => h.invoke(tool, args, { cwd: repo });
const out = async (tool: string, args: JsonObject = {}) => {
  const r = await call(tool, args);
  expect(r.error?.message).toBeUndefined();
  return String(r.result!["output"]);
};
const texts = (n: RenderNode | undefined): string[] => {
  if (!n) return [];
  if (n.node.case === "text") return [n.node.value.content];
  if (n.node.case === "codeBlock") return n.node.value.content.split("\n");
  if (n.node.case === "group") return n.node.value.children.flatMap(texts);
  return [];
};
const head = () => sh(repo, "rev-parse", "HEAD").trim();

describe("data sources", () => {
  it("status: branch, staged, unstaged and untracked files", async () => {
    writeFileSync(join(repo, "a.txt"), "changed\n");
    writeFileSync(join(repo, "new.txt"), "n\n");
    writeFileSync(join(repo, "b.txt"), "BEE\n");
    sh(repo, "add", "b.txt");
    const r = await call("git_status");
    expect(r.result).toMatchObject({ branch: "main", clean: false });
    expect(r.result!["files"]).toEqual([
      { path: "a.txt", index: ".", worktree: "M" },
      { path: "b.txt", index: "M", worktree: "." },
      { path: "new.txt", index: "?", worktree: "?" },
    ]);
    expect(String(r.result!["output"]).split("\n")).toEqual([
      "## main",
      " M a.txt",
      "M  b.txt",
      "?? new.txt",
    ]);
  });

  it("diff: worktree, staged, between refs, stat and paths", async () => {
    writeFileSync(join(repo, "a.txt"), "one\n2\n3\n");
    writeFileSync(join(repo, "b.txt"), "BEE\n");
    sh(repo, "add", "b.txt");
    const work = await out("git_diff");
    expect(work).toContain("-three\n+3");
    expect(work).not.toContain("BEE");
    const staged = await out("git_diff", { staged: true });
    expect(staged).toContain("+BEE");
    expect(staged).not.toContain("+3");
    const refs = await out("git_diff", { from: "HEAD~1", to: "HEAD" });
    expect(refs).toContain("-two\n+2");
    expect(await out("git_diff", { from: "HEAD~1", to: "HEAD", stat: true })).toMatch(/a\.txt \| 2 \+-/);
    expect(await out("git_diff", { paths: ["b.txt"] })).toBe("");
    const bad = await call("git_diff", { from: "nope-branch" });
    expect(bad.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    const option = await call("git_diff", { from: "--output=/tmp/x" });
    expect(option.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
  });

  it("log, show and blame", async () => {
    const log = await out("git_log");
    expect(log).toMatch(/^[0-9a-f]{7,} \S+ Test Author <author@example\.com>\n {4}second: two becomes 2\n/);
    expect(log).toContain("    first commit");
    expect((await out("git_log", { max_count: 1 })).match(/^[0-9a-f]/gm)).toHaveLength(1);
    expect(await out("git_log", { grep: "first" })).not.toContain("second");
    const show = await out("git_show");
    expect(show).toContain("second: two becomes 2");
    expect(show).toContain("+2");
    expect(await out("git_show", { rev: "HEAD~1", path: "a.txt" })).toBe("one\ntwo\nthree\n");
    const blame = await out("git_blame", { path: "a.txt", start_line: 2, end_line: 2 });
    expect(blame).toMatch(/^\^?[0-9a-f]+ \(Test Author \d{4}-\d\d-\d\d\s+2\) 2$/m);
    expect(blame.trim().split("\n")).toHaveLength(1);
  });

  it("refuses a directory that is not a repository, and one outside the roots", async () => {
    const plain = join(base, "plain");
    mkdirSync(plain, { recursive: true });
    const r = await h.invoke("git_status", {}, { cwd: plain });
    expect(r.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    expect(r.error?.message).toMatch(/not inside a git repository/);
    const outside = await h.invoke("git_status", { repo: "/" }, { cwd: repo });
    expect(outside.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
  });
});

describe("resources, each with a preview that changes nothing", () => {
  it("stage and unstage", async () => {
    writeFileSync(join(repo, "a.txt"), "x\n");
    writeFileSync(join(repo, "new.txt"), "n\n");
    const p = texts(await h.preview("git_stage", { all: true }, repo));
    expect(p).toEqual(["Stage 2 files", "M\ta.txt", "?\tnew.txt"]);
    expect(sh(repo, "diff", "--cached", "--name-only")).toBe("");
    const r = await call("git_stage", { paths: ["new.txt"] });
    expect(r.result!["files"]).toEqual(["new.txt"]);
    expect(sh(repo, "diff", "--cached", "--name-only")).toBe("new.txt\n");
    expect(texts(await h.preview("git_stage", { paths: ["new.txt"], unstage: true }, repo))[0]).toBe(
      "Unstage 1 file",
    );
    await call("git_stage", { paths: ["new.txt"], unstage: true });
    expect(sh(repo, "diff", "--cached", "--name-only")).toBe("");
  });

  it("commit: the preview shows the staged diff stat and the message", async () => {
    const none = await call("git_commit", { message: "nothing" });
    expect(none.error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect(none.error?.message).toMatch(/nothing is staged/);
    writeFileSync(join(repo, "b.txt"), "bee\nsecond bee\n");
    writeFileSync(join(repo, "c.txt"), "sea\n");
    sh(repo, "add", "-A");
    const before = head();
    const p = texts(await h.preview("git_commit", { message: "Add c and grow b\n\nBecause." }, repo));
    expect(p[0]).toBe("Commit on main: Add c and grow b");
    expect(p).toContain("Add c and grow b");
    expect(p.some((l) => /b\.txt \| 1 \+/.test(l))).toBe(true);
    expect(p.some((l) => /c\.txt \| 1 \+/.test(l))).toBe(true);
    expect(p.at(-1)).toMatch(/2 files changed, 2 insertions/);
    expect(head()).toBe(before);
    const r = await call("git_commit", { message: "Add c and grow b\n\nBecause." });
    expect(r.error).toBeUndefined();
    expect(r.result!["commit"]).toBe(head());
    expect(sh(repo, "log", "-1", "--format=%s%n%b")).toBe("Add c and grow b\nBecause.\n\n");
    expect(sh(repo, "status", "--porcelain")).toBe("");
  });

  it("branch create and switch: the preview lists the files that change", async () => {
    expect(texts(await h.preview("git_branch_create", { name: "feature" }, repo))[0]).toMatch(
      /^Create branch feature at [0-9a-f]+ second: two becomes 2$/,
    );
    await call("git_branch_create", { name: "feature" });
    sh(repo, "switch", "-q", "feature");
    writeFileSync(join(repo, "f.txt"), "feature file\n");
    sh(repo, "add", "-A");
    sh(repo, "commit", "-q", "-m", "feature work");
    sh(repo, "switch", "-q", "main");
    const p = texts(await h.preview("git_switch", { branch: "feature" }, repo));
    expect(p).toEqual(["Switch from main to feature: 1 file change", "A\tf.txt"]);
    expect(existsSync(join(repo, "f.txt"))).toBe(false);
    const r = await call("git_switch", { branch: "feature" });
    expect(r.result).toMatchObject({ branch: "feature", files_changed: 1 });
    expect(readFileSync(join(repo, "f.txt"), "utf8")).toBe("feature file\n");
    const created = await call("git_switch", { branch: "topic", create: true });
    expect(created.error).toBeUndefined();
    expect(sh(repo, "branch", "--show-current")).toBe("topic\n");
    expect((await call("git_switch", { branch: "nope" })).error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    expect((await call("git_branch_create", { name: "bad..name" })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
  });

  it("stash push and pop", async () => {
    writeFileSync(join(repo, "a.txt"), "local work\n");
    writeFileSync(join(repo, "u.txt"), "untracked\n");
    const p = texts(await h.preview("git_stash", { action: "push", include_untracked: true }, repo));
    expect(p).toEqual(["Stash 2 files", ".M\ta.txt", "?\tu.txt"]);
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("local work\n");
    await call("git_stash", { action: "push", include_untracked: true, message: "wip" });
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("one\n2\nthree\n");
    expect(existsSync(join(repo, "u.txt"))).toBe(false);
    expect(await out("git_stash", { action: "list" })).toMatch(/stash@\{0\}: On main: wip/);
    expect(texts(await h.preview("git_stash", { action: "pop" }, repo))[0]).toBe(
      "Pop stash@{0}, restoring 2 files",
    );
    await call("git_stash", { action: "pop" });
    expect(readFileSync(join(repo, "a.txt"), "utf8")).toBe("local work\n");
    expect(readFileSync(join(repo, "u.txt"), "utf8")).toBe("untracked\n");
  });

  it("push: the preview lists the commits to publish", async () => {
    const remote = join(base, "remote.git");
    rmSync(remote, { recursive: true, force: true });
    sh(base, "init", "-q", "--bare", remote);
    sh(repo, "remote", "add", "origin", remote);
    const p = texts(await h.preview("git_push", { set_upstream: true }, repo));
    expect(p[0]).toBe(`Push main to origin (${remote}) as a new remote branch: 2 commits`);
    expect(p.slice(1)).toEqual([
      expect.stringMatching(/second: two becomes 2$/),
      expect.stringMatching(/first commit$/),
    ]);
    const r = await call("git_push", { set_upstream: true });
    expect(r.error?.message).toBeUndefined();
    expect(sh(remote, "rev-parse", "refs/heads/main").trim()).toBe(head());
    writeFileSync(join(repo, "b.txt"), "more\n");
    sh(repo, "commit", "-q", "-am", "third");
    expect(texts(await h.preview("git_push", {}, repo))[0]).toBe(`Push main to origin (${remote}): 1 commit`);
  });
});

describe("security", () => {
  it("refuses a switch or stash pop that would change a kernel-owned file, before git runs", async () => {
    writeFileSync(join(repo, "agent.hcl"), "# v1\n");
    sh(repo, "add", "-A");
    sh(repo, "commit", "-q", "-m", "config");
    sh(repo, "switch", "-q", "-c", "other");
    writeFileSync(join(repo, "agent.hcl"), "# v2: allow everything\n");
    sh(repo, "commit", "-q", "-am", "other config");
    sh(repo, "switch", "-q", "main");
    const guarded = new ToolHarness({ executable: MAIN, name: "git", env: { HOME: base } });
    try {
      guarded.kernel.execEnvironment = {
        variables: {},
        protectedPaths: [join(repo, "agent.hcl"), join(repo, ".agent")],
      };
      await guarded.configure({ roots: [base] });
      const r = await guarded.invoke("git_switch", { branch: "other" }, { cwd: repo });
      expect(r.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(r.error?.message).toMatch(/agent\.hcl, which belongs to the agent's kernel/);
      await expect(guarded.preview("git_switch", { branch: "other" }, repo)).rejects.toThrow(/agent\.hcl/);
      expect(readFileSync(join(repo, "agent.hcl"), "utf8")).toBe("# v1\n");
      expect(sh(repo, "branch", "--show-current")).toBe("main\n");
      writeFileSync(join(repo, "agent.hcl"), "# edited\n");
      const stash = await guarded.invoke("git_stash", { action: "push" }, { cwd: repo });
      expect(stash.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(readFileSync(join(repo, "agent.hcl"), "utf8")).toBe("# edited\n");
    } finally {
      await guarded.close();
    }
  });

  it("does not run the repository's hooks unless hooks = true", async () => {
    const marker = join(base, "hook-ran");
    rmSync(marker, { force: true });
    const hook = join(repo, ".git", "hooks", "pre-commit");
    writeFileSync(hook, `#!/bin/sh\necho ran > ${marker}\n`, { mode: 0o755 });
    writeFileSync(join(repo, "b.txt"), "x\n");
    await call("git_stage", { paths: ["b.txt"] });
    expect((await call("git_commit", { message: "no hook" })).error).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
    const withHooks = new ToolHarness({ executable: MAIN, name: "git", env: { HOME: base } });
    try {
      await withHooks.configure({ roots: [base], hooks: true });
      writeFileSync(join(repo, "b.txt"), "y\n");
      await withHooks.invoke("git_stage", { paths: ["b.txt"] }, { cwd: repo });
      expect(
        (await withHooks.invoke("git_commit", { message: "hook" }, { cwd: repo })).error,
      ).toBeUndefined();
      expect(existsSync(marker)).toBe(true);
    } finally {
      await withHooks.close();
    }
  });

  it("runs no program the repository's configuration names, even without the sandbox", async () => {
    const marks = join(base, "marks");
    rmSync(marks, { recursive: true, force: true });
    mkdirSync(marks);
    const script = (name: string, then = `cat "$@"`) => {
      const p = join(repo, ".git", `${name}.sh`);
      writeFileSync(p, `#!/bin/sh\necho >> ${marks}/${name}\n${then}\n`, { mode: 0o755 });
      return p;
    };
    const remote = join(base, "planted-remote.git");
    rmSync(remote, { recursive: true, force: true });
    sh(base, "init", "-q", "--bare", remote);
    sh(repo, "remote", "add", "origin", remote);
    // What a command could have written into .git/config where bubblewrap cannot run.
    sh(repo, "config", "core.fsmonitor", script("fsmonitor"));
    sh(repo, "config", "filter.x.clean", script("clean"));
    sh(repo, "config", "filter.x.smudge", script("smudge"));
    sh(repo, "config", "filter.x.required", "true");
    sh(repo, "config", "diff.x.textconv", script("textconv"));
    sh(repo, "config", "diff.x.command", script("diff-command"));
    sh(repo, "config", "core.pager", script("pager"));
    sh(repo, "config", "remote.origin.receivepack", script("receive-pack", "exit 1"));
    writeFileSync(join(repo, ".gitattributes"), "*.txt filter=x diff=x\n");
    writeFileSync(join(repo, "a.txt"), "changed\n");
    const open = new ToolHarness({ executable: MAIN, name: "git", env: { HOME: base, ...IDENTITY } });
    try {
      await open.configure({ roots: [base], sandbox: "off" });
      const run = async (tool: string, args: JsonObject = {}) => {
        const r = await open.invoke(tool, args, { cwd: repo });
        expect(r.error?.message, tool).toBeUndefined();
      };
      await run("git_status");
      await run("git_diff");
      await run("git_blame", { path: "a.txt" });
      await run("git_stage", { all: true });
      await run("git_commit", { message: "planted config, nothing run" });
      await run("git_show", {});
      expect(readdirSync(marks)).toEqual([]);
      await run("git_push", { set_upstream: true });
      expect(readdirSync(marks)).toEqual([]);
      expect(sh(remote, "log", "-1", "--format=%s", "main").trim()).toBe("planted config, nothing run");
    } finally {
      await open.close();
    }
  });

  it.skipIf(!sandboxed)(
    "runs git in the sandbox: a hook cannot write outside the roots or see other processes",
    async () => {
      const outsideDir = realpathSync(mkdtempSync(join(tmpdir(), "ph-git-outside-")));
      const inner = new ToolHarness({ executable: MAIN, name: "git", env: { HOME: base } });
      try {
        await inner.configure({ roots: [repo], hooks: true, sandbox: "required" });
        const hook = join(repo, ".git", "hooks", "pre-commit");
        writeFileSync(
          hook,
          `#!/bin/sh\necho x > ${outsideDir}/escaped 2>/dev/null; echo "procs=$(ls /proc | grep -cE '^[0-9]+$')" > ${repo}/procs.txt\n`,
          { mode: 0o755 },
        );
        writeFileSync(join(repo, "b.txt"), "z\n");
        await inner.invoke("git_stage", { paths: ["b.txt"] }, { cwd: repo });
        expect((await inner.invoke("git_commit", { message: "boxed" }, { cwd: repo })).error).toBeUndefined();
        expect(existsSync(join(outsideDir, "escaped"))).toBe(false);
        expect(Number(/procs=(\d+)/.exec(readFileSync(join(repo, "procs.txt"), "utf8"))?.[1])).toBeLessThan(
          8,
        );
      } finally {
        await inner.close();
        rmSync(outsideDir, { recursive: true, force: true });
      }
    },
  );
});

describe("declarations and conformance", () => {
  it("declares kind, risk and ConcurrencySpec per the seed and the catalog", async () => {
    const schema = await h.client.getSchema({});
    const got = Object.fromEntries(
      schema.tools.map((t) => [
        t.name,
        [ToolKind[t.kind], RiskClass[t.risk], t.concurrency?.safe, t.concurrency?.keyFields.join(",")],
      ]),
    );
    const ds = ["DATA_SOURCE", "READ_ONLY", true, ""];
    expect(got).toEqual({
      git_status: ds,
      git_diff: ds,
      git_log: ds,
      git_show: ds,
      git_blame: ds,
      git_stage: ["RESOURCE", "MODERATE", true, "repo"],
      git_commit: ["RESOURCE", "MODERATE", true, "repo"],
      git_branch_create: ["RESOURCE", "MODERATE", true, "repo"],
      git_switch: ["RESOURCE", "MODERATE", true, "repo"],
      git_stash: ["RESOURCE", "MODERATE", true, "repo"],
      git_push: ["RESOURCE", "CRITICAL", true, "repo"],
    });
    for (const t of schema.tools)
      if (t.kind === ToolKind.RESOURCE) expect(schema.previewSupported).toContain(t.name);
    expect(validateToolSchemas("git", schema).tools.size).toBe(11);
  });

  it.each(TRANSPORTS)("passes agent conform over the %s transport", async (isolation) => {
    const work = freshRepo("conform");
    writeFileSync(join(work, "b.txt"), "changed\n");
    const report = await runConformance({
      isolation,
      executable: MAIN,
      config: { roots: [work] },
      workingDirectory: work,
      samples: [
        { tool: "git_status", arguments: {}, expect: "result" },
        { tool: "git_diff", arguments: { from: "HEAD~1" }, expect: "result" },
        { tool: "git_log", arguments: { max_count: 2 }, expect: "result" },
        { tool: "git_show", arguments: { rev: "no-such-rev" }, expect: "not_found" },
        { tool: "git_blame", arguments: { path: "a.txt" }, expect: "result" },
        { tool: "git_stage", arguments: { paths: ["b.txt"] }, expect: "result" },
        { tool: "git_commit", arguments: { message: "conform" }, expect: "result" },
        { tool: "git_branch_create", arguments: { name: "c1" }, expect: "result" },
        { tool: "git_status", arguments: { repo: "/" }, expect: "permission_denied" },
      ],
    });
    expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
    expect(report.exitCode).toBe(0);
  });
});
