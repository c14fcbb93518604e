// The turn and the gate sit below the session: they may take narrow types from anywhere,
// but nothing they load at runtime, directly or through the loop modules they import,
// may be the Session class module, a frontend, the plugin registry, the go-plugin
// package or the plugin runtime. An `import type` is erased; a `{ type X }` list is not
// (verbatimModuleSyntax keeps the import), so only the former counts as type-only.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const src = resolve(import.meta.dirname, "../../src");
const loop = join(src, "loop");

/** Every module of a folder under loop/, as a path relative to loop/. */
function modulesOf(folder: string): string[] {
  return readdirSync(join(loop, folder))
    .filter((f) => f.endsWith(".ts"))
    .map((f) => `${folder}/${f}`);
}

/** The steps of one turn (prepare → model → gate → append → guards) and the gate. */
const TURN_STEPS = modulesOf("turn");
const GATE = modulesOf("gate");
const SESSION_DIR = join(loop, "session");

/** What a turn step or the gate must not load at runtime, by import specifier or resolved path. */
const FORBIDDEN: readonly { name: string; test: (spec: string, file: string | undefined) => boolean }[] = [
  { name: "loop/session/", test: (_s, f) => f?.startsWith(SESSION_DIR + "/") ?? false },
  { name: "frontends/", test: (_s, f) => f?.startsWith(join(src, "frontends") + "/") ?? false },
  { name: "plugins/", test: (_s, f) => f?.startsWith(join(src, "plugins") + "/") ?? false },
  { name: "@pluggableharness/goplugin", test: (s) => s.startsWith("@pluggableharness/goplugin") },
  { name: "@pluggableharness/runtime", test: (s) => s.startsWith("@pluggableharness/runtime") },
];

interface Import {
  readonly spec: string;
  /** The file a relative specifier names, undefined for a package. */
  readonly file: string | undefined;
  readonly typeOnly: boolean;
}

const parsed = new Map<string, Import[]>();

function importsOf(file: string): Import[] {
  const known = parsed.get(file);
  if (known) return known;
  const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean) =>
    out.push({ spec, typeOnly, file: spec.startsWith(".") ? resolve(dirname(file), spec) : undefined });
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
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  parsed.set(file, out);
  return out;
}

/**
 * Every forbidden module `entry` loads at runtime, with the chain of kernel modules that
 * leads there; the walk follows runtime imports of the kernel's own sources only.
 */
function violations(entry: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const walk = (file: string, chain: readonly string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const imp of importsOf(file)) {
      if (imp.typeOnly) continue;
      const bad = FORBIDDEN.find((f) => f.test(imp.spec, imp.file));
      const path = [...chain, imp.file ? relative(src, imp.file) : imp.spec];
      if (bad) found.push(path.join(" → "));
      else if (imp.file?.startsWith(src + "/")) walk(imp.file, path);
    }
  };
  walk(join(loop, entry), [`loop/${entry}`]);
  return found;
}

describe("layering of the turn and the gate", () => {
  it("the turn steps and the gate exist where the test looks for them", () => {
    expect(GATE).toContain("gate/gate.ts");
    expect(TURN_STEPS).toEqual(
      expect.arrayContaining(["turn/turn.ts", "turn/model-call.ts", "turn/tool-exec.ts"]),
    );
    for (const f of [...TURN_STEPS, ...GATE])
      expect(readFileSync(join(loop, f), "utf8").length).toBeGreaterThan(0);
  });

  it("nothing under loop/turn/ or loop/gate/ loads loop/session/, a frontend, plugins/, goplugin or runtime", () => {
    const bad = [...TURN_STEPS, ...GATE].flatMap(violations);
    expect(bad).toEqual([]);
  });

  it("the check sees a runtime import and ignores an import type", () => {
    // session.ts itself loads the gate's callers and frontends at runtime: the walk must
    // report it, or the assertion above could pass by reading nothing.
    expect(violations("session/session.ts").some((v) => v.includes("frontends/"))).toBe(true);
    // callbacks/rewind.ts takes the Session class as a type only (callbacks sit above the loop).
    const rewind = importsOf(join(src, "callbacks/rewind.ts")).find(
      (i) => i.file === join(SESSION_DIR, "session.ts"),
    );
    expect(rewind?.typeOnly).toBe(true);
  });
});

/** The public instance fields of `Session` anyone may assign (not readonly, not #private, not private). */
function mutableSessionFields(): string[] {
  return mutableSessionFieldsOf(readFileSync(join(SESSION_DIR, "session.ts"), "utf8"));
}

function mutableSessionFieldsOf(source: string): string[] {
  const sf = ts.createSourceFile("session.ts", source, ts.ScriptTarget.Latest, true);
  const cls = sf.statements.find(
    (s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === "Session",
  );
  if (!cls) throw new Error("no class Session in loop/session/session.ts");
  const kinds = (m: ts.ClassElement) => (ts.canHaveModifiers(m) ? (ts.getModifiers(m) ?? []) : []);
  const hidden = (m: ts.ClassElement) =>
    kinds(m).some(
      (k) =>
        k.kind === ts.SyntaxKind.ReadonlyKeyword ||
        k.kind === ts.SyntaxKind.PrivateKeyword ||
        k.kind === ts.SyntaxKind.ProtectedKeyword ||
        k.kind === ts.SyntaxKind.StaticKeyword,
    );
  return cls.members.flatMap((m) => {
    if (!m.name || ts.isPrivateIdentifier(m.name) || hidden(m)) return [];
    if (ts.isPropertyDeclaration(m) || ts.isSetAccessorDeclaration(m)) return [m.name.getText(sf)];
    return [];
  });
}

describe("Session is composition", () => {
  // Each mutable field moved to the module that owns it (docs/decisions/module-structure.md).
  it("has no public field anyone may assign", () => {
    expect(mutableSessionFields()).toEqual([]);
  });

  it("the count sees an assignable field and skips readonly, #private and getter-only ones", () => {
    const probe = mutableSessionFieldsOf(
      "class Session { readonly id = 1; #s = 2; get history() { return []; } planMode = false; set mode(v: boolean) {} }",
    );
    expect(probe).toEqual(["planMode", "mode"]);
  });
});

/** The chains by which `entry` reaches session.ts, counting type imports too (what biome's noImportCycles counts). */
function reachesSession(entry: string): string[] {
  const target = join(SESSION_DIR, "session.ts");
  const found: string[] = [];
  const seen = new Set<string>();
  const walk = (file: string, chain: readonly string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const imp of importsOf(file)) {
      if (!imp.file?.startsWith(src + "/")) continue;
      const path = [...chain, relative(src, imp.file)];
      if (imp.file === target) found.push(path.join(" → "));
      else walk(imp.file, path);
    }
  };
  walk(join(loop, entry), [`loop/${entry}`]);
  return found;
}

describe("the gate and context assembly take (deps, ctx, ports), not Session", () => {
  it("nothing under loop/turn/ or loop/gate/, and not ports.ts, names session.ts, even for a type", () => {
    const bad = [
      ...GATE,
      ...TURN_STEPS,
      "ports.ts",
      "session/settings-state.ts",
      "turn/retry-wait.ts",
      "session/conversation.ts",
    ].flatMap(reachesSession);
    expect(bad).toEqual([]);
  });

  it("the check sees a type-only path to session.ts", () => {
    expect(reachesSession("../callbacks/rewind.ts")).toContain(
      "loop/../callbacks/rewind.ts → loop/session/session.ts",
    );
  });
});

/** The session modules that name the `Session` class (a binding imported from session.ts), type imports included. */
function namesSessionClass(source: string, file: string): boolean {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true);
  let found = false;
  const visit = (n: ts.Node): void => {
    if (
      ts.isImportDeclaration(n) &&
      ts.isStringLiteral(n.moduleSpecifier) &&
      resolve(dirname(file), n.moduleSpecifier.text) === join(SESSION_DIR, "session.ts")
    ) {
      const named = n.importClause?.namedBindings;
      if (
        named &&
        ts.isNamedImports(named) &&
        named.elements.some((e) => (e.propertyName ?? e.name).text === "Session")
      )
        found = true;
    } else if (
      ts.isImportTypeNode(n) &&
      ts.isLiteralTypeNode(n.argument) &&
      ts.isStringLiteral(n.argument.literal) &&
      n.argument.literal.text.endsWith("/session.ts") &&
      n.qualifier?.getText(sf) === "Session"
    ) {
      found = true;
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

describe("the session's services take narrow deps, not Session", () => {
  // session.ts builds them and hands each only what it uses, so no type cycle closes
  // through session.ts (biome's noImportCycles counts type imports, with no exception).
  it("no module under loop/session/ but session.ts names the Session class, even as a type", () => {
    const naming = modulesOf("session")
      .filter((f) => f !== "session/session.ts")
      .filter((f) => namesSessionClass(readFileSync(join(loop, f), "utf8"), join(loop, f)));
    expect(naming).toEqual([]);
  });

  it('the check sees a type import of Session and an import("…/session.ts").Session type', () => {
    const probe = join(SESSION_DIR, "probe.ts");
    expect(namesSessionClass('import type { Session } from "./session.ts";', probe)).toBe(true);
    expect(namesSessionClass('import { type Session as S } from "./session.ts";', probe)).toBe(true);
    expect(namesSessionClass('let s: import("./session.ts").Session;', probe)).toBe(true);
    expect(namesSessionClass('import type { SessionInput } from "./session.ts";', probe)).toBe(false);
  });
});

describe("the conversation's writers", () => {
  /** Files under src/ whose text matches `pattern`, relative to src. */
  function filesMatching(pattern: RegExp): string[] {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith(".ts") && pattern.test(readFileSync(p, "utf8")))
          files.push(relative(src, p));
      }
    };
    walk(src);
    return files.sort();
  }

  it("exactly two modules write it: the session log and the turn's conversation step", () => {
    // append and replace together: a user message as the log records it, and the turn's
    // answers and a compaction's rewrite (conversation.ts says why these two).
    expect(filesMatching(/\.conversation\.(append|replace)\(/)).toEqual([
      "loop/session/session-log.ts",
      "loop/turn/append.ts",
    ]);
    // What a session starts from (a resume, a fork) goes to the constructor, in one place.
    expect(filesMatching(/new Conversation\(/)).toEqual(["loop/session/session.ts"]);
  });

  it("the search sees a write through any receiver named conversation", () => {
    expect(/\.conversation\.(append|replace)\(/.test("c.conversation.replace(history);")).toBe(true);
    expect(/\.conversation\.(append|replace)\(/.test("this.#s.conversation.append(m);")).toBe(true);
    expect(/\.conversation\.(append|replace)\(/.test("ports.conversation.messages.length")).toBe(false);
  });
});

/** The lines of the body of the function `name` declared in `file` (braces included). */
function bodyLines(file: string, name: string): number {
  return bodyLinesOf(readFileSync(file, "utf8"), name);
}

function bodyLinesOf(source: string, name: string): number {
  const sf = ts.createSourceFile("probe.ts", source, ts.ScriptTarget.Latest, true);
  const fn = sf.statements.find(
    (s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === name,
  );
  if (!fn?.body) throw new Error(`no function ${name}`);
  const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line;
  return line(fn.body.getEnd()) - line(fn.body.getStart(sf)) + 1;
}

describe("runTurn is a short pipeline", () => {
  // prepare → model → gate → append → guards, each step a module of its own under loop/turn/.
  it("runTurn's body is at most 150 lines", () => {
    expect(bodyLines(join(loop, "turn/turn.ts"), "runTurn")).toBeLessThanOrEqual(150);
  });

  it("the count reads the body of the named function", () => {
    expect(
      bodyLinesOf("function a() {\n  1;\n}\nasync function runTurn() {\n  2;\n  3;\n}\n", "runTurn"),
    ).toBe(4);
  });
});
