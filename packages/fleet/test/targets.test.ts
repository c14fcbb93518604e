// What `agent batch submit` reads: targets, target files, JSONL tasks and the prompt template.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  fillTemplate,
  parseTarget,
  readTargetsFile,
  tasksFromJsonl,
  tasksFromTargets,
} from "../src/targets.ts";

const dir = mkdtempSync(join(tmpdir(), "fleet-targets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("targets", () => {
  it("reads local paths (relative to where submit runs) and git URLs with a ref", () => {
    expect(parseTarget("svc", "/work")).toEqual({ kind: "path", location: "/work/svc" });
    expect(parseTarget("/abs/repo#v1.2", "/work")).toEqual({
      kind: "path",
      location: "/abs/repo",
      ref: "v1.2",
    });
    expect(parseTarget("https://git.example.com/a/b.git#main", "/w")).toEqual({
      kind: "git",
      location: "https://git.example.com/a/b.git",
      ref: "main",
    });
    expect(parseTarget("git@github.com:a/b.git", "/w")).toEqual({
      kind: "git",
      location: "git@github.com:a/b.git",
    });
    expect(() => parseTarget("repo#bad ref", "/w")).toThrow(/is not a git ref/);
  });

  it("fills the template, and refuses a variable that is not defined", () => {
    expect(fillTemplate("Fix {{ issue }} in {{target}}", { issue: "#4", target: "a" }, "x")).toBe(
      "Fix #4 in a",
    );
    expect(() => fillTemplate("Fix {{isue}}", { issue: "#4" }, "tasks.jsonl:3")).toThrow(
      "tasks.jsonl:3: the prompt uses {{isue}}, which is not defined (defined: issue)",
    );
    expect(tasksFromTargets("Review {{target}}", ["a", "b"], "/w").map((t) => t.prompt)).toEqual([
      "Review a",
      "Review b",
    ]);
  });

  it("reads target files and JSONL tasks, naming the line of a bad one", () => {
    const list = join(dir, "targets.txt");
    writeFileSync(list, "# services\nsvc-a\n\nsvc-b#main\n");
    expect(readTargetsFile(list)).toEqual(["svc-a", "svc-b#main"]);
    const jsonl = join(dir, "tasks.jsonl");
    writeFileSync(
      jsonl,
      '{"target": "r1", "ref": "pr-7", "title": "Fix", "n": 7}\n\n{"target": "r2", "title": "Add", "n": 8}\n',
    );
    const tasks = tasksFromJsonl("PR {{n}}: {{title}}", jsonl, "/w");
    expect(tasks).toEqual([
      { target: { kind: "path", location: "/w/r1", ref: "pr-7" }, prompt: "PR 7: Fix" },
      { target: { kind: "path", location: "/w/r2" }, prompt: "PR 8: Add" },
    ]);
    writeFileSync(jsonl, '{"target": "r1"}\n{"title": "no target"}\n');
    expect(() => tasksFromJsonl("x", jsonl, "/w")).toThrow(
      `${jsonl}:2: "target" (a path or git URL) is required`,
    );
    writeFileSync(jsonl, "{not json\n");
    expect(() => tasksFromJsonl("x", jsonl, "/w")).toThrow(`${jsonl}:1: not JSON`);
  });
});
