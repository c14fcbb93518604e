// glob and grep over the real plugin boundary, the .gitignore policy, result caps,
// the roots jail, and speed on a 10,000-file tree.
import { linkSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isIgnored, parseGitignore } from "../src/gitignore.ts";
import { compileGlob, fileFilter } from "../src/glob.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let base: string;
let repo: string;
let big: string;
let h: ToolHarness;

function put(root: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
}

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-search-")));
  repo = join(base, "repo");
  big = join(base, "big");
  put(repo, {
    ".gitignore": "node_modules/\n*.log\n!keep.log\n/build\n",
    "src/app.ts": "import x from './x';\nexport function main() {\n  return TODO_item;\n}\n",
    "src/lib/util.ts": "export const a = 1;\n// TODO: tidy\nexport const b = 2;\n",
    "src/lib/util.test.js": "test('todo', () => {});\n",
    "src/lib/.gitignore": "generated.ts\n",
    "src/lib/generated.ts": "// TODO generated\n",
    "docs/readme.md": "Nothing to do here.\nTODO later\n",
    "node_modules/pkg/index.ts": "// TODO in a dependency\n",
    "build/out.ts": "// TODO built\n",
    "sub/build/kept.ts": "// TODO not the root build\n",
    "debug.log": "TODO log\n",
    "keep.log": "TODO keep\n",
    "bin/blob.dat": "TODO\0binary",
    ".git/HEAD": "TODO ref\n",
  });
  symlinkSync(join(repo, "src"), join(repo, "src-link"));
  // 10,000 files in 100 directories for the speed check.
  for (let d = 0; d < 100; d++) {
    const dir = join(big, `pkg${d}`, "src");
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 100; f++) {
      const needle = d === 42 && f === 7 ? "const NEEDLE_TOKEN = 1;\n" : "";
      writeFileSync(
        join(dir, `file${f}.ts`),
        `// module ${d}/${f}\nexport const value${f} = ${f};\n${needle}`.repeat(3),
      );
    }
  }
  h = new ToolHarness({ executable: MAIN, name: "search" });
  await h.configure({ roots: [repo, big] });
});

afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

const call = (tool: string, args: JsonObject, cwd = repo) => h.invoke(tool, args, { cwd });

describe("glob patterns and .gitignore rules", () => {
  it("compiles globs", () => {
    expect(compileGlob("**/*.ts").test("a/b/c.ts")).toBe(true);
    expect(compileGlob("**/*.ts").test("c.ts")).toBe(true);
    expect(compileGlob("*.ts").test("a/c.ts")).toBe(false);
    expect(compileGlob("src/**").test("src/a/b")).toBe(true);
    expect(compileGlob("src/*.{js,ts}").test("src/a.js")).toBe(true);
    expect(compileGlob("src/*.{js,ts}").test("src/a.py")).toBe(false);
    expect(compileGlob("file[0-2].?s").test("file1.ts")).toBe(true);
    expect(compileGlob("file[!0-2].ts").test("file1.ts")).toBe(false);
    expect(compileGlob("a/**/b").test("a/x/y/b")).toBe(true);
    expect(compileGlob("a/**/b").test("a/b")).toBe(true);
    expect(compileGlob("a.b").test("axb")).toBe(false);
    expect(fileFilter("*.ts")("deep/dir/x.ts")).toBe(true);
    expect(fileFilter("src/*.ts")("deep/src/x.ts")).toBe(false);
  });

  it("applies gitignore semantics", () => {
    const root = parseGitignore("*.log\n!keep.log\n/build\nout/\ndocs/**/*.tmp\n", "");
    expect(isIgnored([root], "a/b.log", false)).toBe(true);
    expect(isIgnored([root], "keep.log", false)).toBe(false);
    expect(isIgnored([root], "build", true)).toBe(true);
    expect(isIgnored([root], "x/build", true)).toBe(false);
    expect(isIgnored([root], "x/out", true)).toBe(true);
    expect(isIgnored([root], "x/out", false)).toBe(false);
    expect(isIgnored([root], "docs/a/b/c.tmp", false)).toBe(true);
    // Trailing spaces are dropped unless a backslash keeps the first of them.
    const spaces = parseGitignore(`plain   \nkept\\  \n${" ".repeat(2_000)}x${" ".repeat(2_000)}\n`, "");
    expect(isIgnored([spaces], "plain", false)).toBe(true);
    expect(isIgnored([spaces], "kept ", false)).toBe(true);
    expect(isIgnored([spaces], "kept", false)).toBe(false);
    const nested = parseGitignore("gen.ts\n", "src");
    expect(isIgnored([root, nested], "src/deep/gen.ts", false)).toBe(true);
    expect(isIgnored([root, nested], "gen.ts", false)).toBe(false);
  });
});

describe("glob", () => {
  it("matches paths relative to the search directory and skips ignored files, .git and link targets", async () => {
    const res = await call("glob", { pattern: "**/*.ts" });
    expect(res.result).toEqual({
      files: ["src/app.ts", "src/lib/util.ts", "sub/build/kept.ts"],
      total: 3,
      truncated: false,
    });
    const sub = await call("glob", { pattern: "*.ts", path: "src/lib" });
    expect(sub.result!["files"]).toEqual(["src/lib/util.ts"]);
    const all = await call("glob", { pattern: "**/*.ts", include_ignored: true, limit: 3 });
    expect(all.result).toMatchObject({ total: 6, truncated: true });
    expect((all.result!["files"] as string[]).length).toBe(3);
    const logs = await call("glob", { pattern: "*.log" });
    expect(logs.result!["files"]).toEqual(["keep.log"]);
  });

  it("lists a symbolic link by name without following it", async () => {
    const res = await call("glob", { pattern: "src-*" });
    expect(res.result!["files"]).toEqual(["src-link"]);
  });

  it("sorts by modification time on request", async () => {
    const res = await call("glob", { pattern: "src/**/*.ts", sort: "modified" });
    expect((res.result!["files"] as string[]).sort()).toEqual(["src/app.ts", "src/lib/util.ts"]);
  });
});

describe("grep", () => {
  it("returns matching lines with line numbers, honouring .gitignore, binary files and .git", async () => {
    const res = await call("grep", { pattern: "TODO" });
    const matches = res.result!["matches"] as { path: string; line: number; text: string }[];
    expect(matches.map((m) => `${m.path}:${m.line}`)).toEqual([
      "docs/readme.md:2",
      "keep.log:1",
      "src/app.ts:3",
      "src/lib/util.ts:2",
      "sub/build/kept.ts:1",
    ]);
    expect(res.result).toMatchObject({ mode: "content", total_matches: 5, truncated: false });
  });

  it("supports case-insensitive, literal, glob-filtered and context searches", async () => {
    const ci = await call("grep", { pattern: "todo", case_insensitive: true, glob: "*.{ts,js}" });
    expect((ci.result!["matches"] as { path: string }[]).map((m) => m.path)).toEqual([
      "src/app.ts",
      "src/lib/util.test.js",
      "src/lib/util.ts",
      "sub/build/kept.ts",
    ]);
    const literal = await call("grep", { pattern: "a = 1;", literal: true, context_lines: 1 });
    expect(literal.result!["matches"]).toEqual([
      { path: "src/lib/util.ts", line: 1, text: "export const a = 1;", before: [], after: ["// TODO: tidy"] },
    ]);
    // What the model reads (model_text_field): grep's own format, context lines with "-".
    expect(literal.result!["output"]).toBe(
      "src/lib/util.ts:1:export const a = 1;\nsrc/lib/util.ts-2-// TODO: tidy",
    );
    const regex = await call("grep", { pattern: "^export const [ab]", path: "src" });
    expect(regex.result!["total_matches"]).toBe(2);
  });

  it("reports files or counts, and caps results", async () => {
    const files = await call("grep", {
      pattern: "TODO",
      output_mode: "files_with_matches",
      include_ignored: true,
    });
    expect((files.result!["files"] as { path: string }[]).map((f) => f.path)).toContain(
      "node_modules/pkg/index.ts",
    );
    const counts = await call("grep", { pattern: "export", output_mode: "count" });
    expect(String(counts.result!["output"]).split("\n")).toContain("src/lib/util.ts:2");
    expect(counts.result!["files"]).toEqual([
      { path: "src/app.ts", count: 1 },
      { path: "src/lib/util.ts", count: 2 },
    ]);
    const capped = await call("grep", { pattern: "TODO", max_results: 2 });
    expect(capped.result).toMatchObject({ truncated: true });
    expect((capped.result!["matches"] as unknown[]).length).toBe(2);
  });

  it("classifies bad calls and stays inside the roots", async () => {
    expect((await call("grep", { pattern: "(" })).error?.category).toBe(ToolErrorCategory.INVALID_ARGUMENTS);
    expect((await call("grep", { pattern: "x", path: "nope" })).error?.category).toBe(
      ToolErrorCategory.NOT_FOUND,
    );
    expect((await call("grep", { pattern: "x", path: "/etc" })).error?.category).toBe(
      ToolErrorCategory.PERMISSION_DENIED,
    );
    expect((await call("grep", { pattern: "x", path: "src-link/../../" })).error?.category).toBe(
      ToolErrorCategory.PERMISSION_DENIED,
    );
    expect((await call("glob", { pattern: "/etc/*" })).error?.category).toBe(
      ToolErrorCategory.INVALID_ARGUMENTS,
    );
    expect((await call("glob", { pattern: "*", path: "../.." })).error?.category).toBe(
      ToolErrorCategory.PERMISSION_DENIED,
    );
  });

  it("skips a file with another hard link (it may be outside the roots), and refuses one named on its own", async () => {
    const outside = join(base, "outside");
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, "secret.txt"), "SECRET_OUTSIDE\n");
    linkSync(join(outside, "secret.txt"), join(repo, "docs", "alias.txt"));
    try {
      const all = await call("grep", { pattern: "SECRET_\\w+" });
      expect(all.result).toMatchObject({ total_matches: 0 });
      expect(all.result!["output"]).toBe("");
      const named = await call("grep", { pattern: "SECRET", path: "docs/alias.txt" });
      expect(named.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
      expect(named.error?.message).toMatch(/2 hard links/);
    } finally {
      rmSync(join(repo, "docs", "alias.txt"));
    }
  });

  it("greps a 10,000-file tree well under two seconds", async () => {
    // Warm the file cache once, as an editor session would have.
    await call("glob", { pattern: "**/*.ts", limit: 1 }, big);
    const t0 = performance.now();
    const res = await call("grep", { pattern: "NEEDLE_\\w+" }, big);
    const ms = performance.now() - t0;
    expect(res.result).toMatchObject({ files_searched: 10_000, total_matches: 3 });
    expect((res.result!["matches"] as { path: string }[])[0]!.path).toBe("pkg42/src/file7.ts");
    expect(ms).toBeLessThan(2_000);
    const t1 = performance.now();
    const glob = await call("glob", { pattern: "**/file9?.ts" }, big);
    expect(glob.result!["total"]).toBe(1_000);
    expect(performance.now() - t1).toBeLessThan(2_000);
  });

  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks over the %s transport",
    async (isolation) => {
      const report = await runConformance({
        isolation,
        executable: MAIN,
        config: { roots: [repo] },
        workingDirectory: repo,
        samples: [
          { tool: "glob", arguments: { pattern: "**/*.ts" }, expect: "result" },
          { tool: "grep", arguments: { pattern: "TODO", context_lines: 1 }, expect: "result" },
          { tool: "grep", arguments: { pattern: "x", path: "/etc" }, expect: "permission_denied" },
        ],
      });
      expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
      expect(report.exitCode).toBe(0);
      expect(report.isolation).toBe(isolation);
    },
  );
});
