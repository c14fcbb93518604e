// Counts the repository's import cycles twice: over runtime imports only, and with
// `import type` edges too. `npm run lint` enforces the rule (biome.json, noImportCycles
// counting type imports, no exception); this prints the numbers behind it:
//   node scripts/import-cycles.ts [--list]
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

export interface ImportEdge {
  readonly to: string;
  /** `import type` / `export type` (erased); a `{ type X }` list keeps the import, so it is not. */
  readonly typeOnly: boolean;
}

/** Every file's imports of other files of the set, resolved as the compiler resolves them. */
export function moduleGraph(
  files: readonly string[],
  options: ts.CompilerOptions,
): Map<string, ImportEdge[]> {
  const host = ts.createCompilerHost(options);
  const known = new Set(files.map((f) => resolve(f)));
  const graph = new Map<string, ImportEdge[]>();
  for (const file of known) {
    const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const edges: ImportEdge[] = [];
    const add = (spec: string, typeOnly: boolean) => {
      const r = ts.resolveModuleName(spec, file, options, host).resolvedModule;
      const to = r && resolve(r.resolvedFileName);
      if (to && known.has(to)) edges.push({ to, typeOnly });
    };
    const visit = (n: ts.Node): void => {
      if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
        add(n.moduleSpecifier.text, n.importClause?.isTypeOnly ?? false);
      } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
        add(n.moduleSpecifier.text, n.isTypeOnly);
      } else if (
        ts.isCallExpression(n) &&
        n.expression.kind === ts.SyntaxKind.ImportKeyword &&
        n.arguments[0] &&
        ts.isStringLiteral(n.arguments[0])
      ) {
        add(n.arguments[0].text, false);
      } else if (
        ts.isImportTypeNode(n) &&
        ts.isLiteralTypeNode(n.argument) &&
        ts.isStringLiteral(n.argument.literal)
      ) {
        add(n.argument.literal.text, true);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
    graph.set(file, edges);
  }
  return graph;
}

/** The cycles of the graph: its strongly connected components of two or more files (Tarjan). */
export function importCycles(
  graph: ReadonlyMap<string, readonly ImportEdge[]>,
  withTypes: boolean,
): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const e of graph.get(v) ?? []) {
      if (e.typeOnly && !withTypes) continue;
      if (!index.has(e.to)) {
        strong(e.to);
        low.set(v, Math.min(low.get(v)!, low.get(e.to)!));
      } else if (onStack.has(e.to)) low.set(v, Math.min(low.get(v)!, index.get(e.to)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) strong(v);
  return found;
}

if (import.meta.main) {
  const root = join(import.meta.dirname, "..");
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  )!;
  const graph = moduleGraph(
    config.fileNames.filter((f) => !f.includes("/node_modules/")),
    config.options,
  );
  for (const [label, withTypes] of [
    ["runtime imports", false],
    ["with import type", true],
  ] as const) {
    const found = importCycles(graph, withTypes);
    const files = found.reduce((n, c) => n + c.length, 0);
    console.log(`${label}: ${found.length} cycle(s) over ${files} file(s)`);
    if (process.argv.includes("--list")) {
      for (const c of found) console.log(`  - ${c.map((f) => relative(root, f)).join("\n    ")}`);
    }
  }
}
