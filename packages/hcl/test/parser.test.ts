// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
import { describe, expect, it } from "vitest";
import { evaluate, parseExpression, parseFile } from "../src/index.ts";
import { rangeText } from "./helpers.ts";

describe("parseFile", () => {
  it("accepts a string as well as bytes", () => {
    const fromString = parseFile('a = "é"\n', "s.hcl");
    const fromBytes = parseFile(new TextEncoder().encode('a = "é"\n'), "s.hcl");
    expect(fromString.diagnostics).toEqual([]);
    expect(fromString.file).toEqual(fromBytes.file);
  });

  it("rejects a string with a lone surrogate as invalid UTF-8", () => {
    const { diagnostics, file } = parseFile('a = "x\uD800"\n', "s.hcl");
    expect(diagnostics.map((d) => [d.code, rangeText(d.subject)])).toEqual([["invalid-utf8", "1:7:6-1:8:7"]]);
    expect(file.body.items).toEqual([]);
  });

  it("keeps parsing after an error inside a nested block, reporting only the first syntax error as hcl/v2 does", () => {
    const text = [
      "outer {",
      "  bad = = 1",
      "  good = 2",
      "  inner {",
      "    x = ",
      "  }",
      "}",
      "after = 3",
      "",
    ].join("\n");
    const { file, diagnostics } = parseFile(text, "r.hcl");
    // The second broken attribute (line 5) is dropped too, but after recovering from the
    // first error hcl/v2 reports no more errors of this kind: they are often consequences.
    expect(diagnostics.map((d) => `${d.code}@${d.subject.start.line}:${d.subject.start.column}`)).toEqual([
      "invalid-expression@2:9",
    ]);
    const outer = file.body.items[0]!;
    expect(outer.kind).toBe("Block");
    if (outer.kind !== "Block") return;
    expect(outer.body.items.map((i) => (i.kind === "Attribute" ? i.name : i.type))).toEqual([
      "good",
      "inner",
    ]);
    expect(file.body.items.map((i) => (i.kind === "Attribute" ? i.name : i.type))).toEqual([
      "outer",
      "after",
    ]);
  });

  it("refuses deeply nested blocks with a diagnostic instead of overflowing", () => {
    const depth = 500;
    const text = `${"b {\n".repeat(depth)}${"}\n".repeat(depth)}`;
    const { diagnostics } = parseFile(text, "deep.hcl");
    expect(diagnostics.map((d) => d.code)).toContain("too-deep");
  });

  it("parses a very long operator chain and evaluates it without throwing", () => {
    const text = `a = ${Array.from({ length: 20000 }, () => "1").join(" + ")}\n`;
    const { file, diagnostics } = parseFile(text, "long.hcl");
    expect(diagnostics).toEqual([]);
    const attr = file.body.items[0]!;
    if (attr.kind !== "Attribute") throw new Error("expected an attribute");
    const r = evaluate(attr.expr);
    // Either the sum or a "too complex" diagnostic; never an exception.
    if (r.value === undefined) expect(r.diagnostics[0]!.code).toBe("too-deep");
    else expect(r.value).toBe(20000);
  });

  it("returns the file body range and filename on every result", () => {
    const { file } = parseFile("a = 1\n", "dir/x.hcl");
    expect(file.filename).toBe("dir/x.hcl");
    expect(rangeText(file.range)).toBe("1:1:0-2:1:6");
  });
});

describe("parseExpression", () => {
  it("parses one expression with surrounding newlines", () => {
    const { expr, diagnostics } = parseExpression('\n  [1, "two"]\n\n', "e.hcl");
    expect(diagnostics).toEqual([]);
    expect(expr?.kind).toBe("Tuple");
    expect(evaluate(expr!).value).toEqual([1, "two"]);
  });

  it("rejects trailing tokens", () => {
    const { expr, diagnostics } = parseExpression("1 2", "e.hcl");
    expect(expr).toBeUndefined();
    expect(diagnostics.map((d) => [d.code, rangeText(d.subject)])).toEqual([
      ["extra-characters", "1:3:2-1:4:3"],
    ]);
  });

  it("reports an empty expression", () => {
    const { expr, diagnostics } = parseExpression("", "e.hcl");
    expect(expr).toBeUndefined();
    expect(diagnostics[0]!.code).toBe("invalid-expression");
  });

  it("keeps TemplateWrap, Parens and Template apart", () => {
    const kinds = ['"${x}"', "(x)", '"x"', '"${x} "', "<<EOT\n${x}\nEOT\n"].map(
      (t) => parseExpression(t, "e.hcl").expr?.kind,
    );
    expect(kinds).toEqual(["TemplateWrap", "Parens", "Template", "Template", "Template"]);
  });

  it("treats `for` first inside braces as a for-expression, on the same line or the next", () => {
    expect(parseExpression("{for k, v in x : k => v}", "e.hcl").expr?.kind).toBe("For");
    const multiline = parseExpression("{\n  for k, v in x :\n  k => v\n}", "e.hcl");
    expect(multiline.diagnostics).toEqual([]);
    expect(multiline.expr?.kind).toBe("For");
    expect(evaluate(multiline.expr!, { variables: { x: { a: 1 } } }).value).toEqual({ a: 1 });
    // So "for" cannot be the first key of an object, as in hcl/v2.
    const { expr, diagnostics } = parseExpression("{\n  for = 1\n}", "e.hcl");
    expect(expr).toBeUndefined();
    expect(diagnostics.map((d) => [d.code, rangeText(d.subject)])).toEqual([
      ["invalid-for-expression", "2:7:8-2:8:9"],
    ]);
  });

  it("parses namespaced function names", () => {
    const { expr } = parseExpression("provider::aws::arn(1)", "e.hcl");
    expect(expr?.kind === "FunctionCall" && expr.name).toBe("provider::aws::arn");
    expect(expr?.kind === "FunctionCall" && rangeText(expr.nameRange)).toBe("1:1:0-1:19:18");
  });
});
