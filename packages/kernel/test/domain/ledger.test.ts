// Holds docs/conformance.md true: every proof it names must exist. A row naming tests
// fails when a file or an exact test name is missing or a proof cell is malformed; a row
// naming an issue must name one of the project's issues that own the remaining rules; the
// summary table at the top must agree with the rows.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../../..");
const OWNING_ISSUES = new Set([3, 5, 6, 7, 8, 9, 10]);
const ledger = readFileSync(join(root, "docs/conformance.md"), "utf8");

interface Row {
  id: string;
  rule: string;
  source: string;
  proof: string;
}

function ledgerRows(): Row[] {
  const rows: Row[] = [];
  for (const line of ledger.split("\n")) {
    const m = /^\| ([A-Z]+\d+) \| (.+?) \| (.+?) \| (.+) \|$/.exec(line);
    if (m) rows.push({ id: m[1]!, rule: m[2]!, source: m[3]!, proof: m[4]! });
  }
  return rows;
}

interface TestRef {
  file: string;
  name: string;
}

// A test file, or a shared checks module under a test directory that test files run.
const REF = /^`([^`]+(?:\.test|\/test\/[^`/]+)\.ts)` › (.+)$/;

/**
 * A test proof cell: one or more `` `<file>` › <name> `` joined by "; ". Undefined when the
 * cell names no test; an Error when it starts like one but does not parse.
 */
function testRefs(proof: string): TestRef[] | Error | undefined {
  if (!proof.startsWith("`")) return undefined;
  const refs: TestRef[] = [];
  for (const part of proof.split(/; (?=`[^`]+\.ts` › )/)) {
    const m = REF.exec(part);
    if (!m || m[2]!.trim() !== m[2]) return new Error(`malformed proof: ${part}`);
    refs.push({ file: m[1]!, name: m[2]! });
  }
  const keys = refs.map((r) => `${r.file} › ${r.name}`);
  if (new Set(keys).size !== keys.length) return new Error("the same test is named twice");
  return refs;
}

/** The names of every it()/test()/it.each(...)() in a file (string-literal names only, `%s` kept). */
function testNames(file: string): Set<string> {
  const src = readFileSync(file, "utf8");
  const names = new Set<string>();
  for (const m of src.matchAll(/\b(?:it|test)(?:\.\w+(?:\([^()]*\))?)?\(\s*"((?:[^"\\]|\\.)*)"/g))
    names.add(m[1]!.replace(/\\(.)/g, "$1"));
  return names;
}

describe("the conformance ledger", () => {
  const rows = ledgerRows();

  it("lists every rule with a unique id, a source and a proof", () => {
    expect(rows.length).toBeGreaterThan(200);
    const ids = rows.map((r) => r.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const r of rows) {
      expect(r.rule.length, r.id).toBeGreaterThan(10);
      expect(r.source, r.id).toMatch(
        /^(seed:(tool|model)-data-types|[a-z-]+\/[a-z-]+\.md|[a-z-]+\.md)#[a-z0-9_-]+$/,
      );
    }
  });

  it("every test named in the ledger exists in the named file", () => {
    const missing: string[] = [];
    const cache = new Map<string, Set<string>>();
    for (const r of rows) {
      const refs = testRefs(r.proof);
      if (refs === undefined) continue;
      if (refs instanceof Error) {
        missing.push(`${r.id}: ${refs.message}`);
        continue;
      }
      for (const ref of refs) {
        const file = join(root, ref.file);
        if (!existsSync(file)) {
          missing.push(`${r.id}: no file ${ref.file}`);
          continue;
        }
        if (!cache.has(file)) cache.set(file, testNames(file));
        if (!cache.get(file)!.has(ref.name)) missing.push(`${r.id}: no test "${ref.name}" in ${ref.file}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("every other rule is owned by one of the later issues", () => {
    const bad = rows
      .filter((r) => testRefs(r.proof) === undefined)
      .filter((r) => {
        const m = /^issue (\d+) \([^)]+\): .{10,}$/.exec(r.proof);
        return !m || !OWNING_ISSUES.has(Number(m[1]));
      })
      .map((r) => `${r.id}: ${r.proof}`);
    expect(bad).toEqual([]);
  });

  it("the summary table agrees with the rows", () => {
    const expected = new Map<string, number>([["Rules", rows.length]]);
    expected.set("Proven by a test", rows.filter((r) => testRefs(r.proof) !== undefined).length);
    for (const r of rows) {
      const m = /^issue (\d+) \(([^)]+)\)/.exec(r.proof);
      if (!m) continue;
      const key = `Owned by issue ${m[1]} (${m[2]})`;
      expected.set(key, (expected.get(key) ?? 0) + 1);
    }
    const stated = new Map<string, number>();
    for (const line of ledger.split("\n")) {
      const m = /^\| (Rules|Proven by a test|Owned by issue \d+ \([^)]+\)) \| (\d+) \|$/.exec(line);
      if (m) stated.set(m[1]!, Number(m[2]));
    }
    expect(Object.fromEntries(stated)).toEqual(Object.fromEntries(expected));
  });
});
