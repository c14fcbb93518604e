// Runs every fixture in test/fixtures: `<name>.hcl` is parsed (as bytes) and
// every attribute evaluated; `<name>.json` says what must come out:
//   diagnostics  [{code, summary, at: "line:col:byte-line:col:byte", detail?}] (default: none)
//   value        the evaluated body (attributes by name, blocks as "type labels" lists)
//   ast          a partial AST summary of the file body (ranges as text), matched with toMatchObject
//   context      {variables, env, functions} for evaluation

import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type Diagnostic, formatDiagnostic, parseFile, type Value } from "../src/index.ts";
import { bodyValue, diagSummary, fixtureContext, summarize, walk } from "./helpers.ts";

interface Expected {
  description: string;
  context?: { variables?: Record<string, Value>; env?: Record<string, string>; functions?: string[] };
  diagnostics?: Array<{ code: string; summary: string; at: string; detail?: string }>;
  value?: Record<string, Value>;
  ast?: unknown;
}

const dir = new URL("./fixtures/", import.meta.url);
const names = readdirSync(dir)
  .filter((f) => f.endsWith(".hcl"))
  .map((f) => f.slice(0, -4))
  .sort();

describe("fixture corpus", () => {
  it("has at least 60 fixtures, each with an expectation file", () => {
    expect(names.length).toBeGreaterThanOrEqual(60);
    const jsons = readdirSync(dir).filter((f) => f.endsWith(".json"));
    expect(jsons.map((f) => f.slice(0, -5)).sort()).toEqual(names);
  });

  for (const name of names) {
    const expected = JSON.parse(readFileSync(new URL(`${name}.json`, dir), "utf8")) as Expected;
    it(`${name}: ${expected.description}`, () => {
      const bytes = readFileSync(new URL(`${name}.hcl`, dir));
      const filename = `${name}.hcl`;
      const { file, diagnostics: parseDiags } = parseFile(new Uint8Array(bytes), filename);

      const diagnostics: Diagnostic[] = [...parseDiags];
      const value = bodyValue(file.body, fixtureContext(expected.context ?? {}), diagnostics);

      const want = expected.diagnostics ?? [];
      expect(diagnostics.map(diagSummary)).toEqual(
        want.map(({ code, summary, at }) => ({ code, summary, at })),
      );
      want.forEach((w, i) => {
        if (w.detail !== undefined) expect(diagnostics[i]!.detail).toContain(w.detail);
      });
      for (const d of diagnostics) {
        expect(d.severity).toBe("error");
        expect(
          formatDiagnostic(d).startsWith(`${filename}:${d.subject.start.line}:${d.subject.start.column}: `),
        ).toBe(true);
      }

      if (expected.value !== undefined) expect(value).toEqual(expected.value);
      if (expected.ast !== undefined) expect(summarize(file.body)).toMatchObject(expected.ast as object);

      // Every node has a well-formed range inside this file.
      walk(
        file,
        (n) => expect(n.range, `${n.kind} has a range`).toBeDefined(),
        (r) => {
          expect(r.filename).toBe(filename);
          expect(r.start.byte).toBeLessThanOrEqual(r.end.byte);
          expect(r.end.byte).toBeLessThanOrEqual(bytes.length);
          expect(r.start.line).toBeGreaterThanOrEqual(1);
          expect(r.start.column).toBeGreaterThanOrEqual(1);
        },
      );
    });
  }
});
