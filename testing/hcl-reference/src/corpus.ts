// The inputs of the differential test:
//   spec       the hcl spec suite that ships with Debian's hcl/v2 (.hcl, .hcldec and .t
//              files are all HCL), with the variables their .hcldec declares;
//   upstream   other inputs in that package: the fuzz seed corpora, hclsimple's test
//              file, and the input column of hclsyntax's table-driven tests
//              (expressions become `a = <expr>`, templates a heredoc);
//   fixtures   packages/hcl/test/fixtures, each with its own context;
//   identifiers  names at the edge of hcl/v2's Unicode 9.0 identifier tables, where the
//              JavaScript engine's newer tables would say otherwise;
//   generated  seeded random inputs from generate.ts.
// Upstream files are read where Debian installs them, never copied into this repository.

import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { evaluate, parseFile, type Value } from "@pluggableharness/hcl";
import { HCL_SOURCE, type ReferenceInput } from "./reference.ts";

const enc = new TextEncoder();

export interface CorpusInput extends ReferenceInput {
  source: "spec" | "upstream" | "fixtures" | "identifiers" | "generated";
}

/** The context for inputs that bring none of their own. */
export const STANDARD_VARIABLES: Record<string, Value> = {
  t: true,
  f: false,
  n: 3,
  m: -2.5,
  s: "str",
  ns: "12",
  bs: "true",
  e: "",
  list: [1, 2, 3],
  strs: ["a", "b", "c"],
  mixed: [1, "a", true, null],
  nested: [
    [1, 2],
    [3, 4],
  ],
  obj: { a: 1, b: "x", c: [1, 2], d: { e: "deep" } },
  objs: [
    { name: "x", v: 1, tags: ["p", "q"] },
    { name: "y", v: 2, tags: [] },
  ],
  nul: null,
  empty: [],
  none: {},
  foo: { bar: "baz", baz: [1, 2], "with-dash": true },
};
export const STANDARD_ENV: Record<string, string> = { HOME: "/home/u", EMPTY: "", TOKEN: "canary-secret" };

function walkFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walkFiles(p));
    else out.push(p);
  }
  return out;
}

/** The `variables { ... }` block of an .hcldec spec, evaluated. */
function hcldecVariables(path: string): Record<string, Value> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return {};
  }
  const out: Record<string, Value> = {};
  for (const item of parseFile(text, path).file.body.items) {
    if (item.kind !== "Block" || item.type !== "variables") continue;
    for (const attr of item.body.items) {
      if (attr.kind !== "Attribute") continue;
      const v = evaluate(attr.expr).value;
      if (v !== undefined) out[attr.name] = v;
    }
  }
  return out;
}

export function specInputs(): CorpusInput[] {
  const root = join(HCL_SOURCE, "specsuite/tests");
  return walkFiles(root)
    .filter((p) => /\.(hcl|hcldec|t)$/.test(p))
    .map((p) => ({
      source: "spec",
      id: `spec:${relative(root, p)}`,
      bytes: new Uint8Array(readFileSync(p)),
      variables: p.endsWith(".hcl") ? hcldecVariables(p.replace(/\.hcl$/, ".hcldec")) : {},
      env: {},
    }));
}

/** Decodes a Go string literal ("..." with escapes, or `raw`) to bytes. */
export function goString(lit: string): Uint8Array {
  if (lit.startsWith("`")) return enc.encode(lit.slice(1, -1).replaceAll("\r", ""));
  const bytes: number[] = [];
  const body = lit.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      const cp = body.codePointAt(i)!;
      if (cp > 0xffff) i++;
      bytes.push(...enc.encode(String.fromCodePoint(cp)));
      continue;
    }
    const k = body[++i]!;
    const simple: Record<string, number> = {
      a: 7,
      b: 8,
      f: 12,
      n: 10,
      r: 13,
      t: 9,
      v: 11,
      "\\": 92,
      '"': 34,
      "'": 39,
    };
    if (k in simple) bytes.push(simple[k]!);
    else if (k === "x") {
      bytes.push(Number.parseInt(body.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (k === "u" || k === "U") {
      const n = k === "u" ? 4 : 8;
      bytes.push(...enc.encode(String.fromCodePoint(Number.parseInt(body.slice(i + 1, i + 1 + n), 16))));
      i += n;
    } else if (k >= "0" && k <= "7") {
      bytes.push(Number.parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else throw new Error(`unknown Go escape \\${k} in ${lit}`);
  }
  return new Uint8Array(bytes);
}

const GO_STRING = /^(?:"(?:[^"\\\n]|\\.)*"|`[^`]*`)/;

/** The first string literal of each `{` case of a Go table test (the input column). */
function tableInputs(path: string): Uint8Array[] {
  const text = readFileSync(path, "utf8");
  const out: Uint8Array[] = [];
  for (const m of text.matchAll(/\n\t\t\{\n\t\t\t/g)) {
    const lit = GO_STRING.exec(text.slice(m.index + m[0].length));
    // Only a literal that is the whole first field (not `"a" + "b"`).
    if (lit !== null && /^,\s*(\/\/[^\n]*)?\n/.test(text.slice(m.index + m[0].length + lit[0].length))) {
      out.push(goString(lit[0]));
    }
  }
  return out;
}

function concat(...parts: Array<Uint8Array | string>): Uint8Array {
  const bufs = parts.map((p) => (typeof p === "string" ? enc.encode(p) : p));
  const out = new Uint8Array(bufs.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bufs) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

export function upstreamInputs(): CorpusInput[] {
  const inputs: CorpusInput[] = [];
  const add = (id: string, bytes: Uint8Array) =>
    inputs.push({ source: "upstream", id, bytes, variables: STANDARD_VARIABLES, env: STANDARD_ENV });
  for (const dir of ["hclsyntax", "hclwrite"]) {
    for (const kind of ["FuzzParseConfig", "FuzzParseExpression"]) {
      const corpus = join(HCL_SOURCE, dir, "fuzz/testdata/fuzz", kind);
      let files: string[];
      try {
        files = readdirSync(corpus).sort();
      } catch {
        continue;
      }
      for (const f of files) {
        const lines = readFileSync(join(corpus, f), "utf8").split("\n");
        const lit = /^\[\]byte\((.*)\)$/.exec(lines[1] ?? "");
        if (lit === null) continue;
        const bytes = goString(lit[1]!);
        add(`upstream:${dir}/${kind}/${f}`, kind === "FuzzParseConfig" ? bytes : concat("a = ", bytes, "\n"));
      }
    }
  }
  add(
    "upstream:hclsimple/testdata/test.hcl",
    new Uint8Array(readFileSync(join(HCL_SOURCE, "hclsimple/testdata/test.hcl"))),
  );
  const tables: Array<[string, (b: Uint8Array) => Uint8Array]> = [
    ["hclsyntax/parser_test.go", (b) => b],
    ["hclsyntax/expression_test.go", (b) => concat("a = ", b, "\n")],
    [
      "hclsyntax/expression_template_test.go",
      (b) => concat("a = <<END_OF_TEMPLATE\n", b, "\nEND_OF_TEMPLATE\n"),
    ],
  ];
  for (const [file, wrap] of tables) {
    for (const [i, b] of tableInputs(join(HCL_SOURCE, file)).entries()) add(`upstream:${file}#${i}`, wrap(b));
  }
  return inputs;
}

interface FixtureExpectation {
  context?: { variables?: Record<string, Value>; env?: Record<string, string>; functions?: string[] };
}

export function fixtureInputs(): CorpusInput[] {
  const dir = new URL("../../../packages/hcl/test/fixtures/", import.meta.url);
  return readdirSync(dir)
    .filter((f) => f.endsWith(".hcl"))
    .sort()
    .map((f) => {
      const name = f.slice(0, -4);
      const { context = {} } = JSON.parse(
        readFileSync(new URL(`${name}.json`, dir), "utf8"),
      ) as FixtureExpectation;
      return {
        source: "fixtures",
        id: `fixtures:${name}`,
        bytes: new Uint8Array(readFileSync(new URL(f, dir))),
        variables: context.variables ?? {},
        env: context.env ?? {},
        ...(context.functions === undefined ? {} : { functions: context.functions }),
      };
    });
}

/**
 * Names whose characters Unicode 9.0 (hcl/v2's tables) and the engine's current Unicode
 * disagree on, in each place a name is read (attribute, block type, traversal, object key,
 * for variable, function name, heredoc marker), next to names both accept.
 */
export function identifierInputs(): CorpusInput[] {
  // ZWNJ and ZWJ joined ID_Continue after 9.0; U+0560 and U+0588 (Armenian), U+08BE (Arabic),
  // U+1C90 (Georgian Mtavruli), U+31BB (Bopomofo), U+4DB6 and U+9FEB (CJK) were added
  // later; U+1E900 (Adlam) and U+0300 (a combining mark, continue only) are 9.0's own.
  const late = ["\u200c", "\u200d", "\u0560", "\u0588", "\u08be", "\u1c90", "\u31bb", "\u4db6", "\u9feb"];
  const known = ["\u00e9", "\u00b7", "\u0300", "\u{1e900}", "\u65e5\u672c", "-", "_", "0"];
  const texts: string[] = [];
  for (const c of [...late, ...known]) {
    texts.push(
      `a${c}b = 13\n`,
      `${c}x = 1\n`,
      `blk${c} {\n}\n`,
      `v = t${c}x\n`,
      `o = { k${c}y = 1 }\n`,
      `l = [for x${c} in [1] : 2]\n`,
      `f = up${c}per("x")\n`,
      `h = <<E${c}F\nbody\nE${c}F\n`,
    );
  }
  return texts.map((text, i) => ({
    source: "identifiers",
    id: `identifiers:${i}`,
    bytes: enc.encode(text),
    variables: STANDARD_VARIABLES,
    env: STANDARD_ENV,
  }));
}
