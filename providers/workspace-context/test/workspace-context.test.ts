// The workspace-context provider over the real go-plugin process boundary, against a real
// git repository made here: branch, status and recent commits from the `git` binary, a file
// tree that honours .gitignore at every level, the files_touched list, all within
// token_budget (counted by the kernel's CountTokens) and re-read on every firing.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LaunchedPlugin, launchPlugin } from "@pluggableharness/conformance";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import { type ContextSection, Stability } from "@pluggableharness/protocol/content";
import { ContextService } from "@pluggableharness/protocol/context";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

const text = (s: ContextSection) =>
  s.content[0]?.block.case === "text" ? s.content[0].block.value.text : "";

describe("workspace-context", () => {
  let repo: string;
  let plain: string;
  let plugin: LaunchedPlugin;
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=Tess", "-c", "user.email=t@example.com", ...args], {
      cwd: repo,
      stdio: "pipe",
    });

  beforeAll(() => {
    repo = realpathSync(mkdtempSync(join(tmpdir(), "ph-wsctx-")));
    plain = realpathSync(mkdtempSync(join(tmpdir(), "ph-wsctx-plain-")));
    git("init", "-q", "-b", "trunk");
    mkdirSync(join(repo, "src", "lib"), { recursive: true });
    mkdirSync(join(repo, "build"), { recursive: true });
    mkdirSync(join(repo, "docs"), { recursive: true });
    writeFileSync(join(repo, ".gitignore"), "build/\n*.log\n");
    writeFileSync(join(repo, "src", ".gitignore"), "generated.ts\n");
    writeFileSync(join(repo, "src", "main.ts"), "export {};\n");
    writeFileSync(join(repo, "src", "lib", "util.ts"), "export const x = 1;\n");
    writeFileSync(join(repo, "src", "generated.ts"), "// ignored by src/.gitignore\n");
    writeFileSync(join(repo, "build", "out.js"), "ignored\n");
    writeFileSync(join(repo, "debug.log"), "ignored\n");
    writeFileSync(join(repo, "README.md"), "# demo\n");
    git("add", ".");
    git("commit", "-q", "-m", "first commit");
    writeFileSync(join(repo, "docs", "guide.md"), "guide\n");
    git("add", "docs");
    git("commit", "-q", "-m", "add the guide");
    writeFileSync(join(repo, "README.md"), "# demo, edited\n");
    writeFileSync(join(repo, "notes.txt"), "untracked\n");
    writeFileSync(join(plain, "file.txt"), "x\n");
    plugin = launchPlugin({ executable: MAIN, name: "workspace-context", isolation: "process" });
  });

  afterAll(async () => {
    await plugin.close();
    rmSync(repo, { recursive: true, force: true });
    rmSync(plain, { recursive: true, force: true });
  });

  const client = () => plugin.host.client(ContextService);
  const contribute = (over: Record<string, unknown> = {}) =>
    client().contribute({
      sessionId: "s1",
      turnId: "t1",
      tokenBudget: 4_000n,
      workingDirectory: repo,
      ...over,
    });

  it("describes itself as a dynamic, non-compacting context provider that accepts token_budget", async () => {
    expect(plugin.host.isolation).toBe("process");
    const caps = (await client().getCapabilities({})).capabilities!;
    expect(caps).toMatchObject({ stability: Stability.DYNAMIC, compactor: false, defaultTokenBudget: 2000n });
    expect(caps.configSchema?.attributes.map((a) => a.name)).toContain("token_budget");
    const d = await client().describe({});
    expect(d.producer).toMatchObject({ name: "workspace-context", category: PluginCategory.CONTEXT });
  });

  it("reports the branch, the working-tree status and recent commits from git", async () => {
    const res = await contribute();
    const gitSection = res.sections.find((s) => s.label === "Git state")!;
    const t = text(gitSection);
    expect(t).toContain(`Repository: ${repo}`);
    expect(t).toContain("Branch: trunk");
    expect(t).toContain("1 changed, 1 untracked");
    expect(t).toContain(" M README.md");
    expect(t).toContain("?? notes.txt");
    const commits = t.split("Recent commits:\n")[1]!.split("\n");
    expect(commits[0]).toMatch(/^ {2}[0-9a-f]{7,} add the guide \(Tess, /);
    expect(commits[1]).toMatch(/^ {2}[0-9a-f]{7,} first commit \(Tess, /);
    expect(gitSection.stability).toBe(Stability.DYNAMIC);
    expect(gitSection.provider).toBe("workspace-context");
  });

  it("re-reads the state on every firing", async () => {
    git("add", "README.md");
    git("commit", "-q", "-m", "edit the readme");
    const t = text((await contribute()).sections.find((s) => s.label === "Git state")!);
    expect(t).toContain("0 changed, 1 untracked");
    expect(t).toMatch(/Recent commits:\n {2}[0-9a-f]+ edit the readme/);
  });

  it("lists the file tree without what .gitignore files exclude, at any level", async () => {
    const t = text((await contribute()).sections.find((s) => s.label === "File tree")!);
    const lines = t.split("\n").slice(1);
    expect(lines).toEqual([
      "docs/",
      "  guide.md",
      "src/",
      "  lib/",
      "    util.ts",
      "  .gitignore",
      "  main.ts",
      ".gitignore",
      "notes.txt",
      "README.md",
    ]);
  });

  it("bounds the tree: depth, entry count, and a note of what was left out", async () => {
    await client().configure({ config: { tree_max_depth: 1, tree_max_entries: 3 } });
    try {
      const t = text((await contribute()).sections.find((s) => s.label === "File tree")!);
      expect(t.split("\n").slice(1)).toEqual([
        "docs/",
        "src/",
        ".gitignore",
        "... 2 more",
        "(listing stopped at 3 entries)",
      ]);
    } finally {
      await client().configure({ config: {} });
    }
  });

  it("lists files_touched, most recent last, and only the configured number", async () => {
    const touched = Array.from({ length: 35 }, (_, i) => `src/f${i}.ts`);
    const res = await contribute({ filesTouched: touched });
    const t = text(res.sections.find((s) => s.label === "Files touched this session")!);
    expect(t).toContain("(5 earlier ones not listed)");
    expect(t).not.toContain("src/f4.ts\n");
    expect(t.trimEnd().endsWith("src/f34.ts")).toBe(true);
    expect(res.sections.map((s) => s.label)).toEqual([
      "Git state",
      "Files touched this session",
      "File tree",
    ]);
    const none = await contribute({ filesTouched: [] });
    expect(none.sections.map((s) => s.label)).toEqual(["Git state", "File tree"]);
  });

  it("keeps every section within token_budget by the kernel's count, cutting at line boundaries", async () => {
    for (const budget of [60, 120, 400]) {
      const res = await contribute({ tokenBudget: BigInt(budget), filesTouched: ["a.ts", "b.ts"] });
      const total = res.sections.reduce((n, s) => n + Number(s.tokens), 0);
      expect(total).toBeLessThanOrEqual(budget);
      for (const s of res.sections) {
        // tokens are what the kernel's CountTokens says about the text (fallback: bytes/4)
        expect(Number(s.tokens)).toBe(Math.ceil(Buffer.byteLength(text(s)) / 4));
        if (s.truncated) expect(text(s)).toContain("[truncated to fit the context budget]");
      }
      expect(res.sections[0]?.label).toBe("Git state");
    }
    expect(plugin.kernel.countTokensCalls).toBeGreaterThan(0);
  });

  it("leaves the git section out outside a repository and keeps the tree", async () => {
    const res = await contribute({ workingDirectory: plain });
    expect(res.sections.map((s) => s.label)).toEqual(["File tree"]);
    expect(text(res.sections[0]!)).toContain("file.txt");
  });

  it("keeps earlier providers' sections untouched and replaces its own stale ones", async () => {
    const prior = [
      {
        provider: "other",
        label: "Earlier",
        content: [{ block: { case: "text" as const, value: { text: "x" } } }],
        tokens: 1n,
      },
      { provider: "workspace-context", label: "Git state", content: [], tokens: 0n },
    ];
    const res = await contribute({ priorSections: prior });
    expect(res.sections[0]).toMatchObject({ provider: "other", label: "Earlier" });
    expect(res.sections.filter((s) => s.label === "Git state")).toHaveLength(1);
  });

  it("runs nothing the repository's configuration names (git runs before every model call)", async () => {
    const planted = realpathSync(mkdtempSync(join(tmpdir(), "ph-wsctx-planted-")));
    const marks = join(planted, "marks");
    mkdirSync(marks);
    const pg = (...args: string[]) => execFileSync("git", args, { cwd: planted, stdio: "pipe" });
    pg("init", "-q", "-b", "main");
    writeFileSync(join(planted, "a.txt"), "one\n");
    pg("add", ".");
    pg("-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "one");
    const script = (name: string) => {
      const p = join(planted, ".git", `${name}.sh`);
      writeFileSync(p, `#!/bin/sh\necho >> '${marks}/${name}'\ncat\n`, { mode: 0o755 });
      return p;
    };
    // What one approved bash call could have written into .git/config.
    pg("config", "core.fsmonitor", script("fsmonitor"));
    pg("config", "filter.x.clean", script("clean"));
    pg("config", "core.pager", script("pager"));
    pg("config", "diff.x.textconv", script("textconv"));
    writeFileSync(join(planted, ".gitattributes"), "*.txt filter=x diff=x\n");
    writeFileSync(join(planted, "a.txt"), "two\n");
    try {
      const t = text(
        (await contribute({ workingDirectory: planted })).sections.find((s) => s.label === "Git state")!,
      );
      expect(readdirSync(marks)).toEqual([]);
      expect(t).toContain("Branch: main");
      expect(t).toContain(" M a.txt");
    } finally {
      rmSync(planted, { recursive: true, force: true });
    }
  });

  it("rejects bad configuration with diagnostics naming the attribute", async () => {
    const res = await client().configure({ config: { token_budget: -5, tree_max_depth: 0 } });
    const d = res.result!.diagnostics;
    expect(d.map((x) => [x.severity, x.attributePath.join(".")])).toEqual([
      [DiagnosticSeverity.ERROR, "token_budget"],
      [DiagnosticSeverity.ERROR, "tree_max_depth"],
    ]);
    await client().configure({ config: {} });
  });
});
