// The parser and evaluator must answer every input with diagnostics, never an
// exception. Three generators: arbitrary text and bytes, random edits of the
// valid fixtures, and soups of HCL tokens. Runs are bounded to keep this fast.

import { readdirSync, readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Body, envFunction, evaluate, parseFile } from "../src/index.ts";
import { walk } from "./helpers.ts";

const ctx = { variables: { x: 1, xs: [1, 2], obj: { a: "b" } }, functions: { env: envFunction({ A: "a" }) } };

function check(input: string | Uint8Array): void {
  const size = typeof input === "string" ? new TextEncoder().encode(input).length : input.length;
  const { file, diagnostics } = parseFile(input, "fuzz.hcl");
  expect(Array.isArray(diagnostics)).toBe(true);
  for (const d of diagnostics) {
    expect(d.severity).toBe("error");
    expect(d.summary.length).toBeGreaterThan(0);
    expect(d.subject.start.line).toBeGreaterThanOrEqual(1);
    expect(d.subject.start.column).toBeGreaterThanOrEqual(1);
    expect(d.subject.start.byte).toBeLessThanOrEqual(d.subject.end.byte);
    expect(d.subject.end.byte).toBeLessThanOrEqual(size);
  }
  walk(
    file,
    () => {},
    (r) => {
      expect(r.start.byte).toBeLessThanOrEqual(r.end.byte);
      expect(r.end.byte).toBeLessThanOrEqual(size);
    },
  );
  evaluateAll(file.body);
}

function evaluateAll(body: Body): void {
  for (const item of body.items) {
    if (item.kind === "Attribute") {
      const r = evaluate(item.expr, ctx);
      expect(r.value !== undefined || r.diagnostics.length > 0).toBe(true);
    } else {
      evaluateAll(item.body);
    }
  }
}

const fixtureDir = new URL("./fixtures/", import.meta.url);
const valid = readdirSync(fixtureDir)
  .filter((f) => f.endsWith(".hcl") && !f.startsWith("err-"))
  .map((f) => readFileSync(new URL(f, fixtureDir), "utf8"));

const significant = [
  ..."{}[]()\"'=:,.?!<>+-*/%&|~$#\\\n\r\t ",
  "${",
  "%{",
  "<<EOT\n",
  "<<-EOT\n",
  "EOT\n",
  "/*",
  "*/",
  "//",
];

type Edit = { at: number; kind: "insert" | "delete" | "duplicate"; text: string; length: number };
const edit: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("insert", "delete", "duplicate"),
  text: fc.oneof(fc.constantFrom(...significant), fc.string({ maxLength: 3 })),
  length: fc.integer({ min: 1, max: 12 }),
});

function applyEdits(text: string, edits: Edit[]): string {
  let out = text;
  for (const e of edits) {
    const at = out.length === 0 ? 0 : e.at % (out.length + 1);
    if (e.kind === "insert") out = out.slice(0, at) + e.text + out.slice(at);
    else if (e.kind === "delete") out = out.slice(0, at) + out.slice(at + e.length);
    else out = out.slice(0, at) + out.slice(at, at + e.length) + out.slice(at);
  }
  return out;
}

const vocabulary = [
  ...significant,
  "a",
  "b",
  "block",
  "for",
  "in",
  "if",
  "else",
  "endif",
  "endfor",
  "true",
  "null",
  "env",
  "1",
  "2.5",
  "1e3",
  "...",
  "=>",
  "==",
  "&&",
  "||",
  "::",
  '"s"',
  "x",
  "xs",
  "obj",
];

describe("fuzz: the parser returns diagnostics and never throws", () => {
  it("on arbitrary strings, including lone surrogates", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), (s) => check(s)),
      { numRuns: 400 },
    );
  });

  it("on arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 60 }), (b) => check(b)),
      { numRuns: 300 },
    );
  });

  it("on random edits of the valid fixtures", () => {
    expect(valid.length).toBeGreaterThan(20);
    fc.assert(
      fc.property(fc.constantFrom(...valid), fc.array(edit, { minLength: 1, maxLength: 4 }), (text, edits) =>
        check(applyEdits(text, edits)),
      ),
      { numRuns: 250 },
    );
  });

  it("on soups of HCL tokens", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(...vocabulary), fc.constantFrom("", " ", "\n")), { maxLength: 40 }),
        (parts) => check(parts.map(([t, sep]) => t + sep).join("")),
      ),
      { numRuns: 500 },
    );
  });
});
