// Holds docs/conformance.md true: every proof and every implementing symbol it names must
// exist. A row naming tests fails when a file or an exact test name is missing or a proof
// cell is malformed; a row's "Implemented by" cell fails when a named source file is gone or
// no longer declares the named symbol (read with the TypeScript parser, so a comment or a
// re-export naming it does not count); a row naming an issue must name one of the project's
// issues that own the remaining rules; the summary table at the top must agree with the rows.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../../../..");
const OWNING_ISSUES = new Set([3, 5, 6, 7, 8, 9, 10]);
const ledger = readFileSync(join(root, "docs/conformance.md"), "utf8");

interface Row {
  id: string;
  rule: string;
  source: string;
  implementedBy: string;
  proof: string;
}

function ledgerRows(): Row[] {
  const rows: Row[] = [];
  for (const line of ledger.split("\n")) {
    const m = /^\| ([A-Z]+\d+) \| (.+?) \| (.+?) \| (.+?) \| (.+) \|$/.exec(line);
    if (m) rows.push({ id: m[1]!, rule: m[2]!, source: m[3]!, implementedBy: m[4]!, proof: m[5]! });
  }
  return rows;
}

interface SymbolRef {
  file: string;
  symbol: string;
}

const SYMBOL_REF = /^`([\w./-]+\.ts)#([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?)`$/;

/** An "Implemented by" cell: one or more `` `<source file>#<Symbol or Class.member>` `` joined by ", ". */
function symbolRefs(cell: string): SymbolRef[] | Error {
  const refs: SymbolRef[] = [];
  for (const part of cell.split(", ")) {
    const m = SYMBOL_REF.exec(part);
    if (!m) return new Error(`malformed implementing symbol: ${part}`);
    if (m[1]!.includes("/test/") || m[1]!.endsWith(".test.ts"))
      return new Error(`a test is not an implementation: ${part}`);
    refs.push({ file: m[1]!, symbol: m[2]! });
  }
  const keys = refs.map((r) => `${r.file}#${r.symbol}`);
  if (new Set(keys).size !== keys.length) return new Error("the same symbol is named twice");
  return refs;
}

const isExported = (n: ts.Node): boolean =>
  ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

function memberName(name: ts.PropertyName | undefined): string | undefined {
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name)) return name.text;
  return undefined;
}

/**
 * The symbols a TypeScript file declares and exports: top-level functions, classes, enums,
 * interfaces, type aliases and variables (exported by modifier or by a local `export { }`),
 * plus `Class.member` for the members of an exported class and `name.key` for the keys of an
 * exported object literal. Re-exports from another module and names in comments are not
 * declarations of this file.
 */
function declaredSymbols(fileName: string, text: string): Set<string> {
  const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const local = new Map<string, ts.Node>();
  const exported = new Set<string>();
  const add = (name: string, node: ts.Node) => {
    local.set(name, node);
    if (isExported(node)) exported.add(name);
  };
  for (const st of sf.statements) {
    if (
      (ts.isFunctionDeclaration(st) ||
        ts.isClassDeclaration(st) ||
        ts.isEnumDeclaration(st) ||
        ts.isInterfaceDeclaration(st) ||
        ts.isTypeAliasDeclaration(st)) &&
      st.name
    )
      add(st.name.text, st);
    else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        if (!ts.isIdentifier(d.name)) continue;
        local.set(d.name.text, d);
        if (isExported(st)) exported.add(d.name.text);
      }
    }
  }
  for (const st of sf.statements) {
    if (!ts.isExportDeclaration(st) || st.moduleSpecifier || !st.exportClause) continue;
    if (!ts.isNamedExports(st.exportClause)) continue;
    for (const el of st.exportClause.elements) {
      const localName = (el.propertyName ?? el.name).text;
      if (local.has(localName)) {
        exported.add(el.name.text);
        local.set(el.name.text, local.get(localName)!);
      }
    }
  }
  const symbols = new Set(exported);
  for (const name of exported) {
    const node = local.get(name)!;
    if (ts.isClassDeclaration(node)) {
      for (const m of node.members) {
        const n = memberName(m.name);
        if (n) symbols.add(`${name}.${n}`);
      }
    } else if (ts.isVariableDeclaration(node) && node.initializer) {
      let init: ts.Expression = node.initializer;
      while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init) || ts.isParenthesizedExpression(init))
        init = init.expression;
      if (ts.isObjectLiteralExpression(init)) {
        for (const p of init.properties) {
          const n = memberName(p.name);
          if (n) symbols.add(`${name}.${n}`);
        }
      }
    }
  }
  return symbols;
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

  it("every rule names its implementing symbols, and each is declared in the named file", () => {
    const missing: string[] = [];
    const cache = new Map<string, Set<string>>();
    for (const r of rows) {
      const refs = symbolRefs(r.implementedBy);
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
        if (!cache.has(file)) cache.set(file, declaredSymbols(file, readFileSync(file, "utf8")));
        if (!cache.get(file)!.has(ref.symbol))
          missing.push(`${r.id}: ${ref.file} declares no exported ${ref.symbol}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("a symbol counts only when declared: comments, re-exports and unexported names do not", () => {
    const src = [
      "// validateThing is mentioned here only",
      "/* and here: class Gate { run() {} } */",
      'export { reexported } from "./elsewhere.ts";',
      "function hidden() {}",
      "const alsoHidden = 1;",
      "export function visible() {}",
      "export class Gate { run() {} #secret() {} static make() {} }",
      "class Inner { go() {} }",
      "export { Inner as Outer };",
      "export const adapter = { stream() {}, countTokens: () => 0 } satisfies object;",
      "export declare enum Kind { A = 0 }",
    ].join("\n");
    const got = declaredSymbols("sample.ts", src);
    expect([...got].sort()).toEqual(
      [
        "Gate",
        "Gate.#secret",
        "Gate.make",
        "Gate.run",
        "Kind",
        "Outer",
        "Outer.go",
        "adapter",
        "adapter.countTokens",
        "adapter.stream",
        "visible",
      ].sort(),
    );
    expect(symbolRefs("`a/b.ts#visible`, `a/b.ts#Gate.run`")).toEqual([
      { file: "a/b.ts", symbol: "visible" },
      { file: "a/b.ts", symbol: "Gate.run" },
    ]);
    expect(symbolRefs("`a/b.ts#visible`; `a/b.ts#Gate`")).toBeInstanceOf(Error);
    expect(symbolRefs("`a/test/b.test.ts#x`")).toBeInstanceOf(Error);
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
