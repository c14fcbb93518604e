// The safe git of runtime/src/safe-git.ts: the rules (each key that names a program is
// overridden when the repository or the project set it, the user's own global values
// are kept, credential helpers reset and re-added), and the real git 2.x against
// repositories where every such key and file points at a script that leaves a marker:
// plain git runs them (the test's own check that the vectors are live), safe git runs
// none, for status, diff, log -p, show, blame, add, commit, switch, stash and fetch.
// Where bubblewrap works, a program the user's own configuration names runs in a
// read-only sandbox without network.

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  type ConfigEntry,
  configOverrides,
  gitEnvironment,
  parseConfigList,
  remoteProgramsPlanted,
  runSafeGit,
  type SafeGitOptions,
  safeGitOverrides,
  safePath,
  subcommandGuards,
  UnsafeConfigError,
} from "../src/safe-git.ts";
import { probeSandbox } from "../src/sandbox.ts";

const local = (key: string, value: string | null, origin = "file:.git/config"): ConfigEntry => ({
  scope: "local",
  origin,
  key,
  value,
});
const globalEntry = (key: string, value: string, file = "/home/u/.gitconfig"): ConfigEntry => ({
  scope: "global",
  origin: `file:${file}`,
  key,
  value,
});
const rules = (entries: ConfigEntry[], hooks = false) =>
  configOverrides(entries, { untrusted: ["/work/project"], hooks });
const valuesOf = (o: Array<[string, string]>, key: string) => o.filter(([k]) => k === key).map(([, v]) => v);

describe("safe git rules", () => {
  it("overrides every key that names a program when the repository sets it", () => {
    const planted: Array<[string, string]> = [
      ["filter.x.clean", ""],
      ["filter.x.smudge", ""],
      ["filter.x.process", ""],
      ["diff.x.command", ""],
      ["diff.x.textconv", ""],
      ["merge.x.driver", ""],
      ["core.sshCommand", "ssh"],
      ["gpg.program", "gpg"],
      ["gpg.x509.program", "gpgsm"],
      ["gpg.ssh.program", "ssh-keygen"],
      ["gpg.ssh.defaultKeyCommand", ""],
      ["gpg.format", "openpgp"],
      ["pager.status", "false"],
      ["difftool.x.cmd", ""],
      ["mergetool.x.cmd", ""],
      ["submodule.sub.update", "checkout"],
      ["init.templateDir", ""],
      ["sendemail.sendmailCmd", ""],
      ["interactive.diffFilter", ""],
      ["guitool.x.cmd", ""],
      ["tar.tgz.command", ""],
    ];
    const o = rules(planted.map(([k]) => local(k, "/tmp/evil.sh")));
    for (const [k, neutral] of planted) expect(valuesOf(o, k), k).toEqual([neutral]);
    // An emptied filter must not be required, or every file it covers fails.
    expect(valuesOf(o, "filter.x.required")).toEqual(["false"]);
  });

  it("always overrides what the kernel never needs, whatever its origin", () => {
    const o = rules([globalEntry("core.fsmonitor", "true"), globalEntry("core.pager", "less")]);
    for (const [k, v] of [
      ["core.fsmonitor", "false"],
      ["core.hooksPath", "/dev/null"],
      ["core.pager", "cat"],
      ["core.editor", ":"],
      ["sequence.editor", ":"],
      ["core.askPass", ""],
      ["diff.external", ""],
      ["log.showSignature", "false"],
      ["help.autoCorrect", "0"],
      ["submodule.recurse", "false"],
      ["gc.auto", "0"],
    ])
      expect(valuesOf(o, k!), k).toEqual([v]);
    // Repository hooks only when allowed: then core.hooksPath is left alone.
    expect(valuesOf(rules([], true), "core.hooksPath")).toEqual([]);
  });

  it("keeps the user's own global values, and restores them over the repository's", () => {
    const lfs = globalEntry("filter.lfs.process", "git-lfs filter-process");
    expect(valuesOf(rules([lfs]), "filter.lfs.process")).toEqual([]);
    const o = rules([
      globalEntry("core.sshCommand", "ssh -i ~/.ssh/work"),
      globalEntry("filter.lfs.clean", "git-lfs clean -- %f"),
      local("core.sshCommand", "/tmp/evil.sh"),
      local("filter.lfs.clean", "/tmp/evil.sh"),
    ]);
    expect(valuesOf(o, "core.sshCommand")).toEqual(["ssh -i ~/.ssh/work"]);
    expect(valuesOf(o, "filter.lfs.clean")).toEqual(["git-lfs clean -- %f"]);
    expect(valuesOf(o, "filter.lfs.required")).toEqual([]);
  });

  it("does not trust global configuration read from inside the project, or from an include there", () => {
    const inProject = globalEntry("diff.x.textconv", "./conv.sh", "/work/project/.gitconfig-shared");
    expect(valuesOf(rules([inProject]), "diff.x.textconv")).toEqual([""]);
    const blob: ConfigEntry = { scope: "global", origin: "blob:abc", key: "diff.x.command", value: "x" };
    expect(valuesOf(rules([blob]), "diff.x.command")).toEqual([""]);
    const worktree: ConfigEntry = { ...local("merge.m.driver", "x"), scope: "worktree" };
    expect(valuesOf(rules([worktree]), "merge.m.driver")).toEqual([""]);
  });

  it("empties the credential helper list when the repository adds one, then adds the user's back in order", () => {
    const o = rules([
      globalEntry("credential.helper", "store"),
      globalEntry("credential.https://example.com.helper", "cache"),
      local("credential.helper", "!/tmp/evil.sh"),
    ]);
    const creds = o.filter(([k]) => k.startsWith("credential."));
    expect(creds).toEqual([
      ["credential.helper", ""],
      ["credential.helper", "store"],
      ["credential.https://example.com.helper", "cache"],
    ]);
    expect(
      rules([globalEntry("credential.helper", "store")]).some(([k]) => k.startsWith("credential.")),
    ).toBe(false);
  });

  it("switches configured hooks (git 2.54+) off by name unless hooks are allowed", () => {
    const entries = [local("hook.lint.event", "pre-commit"), local("hook.lint.command", "/tmp/evil.sh")];
    expect(valuesOf(rules(entries), "hook.lint.enabled")).toEqual(["false"]);
    expect(valuesOf(rules(entries, true), "hook.lint.enabled")).toEqual([]);
  });

  it("keys case-insensitively in section and name, and keeps the subsection as written", () => {
    const o = rules([local("filter.EvIL.clean", "/tmp/evil.sh"), local("FILTER.EvIL.CLEAN", "/tmp/x.sh")]);
    expect(o.filter(([k]) => k.toLowerCase() === "filter.evil.clean").length).toBe(1);
    expect(valuesOf(o, "FILTER.EvIL.CLEAN")).toEqual([""]);
  });

  it("guards the commands that reach a remote when the repository names its own upload-pack", () => {
    const entries = [local("remote.origin.uploadpack", "/tmp/evil.sh")];
    const planted = remoteProgramsPlanted(entries, []);
    expect(planted).toBe(true);
    expect(subcommandGuards(["fetch", "origin"], planted)).toEqual(["--upload-pack=git-upload-pack"]);
    expect(subcommandGuards(["push", "origin"], planted)).toEqual(["--receive-pack=git-receive-pack"]);
    expect(subcommandGuards(["fetch", "origin"], false)).toEqual([]);
    expect(
      remoteProgramsPlanted([globalEntry("remote.origin.uploadpack", "/opt/git/bin/git-upload-pack")], []),
    ).toBe(false);
    expect(subcommandGuards(["diff"])).toEqual(["--no-ext-diff", "--no-textconv"]);
    expect(subcommandGuards(["blame", "x"])).toEqual(["--no-textconv"]);
  });

  it("refuses a key `-c` cannot name rather than leave it in force", () => {
    expect(() => rules([local("filter.a=b.clean", "/tmp/evil.sh")])).toThrow(UnsafeConfigError);
  });

  it("parses git's -z listing, keys without a value included", () => {
    const out = "local\0file:.git/config\0core.bare\nfalse\0local\0file:.git/config\0x.flag\0";
    expect(parseConfigList(out)).toEqual([
      { scope: "local", origin: "file:.git/config", key: "core.bare", value: "false" },
      { scope: "local", origin: "file:.git/config", key: "x.flag", value: null },
    ]);
  });

  it("gives git no secret, no GIT_* of the caller's but identity, and a PATH without the project", () => {
    const env = gitEnvironment(
      {
        PATH: "./bin:/work/project/node_modules/.bin:/usr/bin:relative:/bin:/usr/bin",
        HOME: "/home/u",
        ANTHROPIC_API_KEY: "sk-ant-secret",
        GIT_DIR: "/elsewhere",
        GIT_CONFIG_PARAMETERS: "'core.fsmonitor=/tmp/evil.sh'",
        GIT_CONFIG_COUNT: "1",
        GIT_SSH_COMMAND: "/tmp/evil.sh",
        GIT_EXTERNAL_DIFF: "/tmp/evil.sh",
        GIT_EXEC_PATH: "/tmp",
        LD_PRELOAD: "/tmp/evil.so",
        GIT_AUTHOR_NAME: "Ada",
      },
      ["/work/project"],
      { readOnly: true },
    );
    expect(env["PATH"]).toBe("/usr/bin:/bin");
    expect(env["HOME"]).toBe("/home/u");
    expect(env["GIT_AUTHOR_NAME"]).toBe("Ada");
    for (const k of [
      "ANTHROPIC_API_KEY",
      "GIT_DIR",
      "GIT_CONFIG_PARAMETERS",
      "GIT_CONFIG_COUNT",
      "GIT_SSH_COMMAND",
      "GIT_EXTERNAL_DIFF",
      "GIT_EXEC_PATH",
      "LD_PRELOAD",
    ])
      expect(env[k], k).toBeUndefined();
    expect(env).toMatchObject({
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_ASKPASS: "",
      GIT_PROXY_COMMAND: "",
      GIT_ALLOW_PROTOCOL: "file:git:http:https:ssh",
      GIT_OPTIONAL_LOCKS: "0",
    });
    expect(safePath("", [])).toBe("/usr/local/bin:/usr/bin:/bin");
  });
});

/** A repository where every program-starting setting and file leaves a marker in `marks`. */
describe("safe git against planted repositories (real git)", () => {
  let root: string;
  let marks: string;
  let bin: string;
  let home: string;
  let repo: string;
  let redirected: string;
  const userEnv = (): NodeJS.ProcessEnv => ({
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: home,
    GIT_AUTHOR_NAME: "T",
    GIT_AUTHOR_EMAIL: "t@example.com",
    GIT_COMMITTER_NAME: "T",
    GIT_COMMITTER_EMAIL: "t@example.com",
    GIT_CONFIG_NOSYSTEM: "1",
  });
  const plain = (cwd: string, ...args: string[]) => {
    try {
      execFileSync("git", args, { cwd, env: userEnv(), stdio: "pipe" });
    } catch {
      // a planted program may fail the command; what matters is whether it ran
    }
  };
  const marked = () => (existsSync(marks) ? readdirSync(marks).sort() : []);
  const clearMarks = () => {
    rmSync(marks, { recursive: true, force: true });
    mkdirSync(marks);
  };
  const script = (name: string) => {
    const p = join(bin, `${name}.sh`);
    writeFileSync(p, `#!/bin/sh\necho "$@" >> '${marks}/${name}'\ncat\n`);
    chmodSync(p, 0o755);
    return p;
  };
  const plant = (dir: string, configFile: string) => {
    const c = (k: string, v: string) => execFileSync("git", ["config", "--file", configFile, k, v]);
    c("core.fsmonitor", script("fsmonitor"));
    c("core.pager", script("pager"));
    c("pager.log", script("pager-log"));
    c("diff.external", script("diff-external"));
    c("diff.drv.command", script("diff-command"));
    c("diff.drv.textconv", script("textconv"));
    c("filter.flt.clean", script("clean"));
    c("filter.flt.smudge", script("smudge"));
    c("filter.flt.required", "true");
    c("filter.proc.process", script("process"));
    c("merge.drv.driver", `${script("merge")} %O %A %B`);
    c("gpg.program", script("gpg"));
    c("commit.gpgSign", "true");
    c("core.sshCommand", script("ssh"));
    c("credential.helper", `!${script("credential")}`);
    c("core.askPass", script("askpass"));
    c("core.editor", script("editor"));
    c("tar.tgz.command", script("tar"));
    c("protocol.ext.allow", "always");
    c("remote.ext.url", `ext::${script("ext")} %S`);
    c("remote.ssh.url", "ssh://git.example.invalid/x.git");
    c("remote.local.url", dir);
    c("remote.local.uploadpack", script("uploadpack"));
    c("include.path", join(root, "included.cfg"));
    execFileSync("git", [
      "config",
      "--file",
      join(root, "included.cfg"),
      "filter.inc.clean",
      script("include"),
    ]);
    writeFileSync(
      join(dir, ".gitattributes"),
      "*.txt filter=flt diff=drv merge=drv\n*.bin filter=proc\n*.inc filter=inc\n",
    );
  };

  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), "ph-safe-git-")));
    marks = join(root, "marks");
    bin = join(root, "bin");
    home = join(root, "home");
    mkdirSync(bin);
    mkdirSync(home);
    const init = (dir: string) => {
      mkdirSync(dir, { recursive: true });
      plain(dir, "init", "-q", "-b", "main");
      writeFileSync(join(dir, "a.txt"), "one\n");
      writeFileSync(join(dir, "b.bin"), "bin\n");
      writeFileSync(join(dir, "c.inc"), "inc\n");
      plain(dir, "add", "-A");
      plain(dir, "commit", "-q", "-m", "first");
    };
    // A: everything in .git/config, hooks through core.hooksPath.
    repo = join(root, "project", "a");
    init(repo);
    plant(repo, join(repo, ".git", "config"));
    const hooks = join(root, "project", "hooks");
    mkdirSync(hooks);
    for (const h of [
      "pre-commit",
      "post-commit",
      "post-checkout",
      "reference-transaction",
      "post-index-change",
    ])
      writeFileSync(join(hooks, h), `#!/bin/sh\necho >> '${marks}/hook-${h}'\n`, { mode: 0o755 });
    execFileSync("git", ["config", "--file", join(repo, ".git", "config"), "core.hooksPath", hooks]);
    writeFileSync(join(repo, "a.txt"), "two\n");
    writeFileSync(join(repo, "c.inc"), "two\n");
    // B: its .git/commondir sends git to a planted common directory; hooks in .git/hooks.
    redirected = join(root, "project", "b");
    init(redirected);
    const evil = join(root, "project", "evil-common");
    execFileSync("cp", ["-r", join(redirected, ".git"), evil]);
    writeFileSync(join(redirected, ".git", "commondir"), `${evil}\n`);
    plant(redirected, join(evil, "config"));
    for (const h of ["pre-commit", "post-commit"])
      writeFileSync(join(evil, "hooks", h), `#!/bin/sh\necho >> '${marks}/hook-${h}'\n`, { mode: 0o755 });
    writeFileSync(join(redirected, "a.txt"), "two\n");
    clearMarks();
  });

  afterAll(() => rmSync(root, { recursive: true, force: true }));
  beforeEach(() => clearMarks());

  const opts = (cwd: string, over: Partial<SafeGitOptions> = {}): SafeGitOptions => ({
    cwd,
    env: userEnv(),
    untrusted: [join(root, "project")],
    sandbox: "off",
    timeoutMs: 20_000,
    ...over,
  });

  /** Every operation the kernel and the git provider run, on `dir`. */
  const operations = async (dir: string, o: (cwd: string) => SafeGitOptions) => {
    const results: Array<{ args: string[]; code: number | null; stderr: string }> = [];
    const run = async (...args: string[]) => {
      const r = await runSafeGit(args, o(dir));
      results.push({ args, code: r.code, stderr: r.stderr.toString() });
      return r;
    };
    await run("status", "--porcelain=v1", "--branch");
    await run("rev-parse", "--show-toplevel");
    await run("diff");
    await run("diff", "--stat", "HEAD");
    await run("log", "-p", "-n2");
    await run("show", "HEAD");
    await run("blame", "a.txt");
    await run("add", "-A");
    await run("commit", "-q", "-m", "second");
    await run("switch", "-q", "-c", "other");
    writeFileSync(join(dir, "a.txt"), "three\n");
    await run("stash", "push", "-q");
    await run("stash", "apply", "-q");
    await run("fetch", "-q", "local");
    await run("fetch", "-q", "ssh");
    await run("fetch", "-q", "ext");
    await run("remote", "show", "local");
    await run("archive", "--format=tgz", "-o", "/dev/null", "HEAD");
    return results;
  };

  it("plain git runs the planted programs (the vectors are live)", () => {
    plain(repo, "status");
    plain(repo, "diff");
    plain(redirected, "status");
    plain(repo, "log", "-p", "-1");
    plain(repo, "archive", "--format=tgz", "-o", "/dev/null", "HEAD");
    expect(marked()).toEqual(
      expect.arrayContaining(["clean", "diff-command", "fsmonitor", "include", "tar"]),
    );
    clearMarks();
  });

  it("safe git runs none of them, and still does the work", { timeout: 120_000 }, async () => {
    const a = await operations(repo, (cwd) => opts(cwd));
    const b = await operations(redirected, (cwd) => opts(cwd));
    expect(marked()).toEqual([]);
    const byArgs = (rs: typeof a, first: string) => rs.find((r) => r.args[0] === first)!;
    for (const rs of [a, b]) {
      expect(byArgs(rs, "status").code).toBe(0);
      expect(byArgs(rs, "log").code).toBe(0);
      expect(byArgs(rs, "show").code).toBe(0);
      expect(byArgs(rs, "blame").code).toBe(0);
      expect(byArgs(rs, "add").code).toBe(0);
      // Signing would start the repository's gpg.program: it is git's own gpg now, which has no key here.
      const commit = byArgs(rs, "commit");
      expect(commit.code === 0 || /gpg|sign/i.test(commit.stderr), commit.stderr).toBe(true);
    }
    // The ext:: transport is refused outright.
    expect(a.find((r) => r.args.includes("ext"))!.stderr).toMatch(/transport 'ext' not allowed/);
  });

  it("does not run a `git` the project planted on PATH, nor take GIT_* from the caller", async () => {
    const planted = join(root, "project", "node_modules", ".bin");
    mkdirSync(planted, { recursive: true });
    writeFileSync(join(planted, "git"), `#!/bin/sh\necho >> '${marks}/planted-git'\n`, { mode: 0o755 });
    const env = {
      ...userEnv(),
      PATH: `${planted}:${userEnv()["PATH"]}`,
      GIT_CONFIG_PARAMETERS: `'core.fsmonitor=${script("env-fsmonitor")}'`,
      GIT_EXTERNAL_DIFF: script("env-diff"),
    };
    const r = await runSafeGit(["rev-parse", "--show-toplevel"], opts(repo, { env }));
    expect(r.stdout.toString().trim()).toBe(repo);
    // Even a caller asking for the external diff gets none: the configured ones are emptied.
    await runSafeGit(["diff", "--ext-diff"], opts(repo, { env }));
    expect(marked()).toEqual([]);
  });

  it("lists what it would override: one call's worth of -c settings, fixed ones first", async () => {
    const o = await safeGitOverrides(opts(repo));
    expect(Array.isArray(o)).toBe(true);
    const keys = (o as Array<[string, string]>).map(([k]) => k);
    expect(keys.slice(0, 2)).toEqual(["core.fsmonitor", "core.pager"]);
    expect(keys).toEqual(expect.arrayContaining(["filter.flt.clean", "filter.inc.clean", "core.sshcommand"]));
  });

  it.skipIf(!probeSandbox().ok)(
    "runs in a read-only sandbox without network: even the user's own filter cannot write",
    async () => {
      const clean = join(root, "project", "c");
      mkdirSync(clean, { recursive: true });
      plain(clean, "init", "-q");
      writeFileSync(join(clean, "f.own"), "x\n");
      writeFileSync(join(clean, ".gitattributes"), "*.own filter=own\n");
      // The user's own global filter (trusted, kept) that tries to leave a marker and reach the network.
      const own = join(bin, "own.sh");
      writeFileSync(own, `#!/bin/sh\necho >> '${marks}/own'\ncat\n`, { mode: 0o755 });
      execFileSync("git", ["config", "--file", join(home, ".gitconfig"), "filter.own.clean", own]);
      const r = await runSafeGit(["hash-object", "f.own"], opts(clean, { sandbox: "required" }));
      expect(r.confined).toBe(true);
      expect(marked()).toEqual([]);
      // The same call unconfined does run it: the sandbox is what stopped the write.
      await runSafeGit(["hash-object", "f.own"], opts(clean));
      expect(marked()).toEqual(["own"]);
      clearMarks();
    },
  );
});
