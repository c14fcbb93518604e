// The cycle counter tells runtime cycles from type-only ones, and treats a `{ type X }`
// list as the runtime import it stays under verbatimModuleSyntax.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { importCycles, moduleGraph } from "../import-cycles.ts";

const dir = mkdtempSync(join(tmpdir(), "import-cycles-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files: Record<string, string> = {
  // a ↔ b through import type only
  "a.ts": 'import type { B } from "./b.ts";\nexport interface A { b?: B }\n',
  "b.ts": 'import type { A } from "./a.ts";\nexport interface B { a?: A }\n',
  // c ↔ d at runtime, one side through a `{ type X }` list
  "c.ts": 'import { d } from "./d.ts";\nexport const c = () => d;\nexport type C = 1;\n',
  "d.ts": 'import { type C } from "./c.ts";\nexport const d: C = 1;\n',
  // e → f, no cycle
  "e.ts": 'import { f } from "./f.ts";\nexport const e = f;\n',
  "f.ts": "export const f = 1;\n",
};
for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);

const options: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  allowImportingTsExtensions: true,
};
const graph = moduleGraph(
  Object.keys(files).map((f) => join(dir, f)),
  options,
);
const names = (cycles: string[][]) => cycles.map((c) => c.map((f) => f.slice(dir.length + 1)));

describe("import cycle counter", () => {
  it("counts runtime cycles only, a { type X } list included", () => {
    expect(names(importCycles(graph, false))).toEqual([["c.ts", "d.ts"]]);
  });

  it("with import type counted, finds the type-only cycle too", () => {
    expect(names(importCycles(graph, true)).sort()).toEqual([
      ["a.ts", "b.ts"],
      ["c.ts", "d.ts"],
    ]);
  });
});
