// Holds docs/conformance.md true: every proof it names must exist. A row naming a test
// fails when the file or the exact test name is missing; a row naming an issue must name
// one of the project's issues that own the remaining rules.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../../..");
const OWNING_ISSUES = new Set([3, 5, 6, 7, 8, 9, 10]);

interface Row {
  id: string;
  rule: string;
  source: string;
  proof: string;
}

function ledgerRows(): Row[] {
  const text = readFileSync(join(root, "docs/conformance.md"), "utf8");
  const rows: Row[] = [];
  for (const line of text.split("\n")) {
    const m = /^\| ([A-Z]+\d+) \| (.+?) \| (.+?) \| (.+) \|$/.exec(line);
    if (m) rows.push({ id: m[1]!, rule: m[2]!, source: m[3]!, proof: m[4]! });
  }
  return rows;
}

/** The names of every it()/test() in a file (string-literal names only). */
function testNames(file: string): Set<string> {
  const src = readFileSync(file, "utf8");
  const names = new Set<string>();
  for (const m of src.matchAll(/\b(?:it|test)(?:\.\w+)?\(\s*"((?:[^"\\]|\\.)*)"/g))
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
      const t = /^`([^`]+\.test\.ts)` › (.+)$/.exec(r.proof);
      if (!t) continue;
      const file = join(root, t[1]!);
      if (!existsSync(file)) {
        missing.push(`${r.id}: no file ${t[1]}`);
        continue;
      }
      if (!cache.has(file)) cache.set(file, testNames(file));
      if (!cache.get(file)!.has(t[2]!)) missing.push(`${r.id}: no test "${t[2]}" in ${t[1]}`);
    }
    expect(missing).toEqual([]);
  });

  it("every other rule is owned by one of the later issues", () => {
    const bad = rows
      .filter((r) => !r.proof.startsWith("`"))
      .filter((r) => {
        const m = /^issue (\d+) \([^)]+\): .{10,}$/.exec(r.proof);
        return !m || !OWNING_ISSUES.has(Number(m[1]));
      })
      .map((r) => `${r.id}: ${r.proof}`);
    expect(bad).toEqual([]);
  });
});
