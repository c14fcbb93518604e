// The filesystem provider over the real plugin boundary: every operation, its error
// categories, the roots jail (an escape corpus checked against the disk), previews
// that equal the applied change, and concurrency.
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { runConformance, snapshot, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import {
  ConcurrencyScheduler,
  type SchedulableCall,
  validateToolSchemas,
} from "@pluggableharness/kernel/domain";
import { DiffLineOp, type RenderNode } from "@pluggableharness/protocol/render";
import { ToolErrorCategory } from "@pluggableharness/protocol/tool";
import { applyHunks, type Hunk, parseUnified } from "@pluggableharness/tool-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let base: string;
let root: string;
let outside: string;
let h: ToolHarness;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-fs-")));
  root = join(base, "root");
  outside = join(base, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "top secret\n");
  h = new ToolHarness({ executable: MAIN, name: "filesystem" });
  await h.configure({ roots: [root] });
});

afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

const call = (tool: string, args: JsonObject, cwd = root) => h.invoke(tool, args, { cwd });
const category = (name: keyof typeof ToolErrorCategory) => ToolErrorCategory[name];

function diffHunks(node: RenderNode | undefined): Hunk[] {
  const find = (n: RenderNode | undefined): RenderNode | undefined => {
    if (!n) return undefined;
    if (n.node.case === "diff") return n;
    if (n.node.case === "group") {
      for (const c of n.node.value.children) {
        const f = find(c);
        if (f) return f;
      }
    }
    return undefined;
  };
  const diff = find(node);
  if (diff?.node.case !== "diff") throw new Error("no diff node in the preview");
  const ops = {
    [DiffLineOp.ADD]: "add",
    [DiffLineOp.REMOVE]: "remove",
    [DiffLineOp.CONTEXT]: "context",
  } as const;
  return diff.node.value.hunks.map((hk) => ({
    oldStart: hk.oldStart,
    oldLines: hk.oldLines,
    newStart: hk.newStart,
    newLines: hk.newLines,
    lines: hk.lines.map((l) => ({ op: ops[l.op as 1 | 2 | 3], text: l.text })),
  }));
}

describe("read_file", () => {
  it("returns numbered lines, honours line ranges and reports the total", async () => {
    writeFileSync(join(root, "lines.txt"), Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n"));
    const all = await call("read_file", { path: "lines.txt" });
    expect(all.result).toMatchObject({
      start_line: 1,
      end_line: 50,
      total_lines: 50,
      truncated: false,
      notice: "",
    });
    expect(String(all.result!["content"]).split("\n")[0]).toBe("     1\tline 1");
    const part = await call("read_file", { path: join(root, "lines.txt"), offset: 10, limit: 5 });
    expect(part.result).toMatchObject({ start_line: 10, end_line: 14, truncated: true });
    expect(String(part.result!["content"]).split("\n")).toEqual(
      [10, 11, 12, 13, 14].map((n) => `${String(n).padStart(6)}\tline ${n}`),
    );
    expect(part.result!["notice"]).toContain("offset=15");
    const past = await call("read_file", { path: "lines.txt", offset: 51 });
    expect(past.error?.category).toBe(category("INVALID_ARGUMENTS"));
  });

  it("detects binary files and does not return their bytes", async () => {
    writeFileSync(join(root, "blob.bin"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
    const res = await call("read_file", { path: "blob.bin" });
    expect(res.result).toMatchObject({ binary: true, content: "", size_bytes: 8 });
    expect(res.result!["notice"]).toMatch(/binary/);
  });

  it("cuts output at max_read_bytes with an explicit notice", async () => {
    await h.configure({ roots: [root], max_read_bytes: 1024 });
    try {
      writeFileSync(join(root, "big.txt"), `${"x".repeat(100)}\n`.repeat(100));
      const res = await call("read_file", { path: "big.txt" });
      expect(res.result!["truncated"]).toBe(true);
      expect(Buffer.byteLength(String(res.result!["content"]))).toBeLessThanOrEqual(1024);
      expect(res.result!["notice"]).toMatch(/1024-byte output limit.*offset=\d+/);
    } finally {
      await h.configure({ roots: [root] });
    }
  });

  it("classifies missing files, directories and bad arguments", async () => {
    expect((await call("read_file", { path: "nope.txt" })).error?.category).toBe(category("NOT_FOUND"));
    expect((await call("read_file", { path: "sub" })).error?.category).toBe(category("INVALID_ARGUMENTS"));
    expect((await call("read_file", { path: 42 })).error?.category).toBe(category("INVALID_ARGUMENTS"));
    expect((await call("read_file", { path: "x", offset: 0 })).error?.category).toBe(
      category("INVALID_ARGUMENTS"),
    );
  });
});

describe("write_file", () => {
  it("creates files (and parent directories), then overwrites them", async () => {
    const created = await call("write_file", { path: "new/dir/a.txt", content: "one\ntwo\n" });
    expect(created.result).toMatchObject({ created: true, bytes_written: 8, additions: 2, deletions: 0 });
    expect(readFileSync(join(root, "new/dir/a.txt"), "utf8")).toBe("one\ntwo\n");
    const again = await call("write_file", { path: "new/dir/a.txt", content: "one\n2\n" });
    expect(again.result).toMatchObject({ created: false, additions: 1, deletions: 1 });
    expect(readFileSync(join(root, "new/dir/a.txt"), "utf8")).toBe("one\n2\n");
  });

  it("keeps the mode of the file it replaces", async () => {
    writeFileSync(join(root, "script.sh"), "echo a\n");
    chmodSync(join(root, "script.sh"), 0o750);
    await call("write_file", { path: "script.sh", content: "echo b\n" });
    const { statSync } = await import("node:fs");
    expect(statSync(join(root, "script.sh")).mode & 0o777).toBe(0o750);
  });

  it("previews the exact diff it then applies, without touching the disk", async () => {
    writeFileSync(join(root, "p.txt"), "a\nb\nc\n");
    const before = await snapshot(root);
    const preview = await h.preview("write_file", { path: "p.txt", content: "a\nB\nc\nd\n" }, root);
    expect(await snapshot(root)).toEqual(before);
    const hunks = diffHunks(preview);
    const res = await call("write_file", { path: "p.txt", content: "a\nB\nc\nd\n" });
    expect(applyHunks("a\nb\nc\n", hunks)).toBe(readFileSync(join(root, "p.txt"), "utf8"));
    expect(parseUnified(String(res.result!["diff"])).map((x) => x.lines)).toEqual(hunks.map((x) => x.lines));
  });

  it("classifies a path through a file as not_found", async () => {
    writeFileSync(join(root, "plain"), "a file, not a directory\n");
    const res = await call("write_file", { path: "plain/child.txt", content: "x" });
    expect(res.error?.category).toBe(category("NOT_FOUND"));
  });

  it("fails with execution_failed when the operating system refuses the operation", async () => {
    // A unix socket exists but cannot be opened as a file (ENXIO).
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, "sock"), resolve));
    try {
      const res = await call("read_file", { path: "sock" });
      expect(res.error?.category).toBe(category("EXECUTION_FAILED"));
    } finally {
      server.close();
    }
  });
});

describe("edit_file and multi_edit", () => {
  it("replaces one exact match and its preview equals the applied change", async () => {
    const original = "function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n";
    writeFileSync(join(root, "code.js"), original);
    const args = { path: "code.js", old_str: "  return 2;", new_str: "  return 22;\n  // changed" };
    const before = await snapshot(root);
    const preview = await h.preview("edit_file", args, root);
    expect(await snapshot(root)).toEqual(before);
    const hunks = diffHunks(preview);
    const res = await call("edit_file", args);
    expect(res.result).toMatchObject({ replacements: 1, additions: 2, deletions: 1 });
    const after = readFileSync(join(root, "code.js"), "utf8");
    expect(after).toBe(original.replace("  return 2;", "  return 22;\n  // changed"));
    // The previewed hunks turn the old content into exactly the new content on disk...
    expect(applyHunks(original, hunks)).toBe(after);
    // ...and the result's unified diff carries the same hunks.
    expect(parseUnified(String(res.result!["diff"]))).toEqual(hunks);
  });

  it("fails clearly on zero or several matches and honours replace_all", async () => {
    writeFileSync(join(root, "dup.txt"), "x = 1\nx = 1\n");
    const none = await call("edit_file", { path: "dup.txt", old_str: "y = 1", new_str: "z" });
    expect(none.error?.category).toBe(category("NOT_FOUND"));
    expect(none.error?.message).toMatch(/not found/);
    const many = await call("edit_file", { path: "dup.txt", old_str: "x = 1", new_str: "x = 2" });
    expect(many.error?.category).toBe(category("INVALID_ARGUMENTS"));
    expect(many.error?.message).toMatch(/matches 2 places/);
    expect(readFileSync(join(root, "dup.txt"), "utf8")).toBe("x = 1\nx = 1\n");
    const all = await call("edit_file", {
      path: "dup.txt",
      old_str: "x = 1",
      new_str: "x = 2",
      replace_all: true,
    });
    expect(all.result!["replacements"]).toBe(2);
    expect(readFileSync(join(root, "dup.txt"), "utf8")).toBe("x = 2\nx = 2\n");
    const same = await call("edit_file", { path: "dup.txt", old_str: "x", new_str: "x" });
    expect(same.error?.category).toBe(category("INVALID_ARGUMENTS"));
    expect((await call("edit_file", { path: "gone.txt", old_str: "a", new_str: "b" })).error?.category).toBe(
      category("NOT_FOUND"),
    );
  });

  it("applies several edits atomically: one failing edit leaves the file untouched", async () => {
    writeFileSync(join(root, "multi.txt"), "alpha\nbeta\ngamma\n");
    const bad = await call("multi_edit", {
      path: "multi.txt",
      edits: [
        { old_str: "alpha", new_str: "ALPHA" },
        { old_str: "missing", new_str: "x" },
      ],
    });
    expect(bad.error?.category).toBe(category("NOT_FOUND"));
    expect(bad.error?.message).toMatch(/edit 2 of 2/);
    expect(readFileSync(join(root, "multi.txt"), "utf8")).toBe("alpha\nbeta\ngamma\n");
    const good = await call("multi_edit", {
      path: "multi.txt",
      edits: [
        { old_str: "alpha", new_str: "ALPHA" },
        { old_str: "ALPHA\nbeta", new_str: "ALPHA\nBETA" },
      ],
    });
    expect(good.result).toMatchObject({ edits_applied: 2, replacements: 2 });
    expect(readFileSync(join(root, "multi.txt"), "utf8")).toBe("ALPHA\nBETA\ngamma\n");
  });

  it("refuses to edit binary files", async () => {
    writeFileSync(join(root, "img.bin"), Buffer.from([1, 0, 2, 0]));
    const res = await call("edit_file", { path: "img.bin", old_str: "a", new_str: "b" });
    expect(res.error?.category).toBe(category("INVALID_ARGUMENTS"));
  });
});

describe("list_directory", () => {
  it("lists entries with types and sizes, directories first, links not followed", async () => {
    const dir = join(root, "listing");
    mkdirSync(join(dir, "d"), { recursive: true });
    writeFileSync(join(dir, "f.txt"), "12345");
    symlinkSync(outside, join(dir, "l"));
    const res = await call("list_directory", { path: "listing" });
    expect(res.result).toEqual({
      path: "listing",
      entries: [
        { name: "d", type: "directory", size: 0 },
        { name: "f.txt", type: "file", size: 5 },
        { name: "l", type: "symlink", size: 0 },
      ],
      total: 3,
      truncated: false,
      listing: "d/\nf.txt (5 bytes)\nl@",
    });
    expect((await call("list_directory", { path: "listing/f.txt" })).error?.category).toBe(
      category("INVALID_ARGUMENTS"),
    );
  });
});

describe("the roots jail", () => {
  it("denies every escape attempt in the corpus and touches nothing outside", async () => {
    const j = (p: string) => join(root, p);
    symlinkSync(outside, j("link_out"));
    symlinkSync("../outside", j("up"));
    symlinkSync(join(outside, "secret.txt"), j("secret_link"));
    symlinkSync(join(outside, "created-through-link.txt"), j("dangling"));
    symlinkSync(j("loop2"), j("loop1"));
    symlinkSync(j("loop1"), j("loop2"));
    symlinkSync("self", j("self"));
    symlinkSync(j("link_out"), j("chain"));
    mkdirSync(j("deep/er"), { recursive: true });
    symlinkSync("../../up", j("deep/er/back"));
    const before = await snapshot(outside);
    const secret = join(outside, "secret.txt");
    const attempts: [string, JsonObject, string?][] = [
      ["read_file", { path: "../outside/secret.txt" }],
      ["read_file", { path: secret }],
      ["read_file", { path: "/etc/passwd" }],
      ["read_file", { path: "sub/../../outside/secret.txt" }],
      ["read_file", { path: `${root}/../outside/secret.txt` }],
      ["read_file", { path: "link_out/secret.txt" }],
      ["read_file", { path: "up/secret.txt" }],
      ["read_file", { path: "secret_link" }],
      ["read_file", { path: "chain/secret.txt" }],
      ["read_file", { path: "deep/er/back/secret.txt" }],
      ["read_file", { path: "loop1/x" }],
      ["read_file", { path: "self" }],
      ["read_file", { path: `${"../".repeat(2000)}etc/passwd` }],
      ["read_file", { path: "secret.txt" }, outside],
      ["write_file", { path: "../outside/new.txt", content: "x" }],
      ["write_file", { path: join(outside, "abs.txt"), content: "x" }],
      ["write_file", { path: "link_out/new.txt", content: "x" }],
      ["write_file", { path: "secret_link", content: "overwritten" }],
      ["write_file", { path: "dangling", content: "x" }],
      ["write_file", { path: "up/new-dir/new.txt", content: "x" }],
      ["write_file", { path: "chain/new.txt", content: "x" }],
      ["write_file", { path: "loop2", content: "x" }],
      ["edit_file", { path: "secret_link", old_str: "top", new_str: "no" }],
      ["edit_file", { path: "up/secret.txt", old_str: "top", new_str: "no" }],
      ["multi_edit", { path: secret, edits: [{ old_str: "top", new_str: "no" }] }],
      ["list_directory", { path: "../outside" }],
      ["list_directory", { path: "link_out" }],
      ["list_directory", { path: "/" }],
    ];
    expect(attempts.length).toBeGreaterThanOrEqual(20);
    for (const [tool, args, cwd] of attempts) {
      const res = await call(tool, args, cwd ?? root);
      expect(res.result, `${tool} ${JSON.stringify(args).slice(0, 80)} must be denied`).toBeUndefined();
      expect(res.error?.category, `${tool} ${JSON.stringify(args).slice(0, 80)}`).toBe(
        category("PERMISSION_DENIED"),
      );
    }
    // Malformed paths are refused as invalid arguments (and touch nothing either).
    for (const path of [`${"a/".repeat(3000)}f.txt`, "bad\0name", ""]) {
      const res = await call("write_file", { path, content: "x" });
      expect(res.error?.category).toBe(category("INVALID_ARGUMENTS"));
    }
    expect(await snapshot(outside)).toEqual(before);
    expect(readFileSync(secret, "utf8")).toBe("top secret\n");
  });

  it("allows links and paths that stay inside the roots", async () => {
    mkdirSync(join(root, "inner-target"), { recursive: true });
    symlinkSync(join(root, "inner-target"), join(root, "inner-link"));
    const res = await call("write_file", { path: "inner-link/ok.txt", content: "fine\n" });
    expect(res.result).toBeDefined();
    expect(readFileSync(join(root, "inner-target/ok.txt"), "utf8")).toBe("fine\n");
    expect((await call("read_file", { path: "sub/../inner-link/ok.txt" })).result?.["content"]).toBe(
      "     1\tfine",
    );
  });

  it("refuses relative paths without a working directory and calls before any roots are configured", async () => {
    expect((await call("read_file", { path: "x.txt" }, "")).error?.category).toBe(
      category("INVALID_ARGUMENTS"),
    );
    const fresh = new ToolHarness({ executable: MAIN, name: "fs-unconfigured" });
    try {
      const res = await fresh.invoke("read_file", { path: secret() }, { cwd: root });
      expect(res.error?.category).toBe(category("PERMISSION_DENIED"));
      expect(await fresh.configureErrors({ roots: ["relative/path"] })).toEqual(["Invalid root"]);
      expect(await fresh.configureErrors({})).toEqual(['Missing required attribute "roots"']);
    } finally {
      await fresh.close();
    }
  });
});

function secret(): string {
  return join(outside, "secret.txt");
}

describe("concurrency", () => {
  it("declares key_fields that make the kernel scheduler serialize one path and parallelize different paths", async () => {
    const schema = await h.client.getSchema({});
    const toolset = validateToolSchemas("filesystem", schema);
    const edit = toolset.tools.get("edit_file")!;
    expect(edit.concurrency).toEqual({ kind: "keyed", keyFields: ["path"] });
    writeFileSync(join(root, "s1.txt"), "a1 a2\n");
    writeFileSync(join(root, "s2.txt"), "b1\n");
    const scheduler = new ConcurrencyScheduler();
    const log: string[] = [];
    let releaseParallel!: () => void;
    const parallelSeen = new Promise<void>((r) => {
      releaseParallel = r;
    });
    const started = new Set<string>();
    const run = async (c: SchedulableCall) => {
      log.push(`start ${c.id}`);
      started.add(c.id);
      // c1 (s1.txt) waits until c3 (s2.txt) is running too: only a scheduler that runs
      // different paths in parallel lets this finish.
      if (c.id === "c1") await Promise.race([parallelSeen, new Promise((r) => setTimeout(r, 5_000))]);
      if (c.id === "c3") releaseParallel();
      const res = await call("edit_file", c.arguments);
      log.push(`end ${c.id}`);
      return res;
    };
    const calls: SchedulableCall[] = [
      { id: "c1", tool: edit, arguments: { path: "s1.txt", old_str: "a1", new_str: "A1" } },
      { id: "c2", tool: edit, arguments: { path: "s1.txt", old_str: "a2", new_str: "A2" } },
      { id: "c3", tool: edit, arguments: { path: "s2.txt", old_str: "b1", new_str: "B1" } },
    ];
    const t0 = Date.now();
    const results = await Promise.all(calls.map((c) => scheduler.submit(c, run)));
    expect(Date.now() - t0).toBeLessThan(4_000); // c1 was released by c3, not by the guard
    expect(results.every((r) => r.result)).toBe(true);
    // Same path: c2 starts only after c1 ended. Different path: c3 started before c1 ended.
    expect(log.indexOf("start c2")).toBeGreaterThan(log.indexOf("end c1"));
    expect(log.indexOf("start c3")).toBeLessThan(log.indexOf("end c1"));
    expect(readFileSync(join(root, "s1.txt"), "utf8")).toBe("A1 A2\n");
    expect(readFileSync(join(root, "s2.txt"), "utf8")).toBe("B1\n");
  });

  it("stays correct when many edits of one file arrive at once under different spellings of its path", async () => {
    const n = 24;
    writeFileSync(join(root, "shared.txt"), Array.from({ length: n }, (_, i) => `<m${i}>`).join("\n"));
    symlinkSync(join(root, "shared.txt"), join(root, "shared-alias"));
    const spellings = [
      "shared.txt",
      "./shared.txt",
      join(root, "shared.txt"),
      "shared-alias",
      "sub/../shared.txt",
    ];
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        call("edit_file", { path: spellings[i % spellings.length]!, old_str: `<m${i}>`, new_str: `<M${i}>` }),
      ),
    );
    expect(results.filter((r) => r.error).map((r) => r.error?.message)).toEqual([]);
    expect(readFileSync(join(root, "shared.txt"), "utf8")).toBe(
      Array.from({ length: n }, (_, i) => `<M${i}>`).join("\n"),
    );
  });
});

describe("conformance", () => {
  it.each(TRANSPORTS)(
    "passes agent conform's tool-provider checks over the %s transport",
    async (isolation) => {
      const work = mkdtempSync(join(tmpdir(), "ph-fs-conform-"));
      try {
        const report = await runConformance({
          isolation,
          executable: MAIN,
          config: { roots: [work] },
          workingDirectory: work,
          samples: [
            { tool: "write_file", arguments: { path: "c.txt", content: "one\ntwo\n" }, expect: "result" },
            { tool: "read_file", arguments: { path: "c.txt" }, expect: "result" },
            {
              tool: "edit_file",
              arguments: { path: "c.txt", old_str: "two", new_str: "2" },
              expect: "result",
            },
            {
              tool: "multi_edit",
              arguments: { path: "c.txt", edits: [{ old_str: "one", new_str: "1" }] },
              expect: "result",
            },
            {
              tool: "edit_file",
              arguments: { path: "c.txt", old_str: "absent", new_str: "x" },
              expect: "not_found",
            },
            { tool: "list_directory", arguments: {}, expect: "result" },
            { tool: "read_file", arguments: { path: "/etc/hostname" }, expect: "permission_denied" },
          ],
        });
        expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
        expect(report.exitCode).toBe(0);
        expect(report.isolation).toBe(isolation);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  );
});
