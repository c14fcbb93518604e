// apply_patch, edit_files and notebook_edit over the real plugin boundary: the patch
// grammar, one atomic change across files (create, update, delete, move), previews that
// show the whole change and equal what is applied, all-or-nothing on a failing hunk and
// on a crash mid-commit (rolled back at the next start), per-path serialization, and
// notebook cells edited with everything else kept.
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
import type { JsonValue } from "@bufbuild/protobuf";
import { runConformance, ToolHarness, TRANSPORTS } from "@pluggableharness/conformance";
import {
  ConcurrencyScheduler,
  type SchedulableCall,
  validateToolSchemas,
} from "@pluggableharness/kernel/domain";
import type { RenderNode } from "@pluggableharness/protocol/render";
import { RiskClass, ToolErrorCategory, ToolKind } from "@pluggableharness/protocol/tool";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { applyChunks, type PatchOp, parsePatch } from "../src/patch-format.ts";

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url));

let base: string;
let root: string;
let h: ToolHarness;

beforeAll(async () => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "ph-fs-multi-")));
  root = join(base, "root");
  mkdirSync(root);
  h = new ToolHarness({ executable: MAIN, name: "filesystem" });
  await h.configure({ roots: [root] });
});

afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

beforeEach(() => {
  for (const n of readdirSync(root)) rmSync(join(root, n), { recursive: true, force: true });
});

const put = (p: string, text: string) => {
  mkdirSync(join(root, p, ".."), { recursive: true });
  writeFileSync(join(root, p), text);
};
const get = (p: string) => readFileSync(join(root, p), "utf8");
const tree = () => {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const n of readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${n.name}` : n.name;
      if (n.isDirectory()) walk(join(d, n.name), r);
      else out[r] = readFileSync(join(d, n.name), "utf8");
    }
  };
  walk(root, "");
  return out;
};
const texts = (n: RenderNode | undefined): string[] => {
  if (!n) return [];
  if (n.node.case === "text") return [n.node.value.content];
  if (n.node.case === "group") return n.node.value.children.flatMap(texts);
  if (n.node.case === "diff")
    return n.node.value.hunks.flatMap((hk) => hk.lines.map((l) => `${["", " ", "+", "-"][l.op]}${l.text}`));
  return [];
};

const PATCH = [
  "*** Begin Patch",
  "*** Add File: docs/new.md",
  "+# New",
  "+hello",
  "*** Update File: src/app.py",
  "@@ def greet():",
  "-    print('hi')",
  "+    print('hello, world')",
  "*** Delete File: old.txt",
  "*** Update File: lib/a.py",
  "*** Move to: lib/b.py",
  "@@",
  " x = 1",
  "-y = 2",
  "+y = 3",
  "*** End Patch",
].join("\n");

function seed() {
  put(
    "src/app.py",
    "import os\n\ndef other():\n    print('hi')\n\ndef greet():\n    print('hi')\n    return 1\n",
  );
  put("old.txt", "gone\n");
  put("lib/a.py", "x = 1\ny = 2\nz = 3\n");
}

describe("the patch grammar", () => {
  it("parses every operation, the @@ anchor, Move to and End of File", () => {
    const ops = parsePatch(`${PATCH}\n`);
    expect(ops.map((o) => [o.kind, o.path])).toEqual([
      ["add", "docs/new.md"],
      ["update", "src/app.py"],
      ["delete", "old.txt"],
      ["update", "lib/a.py"],
    ]);
    expect(ops[0]).toMatchObject({ content: "# New\nhello\n" });
    expect(ops[1]).toMatchObject({ chunks: [{ context: "def greet():", oldLines: ["    print('hi')"] }] });
    expect(ops[3]).toMatchObject({ moveTo: "lib/b.py" });
    const eof = parsePatch(
      "*** Begin Patch\n*** Update File: f\n@@\n-last\n+final\n*** End of File\n*** End Patch",
    );
    expect(eof[0]).toMatchObject({ chunks: [{ endOfFile: true }] });
    // A heredoc wrapper, as models sometimes send it, is taken off.
    expect(parsePatch(`apply_patch <<'EOF'\n${PATCH}\nEOF`)).toHaveLength(4);
  });

  it("rejects malformed patches with the line at fault", () => {
    const bad = (t: string) => {
      try {
        parsePatch(t);
      } catch (e) {
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(bad("*** Update File: a\n@@\n-x\n*** End Patch")).toMatch(/line 1: .*Begin Patch/);
    expect(bad("*** Begin Patch\n*** Update File: a\n@@\n-x")).toMatch(/End Patch/);
    expect(bad("*** Begin Patch\n*** Frobnicate: a\n*** End Patch")).toMatch(/line 2: expected/);
    expect(bad("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch")).toMatch(
      /line 4: a change line/,
    );
    expect(bad("*** Begin Patch\n*** End Patch")).toMatch(/changes no file/);
  });

  it("finds context exactly, then ignoring whitespace and typographic punctuation, and honours the anchor", () => {
    const file = "a\nb\nc\na\nb\nc\n";
    const [op] = parsePatch("*** Begin Patch\n*** Update File: f\n@@ c\n a\n-b\n+B\n*** End Patch");
    expect(applyChunks("f", file, (op as Extract<PatchOp, { kind: "update" }>).chunks)).toBe(
      "a\nb\nc\na\nB\nc\n",
    );
    const [fuzzy] = parsePatch(
      "*** Begin Patch\n*** Update File: f\n@@\n-say \u201chi\u201d  \n+say 'hi'\n*** End Patch",
    );
    expect(applyChunks("f", 'x\nsay "hi"\n', (fuzzy as Extract<PatchOp, { kind: "update" }>).chunks)).toBe(
      "x\nsay 'hi'\n",
    );
  });
});

describe("apply_patch", () => {
  it("previews the whole change, then applies create, update, delete and move as one", async () => {
    seed();
    const before = tree();
    const preview = texts(await h.preview("apply_patch", { patch: PATCH }, root));
    expect(tree()).toEqual(before); // the preview touched nothing
    expect(preview[0]).toMatch(/^4 files \(\+4 -3\)$/);
    expect(preview).toContain("Create docs/new.md (+2 -0)");
    expect(preview).toContain("Update src/app.py (+1 -1)");
    expect(preview).toContain("Delete old.txt (+0 -1)");
    expect(preview).toContain("Move lib/a.py → lib/b.py (+1 -1)");
    expect(preview).toContain("+    print('hello, world')");
    const res = await h.invoke("apply_patch", { patch: PATCH }, { cwd: root });
    expect(res.error).toBeUndefined();
    expect(res.result!["files"]).toEqual([
      { path: "docs/new.md", action: "created", additions: 2, deletions: 0 },
      { path: "src/app.py", action: "updated", additions: 1, deletions: 1 },
      { path: "old.txt", action: "deleted", additions: 0, deletions: 1 },
      { path: "lib/b.py", action: "moved", from: "lib/a.py", additions: 1, deletions: 1 },
    ]);
    expect(tree()).toEqual({
      "docs/new.md": "# New\nhello\n",
      "src/app.py":
        "import os\n\ndef other():\n    print('hi')\n\ndef greet():\n    print('hello, world')\n    return 1\n",
      "lib/b.py": "x = 1\ny = 3\nz = 3\n",
    });
    expect(String(res.result!["diff"])).toContain("+++ /dev/null");
  });

  it("changes nothing when one hunk of a multi-file patch does not match", async () => {
    seed();
    const before = tree();
    const bad = PATCH.replace("-y = 2", "-y = 999");
    const res = await h.invoke("apply_patch", { patch: bad }, { cwd: root });
    expect(res.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    expect(res.error?.message).toMatch(/lib\/a\.py.*not found/s);
    expect(tree()).toEqual(before);
  });

  it("rolls back the files already committed when a later step fails", async () => {
    seed();
    const before = tree();
    const failing = new ToolHarness({
      executable: MAIN,
      name: "filesystem",
      env: { PH_FS_FAULT_AFTER_COMMITS: "3:fail" },
    });
    try {
      await failing.configure({ roots: [root] });
      const res = await failing.invoke("apply_patch", { patch: PATCH }, { cwd: root });
      expect(res.error?.category).toBe(ToolErrorCategory.EXECUTION_FAILED);
      expect(res.error?.message).toMatch(/EIO.*no file was changed/);
    } finally {
      await failing.close();
    }
    // Three of five steps had been committed (a create, an update, a delete): all undone,
    // and no temporary file, backup or journal is left behind.
    expect(tree()).toEqual(before);
    expect(readdirSync(root).filter((n) => n.startsWith("."))).toEqual([]);
  });

  it("survives a crash mid-commit: the next start rolls the half-applied change back", async () => {
    seed();
    const before = tree();
    const crashing = new ToolHarness({
      executable: MAIN,
      name: "filesystem",
      env: { PH_FS_FAULT_AFTER_COMMITS: "2:crash" },
    });
    try {
      await crashing.configure({ roots: [root] });
      await crashing.invoke("apply_patch", { patch: PATCH }, { cwd: root }).catch(() => undefined);
    } finally {
      await crashing.close().catch(() => {});
    }
    // Killed after two of four commit steps: half the change is on disk, and its journal.
    const after = readdirSync(root);
    expect(after.some((n) => /^\.apply-patch-[0-9a-f]+\.journal$/.test(n))).toBe(true);
    expect(existsSync(join(root, "docs/new.md"))).toBe(true);
    const next = new ToolHarness({ executable: MAIN, name: "filesystem" });
    try {
      await next.configure({ roots: [root] });
    } finally {
      await next.close();
    }
    expect(tree()).toEqual(before);
  });

  it("refuses paths outside the roots and touching one file twice", async () => {
    seed();
    const out = await h.invoke(
      "apply_patch",
      { patch: "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch" },
      { cwd: root },
    );
    expect(out.error?.category).toBe(ToolErrorCategory.PERMISSION_DENIED);
    expect(existsSync(join(base, "escape.txt"))).toBe(false);
    const twice = await h.invoke(
      "apply_patch",
      { patch: "*** Begin Patch\n*** Delete File: old.txt\n*** Add File: ./old.txt\n+x\n*** End Patch" },
      { cwd: root },
    );
    expect(twice.error?.message).toMatch(/changed twice/);
    expect(get("old.txt")).toBe("gone\n");
  });

  it("serialises per file: concurrent patches and edits of one file all land", async () => {
    put("n.txt", Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n") + "\n");
    const jobs = Array.from({ length: 10 }, (_, i) =>
      i % 2 === 0
        ? h.invoke(
            "apply_patch",
            { patch: `*** Begin Patch\n*** Update File: n.txt\n@@\n-line ${i}\n+LINE ${i}\n*** End Patch` },
            { cwd: root },
          )
        : h.invoke(
            "edit_file",
            { path: join(root, "n.txt"), old_str: `line ${i}\n`, new_str: `LINE ${i}\n` },
            { cwd: root },
          ),
    );
    const results = await Promise.all(jobs);
    expect(results.map((r) => r.error?.message)).toEqual(Array(10).fill(undefined));
    for (let i = 0; i < 10; i++) expect(get("n.txt")).toContain(`LINE ${i}\n`);
  });
});

describe("edit_files", () => {
  it("applies structured creates, edits, deletes and moves atomically", async () => {
    seed();
    const changes: JsonValue[] = [
      { path: "docs/x.md", action: "create", content: "x\n" },
      { path: "src/app.py", action: "edit", edits: [{ old_str: "import os", new_str: "import sys" }] },
      { path: "old.txt", action: "delete" },
      { path: "lib/a.py", action: "move", to: "lib/c.py" },
    ];
    const preview = texts(await h.preview("edit_files", { changes }, root));
    expect(preview[0]).toBe("4 files (+2 -2)");
    const res = await h.invoke("edit_files", { changes }, { cwd: root });
    expect(res.error).toBeUndefined();
    expect(Object.keys(tree()).sort()).toEqual(["docs/x.md", "lib/c.py", "src/app.py"]);
    expect(get("src/app.py")).toMatch(/^import sys\n/);
    expect(get("lib/c.py")).toBe("x = 1\ny = 2\nz = 3\n");
  });

  it("changes nothing when one entry fails", async () => {
    seed();
    const before = tree();
    const res = await h.invoke(
      "edit_files",
      {
        changes: [
          { path: "docs/x.md", action: "create", content: "x\n" },
          { path: "src/app.py", action: "edit", edits: [{ old_str: "absent", new_str: "y" }] },
        ],
      },
      { cwd: root },
    );
    expect(res.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    expect(res.error?.message).toMatch(/changes\[1\]/);
    expect(tree()).toEqual(before);
  });
});

const NOTEBOOK = `${JSON.stringify(
  {
    cells: [
      {
        cell_type: "markdown",
        id: "intro",
        metadata: { tags: ["keep"] },
        source: ["# Title\n", "text"],
      },
      {
        cell_type: "code",
        execution_count: 3,
        id: "calc",
        metadata: {},
        outputs: [{ name: "stdout", output_type: "stream", text: ["2\n"] }],
        source: ["x = 1\n", "print(x + 1)"],
      },
    ],
    metadata: { kernelspec: { display_name: "Python 3", language: "python", name: "python3" } },
    nbformat: 4,
    nbformat_minor: 5,
  },
  null,
  1,
)}\n`;

describe("notebook_edit", () => {
  it("replaces a code cell's source (clearing its outputs), keeping everything else", async () => {
    put("nb.ipynb", NOTEBOOK);
    const args = { path: "nb.ipynb", mode: "replace", cell_id: "calc", source: "x = 2\nprint(x * 3)" };
    const preview = texts(await h.preview("notebook_edit", args, root));
    expect(preview[0]).toBe("Replace code cell 1 (id calc) of nb.ipynb");
    expect(preview).toContain("-x = 1");
    expect(preview).toContain("+print(x * 3)");
    expect(get("nb.ipynb")).toBe(NOTEBOOK);
    const res = await h.invoke("notebook_edit", args, { cwd: root });
    expect(res.error).toBeUndefined();
    const nb = JSON.parse(get("nb.ipynb"));
    const orig = JSON.parse(NOTEBOOK);
    expect(nb.cells[0]).toEqual(orig.cells[0]);
    expect(nb.metadata).toEqual(orig.metadata);
    expect(nb.cells[1]).toEqual({
      ...orig.cells[1],
      source: ["x = 2\n", "print(x * 3)"],
      outputs: [],
      execution_count: null,
    });
    // nbformat's layout: one-space indent, the original key order, a final newline.
    expect(get("nb.ipynb")).toBe(`${JSON.stringify(nb, null, 1)}\n`);
    expect(Object.keys(nb)).toEqual(Object.keys(orig));
  });

  it("inserts after a cell and deletes by index", async () => {
    put("nb.ipynb", NOTEBOOK);
    const ins = await h.invoke(
      "notebook_edit",
      { path: "nb.ipynb", mode: "insert", cell_id: "intro", cell_type: "markdown", source: "## Setup\n" },
      { cwd: root },
    );
    expect(ins.result).toMatchObject({ index: 1, cell_type: "markdown", total_cells: 3 });
    let nb = JSON.parse(get("nb.ipynb"));
    expect(nb.cells[1]).toEqual({
      cell_type: "markdown",
      id: ins.result!["cell_id"],
      metadata: {},
      source: ["## Setup\n"],
    });
    expect(String(ins.result!["cell_id"])).toMatch(/^[0-9a-f]{8}$/);
    const code = await h.invoke(
      "notebook_edit",
      { path: "nb.ipynb", mode: "insert", source: "y = 0" },
      { cwd: root },
    );
    expect(code.result).toMatchObject({ index: 3, cell_type: "code" });
    nb = JSON.parse(get("nb.ipynb"));
    expect(nb.cells[3]).toMatchObject({ outputs: [], execution_count: null, source: ["y = 0"] });
    const del = await h.invoke(
      "notebook_edit",
      { path: "nb.ipynb", mode: "delete", index: 0 },
      { cwd: root },
    );
    expect(del.result).toMatchObject({ total_cells: 3 });
    nb = JSON.parse(get("nb.ipynb"));
    expect(nb.cells.map((c: { id: string }) => c.id)).toEqual([
      ins.result!["cell_id"],
      "calc",
      code.result!["cell_id"],
    ]);
  });

  it("fails clearly on an unknown cell, a bad index or a file that is not a notebook", async () => {
    put("nb.ipynb", NOTEBOOK);
    put("x.ipynb", "{not json");
    const miss = await h.invoke(
      "notebook_edit",
      { path: "nb.ipynb", mode: "delete", cell_id: "nope" },
      { cwd: root },
    );
    expect(miss.error?.category).toBe(ToolErrorCategory.NOT_FOUND);
    expect(miss.error?.message).toMatch(/ids: intro, calc/);
    const idx = await h.invoke(
      "notebook_edit",
      { path: "nb.ipynb", mode: "replace", index: 9, source: "" },
      { cwd: root },
    );
    expect(idx.error?.message).toMatch(/out of range.*2 cells/);
    const broken = await h.invoke(
      "notebook_edit",
      { path: "x.ipynb", mode: "delete", index: 0 },
      { cwd: root },
    );
    expect(broken.error?.message).toMatch(/not valid JSON/);
    expect(get("nb.ipynb")).toBe(NOTEBOOK);
  });
});

describe("declarations and conformance", () => {
  it("declares kind, risk and ConcurrencySpec per the seed, accepted by the kernel's schema rules", async () => {
    const schema = await h.client.getSchema({});
    const byName = new Map(schema.tools.map((t) => [t.name, t]));
    for (const name of ["apply_patch", "edit_files", "notebook_edit"]) {
      const t = byName.get(name)!;
      expect(t.kind).toBe(ToolKind.RESOURCE);
      expect(t.risk).toBe(RiskClass.MODERATE);
      expect(t.concurrency?.safe).toBe(true);
      expect(schema.previewSupported).toContain(name);
    }
    const toolset = validateToolSchemas("filesystem", schema);
    expect(toolset.tools.get("notebook_edit")!.concurrency).toEqual({ kind: "keyed", keyFields: ["path"] });
    expect(toolset.tools.get("apply_patch")!.concurrency).toEqual({ kind: "keyed", keyFields: ["patch"] });
    expect(toolset.tools.get("edit_files")!.concurrency).toEqual({ kind: "keyed", keyFields: ["changes"] });
    // The kernel serialises identical patches; the plugin serialises distinct patches of one
    // file (the concurrency test above): both hold through the scheduler.
    const patch = toolset.tools.get("apply_patch")!;
    put("k.txt", "a\nb\n");
    const scheduler = new ConcurrencyScheduler();
    const p1 = "*** Begin Patch\n*** Update File: k.txt\n@@\n-a\n+A\n*** End Patch";
    const p2 = "*** Begin Patch\n*** Update File: k.txt\n@@\n-b\n+B\n*** End Patch";
    const calls: SchedulableCall[] = [
      { id: "c1", tool: patch, arguments: { patch: p1 } },
      { id: "c2", tool: patch, arguments: { patch: p1 } },
      { id: "c3", tool: patch, arguments: { patch: p2 } },
    ];
    const results = await Promise.all(
      calls.map((c) => scheduler.submit(c, (x) => h.invoke("apply_patch", x.arguments, { cwd: root }))),
    );
    // The repeated patch runs after the first and finds its lines gone.
    expect(results.map((r) => (r.error ? "error" : "ok"))).toEqual(["ok", "error", "ok"]);
    expect(get("k.txt")).toBe("A\nB\n");
  });

  it.each(TRANSPORTS)(
    "passes agent conform with the new operations over the %s transport",
    async (isolation) => {
      const work = realpathSync(mkdtempSync(join(tmpdir(), "ph-fs-multi-conform-")));
      try {
        writeFileSync(join(work, "nb.ipynb"), NOTEBOOK);
        writeFileSync(join(work, "a.txt"), "one\n");
        const report = await runConformance({
          isolation,
          executable: MAIN,
          config: { roots: [work] },
          workingDirectory: work,
          samples: [
            {
              tool: "apply_patch",
              arguments: { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch" },
              expect: "result",
            },
            {
              tool: "apply_patch",
              arguments: { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-absent\n+x\n*** End Patch" },
              expect: "not_found",
            },
            {
              tool: "edit_files",
              arguments: { changes: [{ path: "b.txt", action: "create", content: "b\n" }] },
              expect: "result",
            },
            {
              tool: "notebook_edit",
              arguments: { path: "nb.ipynb", mode: "delete", index: 0 },
              expect: "result",
            },
            {
              tool: "notebook_edit",
              arguments: { path: "/etc/x.ipynb", mode: "delete", index: 0 },
              expect: "permission_denied",
            },
          ],
        });
        expect(report.results.filter((r) => r.status === "fail")).toEqual([]);
        expect(report.exitCode).toBe(0);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  );
});

describe("read_file images", () => {
  const PNG = Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]),
    Buffer.from("IHDR"),
    Buffer.from([0, 0, 0, 64, 0, 0, 0, 48, 8, 2, 0, 0, 0]),
  ]);
  const GIF = Buffer.concat([Buffer.from("GIF89a"), Buffer.from([10, 0, 20, 0, 0, 0, 0])]);
  // SOI, APP0 (16 bytes), SOF0 with height 30 and width 40.
  const JPEG = Buffer.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0,
    16,
    ...Buffer.from("JFIF\0"),
    1,
    1,
    0,
    0,
    1,
    0,
    1,
    0,
    0,
    0xff,
    0xc0,
    0,
    17,
    8,
    0,
    30,
    0,
    40,
    3,
    1,
    0x22,
    0,
    2,
    0x11,
    1,
    3,
    0x11,
    1,
  ]);
  const WEBP = Buffer.concat([
    Buffer.from("RIFF"),
    Buffer.from([30, 0, 0, 0]),
    Buffer.from("WEBPVP8X"),
    Buffer.from([10, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 49, 0, 0]),
  ]);

  it.each([
    ["a.png", PNG, "image/png", 64, 48],
    ["a.gif", GIF, "image/gif", 10, 20],
    ["photo.dat", JPEG, "image/jpeg", 40, 30],
    ["a.webp", WEBP, "image/webp", 100, 50],
  ] as const)("%s is returned as a %s image with its size", async (name, bytes, type, w, hgt) => {
    writeFileSync(join(root, name), bytes);
    const res = await h.invoke("read_file", { path: name }, { cwd: root });
    expect(res.error).toBeUndefined();
    expect(res.result).toMatchObject({
      image: { media_type: type, width: w, height: hgt },
      images: [{ media_type: type, data: bytes.toString("base64") }],
      binary: true,
      content: expect.stringContaining(`image ${name} (${w}x${hgt} pixels, ${bytes.length} bytes)`),
    });
  });

  it("declares the images to the kernel (model_image_field), kept out of the model's text", async () => {
    const schema = await h.client.getSchema({});
    const read = schema.tools.find((t) => t.name === "read_file")!;
    expect(read.modelImageField).toBe("images");
    expect(validateToolSchemas("filesystem", schema).tools.has("read_file")).toBe(true);
  });

  it("describes an image over max_image_bytes instead of sending it, and keeps other binaries unshown", async () => {
    const small = new ToolHarness({ executable: MAIN, name: "filesystem" });
    try {
      await small.configure({ roots: [root], max_image_bytes: 1024 });
      writeFileSync(join(root, "big.png"), Buffer.concat([PNG, Buffer.alloc(2000)]));
      const res = await small.invoke("read_file", { path: "big.png" }, { cwd: root });
      expect(res.result!["images"]).toBeUndefined();
      expect(String(res.result!["content"])).toMatch(/over the 1024-byte max_image_bytes limit; not shown/);
      writeFileSync(join(root, "blob.bin"), Buffer.from([0, 1, 2, 3, 0, 0, 9]));
      const bin = await small.invoke("read_file", { path: "blob.bin" }, { cwd: root });
      expect(bin.result).toMatchObject({ binary: true, content: "" });
      expect(bin.result!["images"]).toBeUndefined();
    } finally {
      await small.close();
    }
  });
});
