// Issue 31, point 1, end to end: the real `agent`, the first-party plugins (exec's bash in
// its sandbox, the git provider, workspace-context in the kernel), a scripted model on the
// loopback fake vendor. The reproduced escape: one approved bash call set core.fsmonitor
// to a script in .git, and from the next model call on workspace-context's `git status`,
// in the kernel process and unsandboxed, ran it before every model call, in every later
// session; a planted .git/hooks/pre-commit ran on the user's own `git commit`.
//
// Session 1's approved bash calls plant every kind of vector into the project's
// repository (fsmonitor, a hook, a filter driver with .gitattributes, diff.external,
// core.pager, an include, a commondir redirect, a renamed-and-replaced .git), and a file
// tool writes a hook; each points at a script that would leave a marker outside the
// project, where the sandbox cannot reach. They must all fail, and the user's own
// `git commit` afterwards must run nothing. Then the test plants the same vectors itself,
// as a command could where bubblewrap cannot run, and session 2 (workspace-context before
// every model call, the git provider's status, diff, log, stage and commit) must run none.

import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeVendor, startFakeVendor } from "@pluggableharness/fake-vendors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { probeSandbox } from "../../runtime/src/sandbox.ts";
import { agent, records, type Sandbox, sandbox } from "./helpers.ts";

const API_KEY = "sk-ant-canary-git-escape-51c9e";
const sandboxed = probeSandbox().ok;

let sb: Sandbox;
let fake: FakeVendor;
let repo: string;
let marks: string;
let env: NodeJS.ProcessEnv;

/** The user's own git, outside the agent. */
function userGit(...args: string[]): string {
  return execFileSync("git", args, {
    cwd: repo,
    env: { PATH: process.env["PATH"], HOME: sb.home, GIT_CONFIG_NOSYSTEM: "1" },
    stdio: "pipe",
  }).toString();
}

/** What ran: one marker file per planted program. */
const marked = () => (existsSync(marks) ? readdirSync(marks).sort() : []);

/** A shell line writing an executable script at `path` that leaves the marker `name`. */
const script = (path: string, name: string) =>
  `printf '#!/bin/sh\\necho "$0" >> ${marks}/${name}\\ncat\\n' > ${path} && chmod +x ${path}`;

beforeAll(async () => {
  sb = sandbox();
  repo = sb.repo();
  marks = join(sb.home, "marks");
  mkdirSync(marks);
  // The user's own global configuration: their identity, which the agent's git keeps.
  writeFileSync(join(sb.home, ".gitconfig"), "[user]\n\tname = User\n\temail = user@example.com\n");
  fake = await startFakeVendor({ vendor: "anthropic", script: [] });
  env = { ...sb.env, ANTHROPIC_API_KEY: API_KEY, FAKE_ANTHROPIC_URL: fake.url, FIXTURE_ROOT: repo };
  const hcl = readFileSync(join(repo, "agent.hcl"), "utf8")
    .replace(
      "required_providers {\n",
      "required_providers {\n" +
        '  git = {\n    source  = "pluggableharness/git"\n    version = ">= 0.1.0"\n  }\n' +
        '  workspace-context = {\n    source  = "pluggableharness/workspace-context"\n    version = ">= 0.1.0"\n  }\n',
    )
    .replace('tools     = ["filesystem.*", "exec.*"]', 'tools     = ["filesystem.*", "exec.*", "git.*"]');
  writeFileSync(join(repo, "agent.hcl"), `${hcl}\nprovider "git" {\n  roots = [env("FIXTURE_ROOT")]\n}\n`);
  userGit("init", "-q", "-b", "main");
  userGit("add", "-A");
  userGit("commit", "-q", "-m", "project");
});

afterAll(async () => {
  await fake?.close();
  sb?.cleanup();
});

type Call = { name: string; args: Record<string, unknown> };
/** One session; each list of calls is one model turn, then the model says it is done. */
const run = async (...turns: Call[][]) => {
  fake.push(...turns.map((calls) => ({ kind: "tool_calls" as const, calls })), {
    kind: "text",
    text: "done",
  });
  const r = await agent(
    ["run", "-p", "work on the project", "--output-format", "stream-json", "--headless-ask", "allow"],
    { cwd: repo, env, timeoutMs: 90_000 },
  );
  return { ...r, recs: records(r.stdout) };
};
const bash = (command: string) => ({ name: "exec__bash", args: { command } });

describe("git runs nothing the model planted, in the kernel or for the user", () => {
  it("session 1 cannot plant; the user's commit and session 2 run nothing planted", async () => {
    const configBefore = readFileSync(join(repo, ".git", "config"), "utf8");
    // `.gi` + `t`: names the gate cannot read, so only the sandbox stands in the way.
    const g = `g=$(printf '.gi%s' t)`;
    const s1 = await run([
      bash(
        `${script(".git/fsmon.sh", "fsmonitor")}; git config core.fsmonitor "$PWD/.git/fsmon.sh"; echo fsmonitor=$?`,
      ),
      bash(`${g}; ${script("$g/hooks/pre-commit", "hook-pre-commit")}; echo hook=$?`),
      bash(
        `${script(".git/clean.sh", "filter")}; echo '*.js filter=evil' > .gitattributes; ` +
          `git config filter.evil.clean "$PWD/.git/clean.sh" && git config filter.evil.required true; echo filter=$?`,
      ),
      bash(
        `${script(".git/diff.sh", "diff-external")}; ${script(".git/pager.sh", "pager")}; ` +
          `git config diff.external "$PWD/.git/diff.sh" && git config core.pager "$PWD/.git/pager.sh"; echo diff=$?`,
      ),
      bash(
        `printf '[core]\\n\\tfsmonitor = %s/.git/fsmon.sh\\n' "$PWD" > evil.cfg; git config include.path "$PWD/evil.cfg"; echo include=$?`,
      ),
      bash(
        `${g}; cp -r $g evilgit && git config --file evilgit/config core.fsmonitor "$PWD/.git/fsmon.sh" && ` +
          `echo "$PWD/evilgit" > $g/commondir; echo commondir=$?`,
      ),
      bash(
        `cp -r .git .git-new && git config --file .git-new/config core.fsmonitor "$PWD/.git/fsmon.sh" && ` +
          `mv .git .git-old && mv .git-new .git; echo rename=$?`,
      ),
      {
        name: "filesystem__write_file",
        args: { path: ".git/hooks/post-commit", content: "#!/bin/sh\necho x\n" },
      },
    ]);
    expect(s1.stderr).toBe("");
    const out = s1.recs
      .filter((x) => x["type"] === "tool_result" && x["tool_name"] === "bash")
      .map((x) => String(x["output"] ?? ""))
      .join("\n");
    // The file tool's write was refused by the kernel before anything ran.
    const refused = s1.recs.filter(
      (x) => x["type"] === "plan_decision" && x["decided_by"] === "kernel:protected_paths",
    );
    expect(refused.map((x) => x["tool_name"])).toEqual(["write_file"]);
    if (sandboxed) {
      for (const v of ["fsmonitor", "hook", "filter", "diff", "include", "commondir", "rename"])
        expect(out, v).toMatch(new RegExp(`${v}=[1-9]`));
      expect(readFileSync(join(repo, ".git", "config"), "utf8")).toBe(configBefore);
      expect(existsSync(join(repo, ".git", "hooks", "pre-commit"))).toBe(false);
      expect(existsSync(join(repo, ".git", "commondir"))).toBe(false);
      expect(existsSync(join(repo, ".git-old"))).toBe(false);
      // The user's own git: a commit (hooks, fsmonitor, filters, pager all in play) runs nothing planted.
      writeFileSync(join(repo, "calc.js"), `${readFileSync(join(repo, "calc.js"), "utf8")}// user\n`);
      userGit("commit", "-q", "-am", "the user's own commit");
      userGit("diff", "HEAD~1");
      expect(marked()).toEqual([]);
    }
    expect(existsSync(join(repo, ".git", "hooks", "post-commit"))).toBe(false);

    // What a command could plant where the sandbox cannot run: every vector, in place.
    const c = (k: string, v: string) =>
      execFileSync("git", ["config", "--file", join(repo, ".git", "config"), k, v]);
    const planted = (name: string) => {
      const p = join(sb.home, `${name}.sh`);
      writeFileSync(p, `#!/bin/sh\necho "$0" >> ${marks}/${name}\ncat\n`);
      chmodSync(p, 0o755);
      return p;
    };
    c("core.fsmonitor", planted("fsmonitor"));
    c("core.pager", planted("pager"));
    c("diff.external", planted("diff-external"));
    c("filter.evil.clean", planted("filter-clean"));
    c("filter.evil.smudge", planted("filter-smudge"));
    c("filter.evil.required", "true");
    c("diff.evil.textconv", planted("textconv"));
    c("diff.evil.command", planted("diff-command"));
    writeFileSync(join(repo, ".gitattributes"), "*.js filter=evil diff=evil\n");
    for (const h of ["pre-commit", "commit-msg", "post-commit", "reference-transaction", "post-index-change"])
      writeFileSync(join(repo, ".git", "hooks", h), `#!/bin/sh\necho >> ${marks}/hook-${h}\n`, {
        mode: 0o755,
      });
    writeFileSync(join(repo, "calc.js"), `${readFileSync(join(repo, "calc.js"), "utf8")}// more\n`);

    const before = fake.requests.length;
    // The commit is its own turn: a turn's changes are planned together, before any applies,
    // so a commit planned beside the stage would find nothing staged yet.
    const s2 = await run(
      [
        { name: "git__git_status", args: {} },
        { name: "git__git_diff", args: {} },
        { name: "git__git_log", args: { max_count: 3 } },
        { name: "git__git_stage", args: { all: true } },
      ],
      [{ name: "git__git_commit", args: { message: "the agent's commit" } }],
    );
    // Nothing planted ran: not before the model calls, not in the git provider's calls.
    expect(marked()).toEqual([]);
    expect(s2.code, s2.stderr).toBe(0);
    const results = s2.recs.filter((x) => x["type"] === "tool_result");
    // Data sources run side by side: results arrive in any order.
    expect(results.map((x) => [x["tool_name"], x["error"] ?? null]).sort()).toEqual([
      ["git_commit", null],
      ["git_diff", null],
      ["git_log", null],
      ["git_stage", null],
      ["git_status", null],
    ]);
    // workspace-context ran git before each model call: its state reached the model.
    expect(JSON.stringify(fake.requests[before]!.json)).toContain("Branch: main");
    expect(execFileSync("git", ["log", "-1", "--format=%s"], { cwd: repo }).toString()).toBe(
      "the agent's commit\n",
    );
    for (const f of readdirSync(sb.home, { recursive: true, withFileTypes: true }))
      if (f.isFile() && f.name.endsWith(".sqlite"))
        expect(readFileSync(join(f.parentPath, f.name), "latin1")).not.toContain(API_KEY);
  }, 240_000);
});
