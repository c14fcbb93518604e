// The file checkpoints look only where a step's calls can have written (issue 32, point 5):
// a data-source step touches no file of the tree, a call that declares the files it changes
// (ToolSchema.written_path_fields) is checkpointed at those files alone, and a call that
// declares nothing (a shell command) still scans the whole tree before and after. The
// checkpoints stay exact: files that were there before are never recorded as the agent's.
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { join, relative } from "node:path";
import { SessionStatus } from "@pluggableharness/protocol/session";
import { CheckpointStore, checkpointsDir } from "@pluggableharness/state";
import { afterAll, expect, it, vi } from "vitest";
import { calls, Harness, reply, tool } from "./harness.ts";

const h = new Harness();
afterAll(() => h.dispose());

it("a read stats no file, a declared write stats only its file, a command scans the tree", async () => {
  const k = await h.kernel({
    hcl: `
policy "writes_ok" {
  match  = { provider = "tools" }
  action = "allow"
}`,
    scripts: {
      steps: {
        turns: [
          calls(tool("r1", "tools__read", { path: "a.txt" })),
          calls(tool("s1", "tools__shell", { path: "other.txt", content: "cmd" })),
          calls(tool("p1", "tools__put", { path: "src/new.txt", content: "new" })),
          calls(tool("p2", "tools__put", { path: "src/new.txt", content: "newer" })),
          reply("done"),
        ],
      },
    },
  });
  // A tree of files the agent never touches.
  fs.mkdirSync(join(k.projectDir, "src"), { recursive: true });
  for (let i = 0; i < 20; i++) fs.writeFileSync(join(k.projectDir, "src", `f${i}.txt`), `file ${i}`);
  fs.writeFileSync(join(k.projectDir, "a.txt"), "a");

  // Every stat and listing inside the project, by the step (model answer) it came after.
  const touched: { step: number; op: string; path: string }[] = [];
  const step = () => k.traces.filter((t) => t.name === "model.stream_end").length;
  const inProject = (p: unknown) => {
    const rel = relative(k.projectDir, String(p));
    return rel !== "" && !rel.startsWith("..") ? rel : rel === "" ? "." : undefined;
  };
  const spies = (["lstatSync", "statSync", "readdirSync"] as const).map((op) => {
    const original = fs[op] as (...a: unknown[]) => unknown;
    return vi.spyOn(fs, op).mockImplementation(((...a: unknown[]) => {
      const rel = inProject(a[0]);
      if (rel !== undefined) touched.push({ step: step(), op, path: rel });
      return original(...a);
    }) as never);
  });
  syncBuiltinESMExports();
  let status: SessionStatus;
  let id: string;
  try {
    const c = k.client();
    id = await c.create("[steps] go");
    status = await c.finished(id);
  } finally {
    for (const s of spies) s.mockRestore();
    syncBuiltinESMExports();
  }
  expect(status).toBe(SessionStatus.COMPLETED);
  const at = (n: number) => touched.filter((t) => t.step === n);

  // What a step did to the tree the agent never touched: files statted, directories listed.
  // (The gate's own check of a write's path, which resolves it against the kernel's
  // files, stats the project directory, agent.hcl, .agent and .git: not the tree.)
  const planted = (n: number) => at(n).filter((t) => t.path === "a.txt" || t.path.startsWith("src/f"));
  const listed = (n: number) => at(n).filter((t) => t.op === "readdirSync");

  // Step 1 (a read): nothing of the tree.
  expect(at(1)).toEqual([]);
  // Step 2 (a command): the whole tree, before and after (the first full walk also tells
  // the store the tree is under its file limit, which a scan of named files needs).
  expect(listed(2).filter((t) => t.path === "src")).toHaveLength(2);
  expect(planted(2).filter((t) => t.path === "src/f7.txt")).toHaveLength(2);
  // Steps 3 and 4 (declared writes): the written file, and no other file of the tree.
  for (const n of [3, 4]) {
    expect(planted(n), `step ${n}`).toEqual([]);
    expect(listed(n), `step ${n}`).toEqual([]);
    expect(at(n).filter((t) => t.path === "src/new.txt").length, `step ${n}`).toBeGreaterThanOrEqual(2);
  }

  // Exact: each step recorded what its call changed, nothing that was there before.
  const store = new CheckpointStore(checkpointsDir(join(k.stateDir, `${id}.sqlite`)), k.projectDir);
  expect(
    store.checkpoints().map((c) => c.changes.map((ch) => [ch.path, ch.before === null, ch.after === null])),
  ).toEqual([[["other.txt", true, false]], [["src/new.txt", true, false]], [["src/new.txt", false, false]]]);
  expect(store.content(store.checkpoints()[2]!.changes[0]!.before!).toString()).toBe("new");
});
