// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
import { describe, expect, it } from "vitest";
import {
  type EvalContext,
  type Expression,
  envFunction,
  evaluate,
  FunctionError,
  formatDiagnostic,
  parseExpression,
  type Value,
} from "../src/index.ts";
import { rangeText } from "./helpers.ts";

function expr(text: string): Expression {
  const { expr, diagnostics } = parseExpression(text, "e.hcl");
  expect(diagnostics).toEqual([]);
  return expr!;
}

function value(text: string, ctx?: EvalContext): Value | undefined {
  const r = evaluate(expr(text), ctx);
  expect(r.diagnostics).toEqual([]);
  return r.value;
}

describe("evaluate", () => {
  it("distinguishes a null result from a failure", () => {
    expect(evaluate(expr("null"))).toEqual({ value: null, diagnostics: [] });
    const failed = evaluate(expr("nope"));
    expect(failed.value).toBeUndefined();
    expect(failed.diagnostics).toHaveLength(1);
  });

  it("reads variables from the context and shadows them with for variables", () => {
    const ctx = { variables: { x: 1, xs: [10, 20] } };
    expect(value("x", ctx)).toBe(1);
    expect(value("[for x in xs : x]", ctx)).toEqual([10, 20]);
    expect(value("[for i, x in xs : i + x]", ctx)).toEqual([10, 21]);
  });

  it("does not resolve names through the object prototype", () => {
    const r = evaluate(expr("toString"), { variables: {} });
    expect(r.diagnostics[0]!.code).toBe("unknown-variable");
    const call = evaluate(expr('constructor("x")'), { functions: {} });
    expect(call.diagnostics[0]!.code).toBe("unknown-function");
  });

  it("builds objects with any key, including __proto__", () => {
    const v = value('{ "__proto__" = 1, a = 2 }') as Record<string, Value>;
    expect(Object.keys(v)).toEqual(["__proto__", "a"]);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });

  it("normalises template results to NFC but passes variable values through", () => {
    const decomposed = "e\u0301";
    expect(value('"${x}!"', { variables: { x: decomposed } })).toBe("\u00e9!");
    expect(value("x", { variables: { x: decomposed } })).toBe(decomposed);
  });

  it("formats numbers in templates without exponents", () => {
    expect(value('"${a} ${b} ${c} ${d}"', { variables: { a: 1e21, b: 1.25e-7, c: -0, d: 123.456 } })).toBe(
      "1000000000000000000000 0.000000125 0 123.456",
    );
  });
});

describe("functions", () => {
  it("passes arguments and call information", () => {
    let seen: { args: readonly Value[]; name: string; ranges: string[] } | undefined;
    const ctx: EvalContext = {
      functions: {
        f: (args, call) => {
          seen = { args, name: call.name, ranges: call.argRanges.map(rangeText) };
          return "ok";
        },
      },
    };
    expect(value("f(1, [2, 3]...)", ctx)).toBe("ok");
    expect(seen).toEqual({
      args: [1, 2, 3],
      name: "f",
      ranges: ["1:3:2-1:4:3", "1:6:5-1:12:11", "1:6:5-1:12:11"],
    });
  });

  it("turns a FunctionError into a diagnostic at the start of the argument, or at the call's name", () => {
    const ctx: EvalContext = {
      functions: {
        bad: () => {
          throw new FunctionError({ code: "my-code", summary: "Bad", detail: "it failed", argIndex: 1 });
        },
        worse: () => {
          throw new FunctionError({ summary: "Worse", detail: "whole call" });
        },
      },
    };
    const r = evaluate(expr('bad(1, "two")'), ctx);
    expect(r.diagnostics.map((d) => [d.code, d.summary, rangeText(d.subject)])).toEqual([
      // As hcl/v2 does: a quoted argument starts at its text, inside the quotes.
      ["my-code", "Bad", "1:9:8-1:12:11"],
    ]);
    expect(formatDiagnostic(r.diagnostics[0]!)).toBe("e.hcl:1:9: Bad: it failed");
    const w = evaluate(expr("worse()"), ctx);
    // The name and the opening parenthesis.
    expect(rangeText(w.diagnostics[0]!.subject)).toBe("1:1:0-1:7:6");
  });

  it("turns any other exception into a diagnostic instead of throwing", () => {
    const ctx: EvalContext = {
      functions: {
        boom: () => {
          throw new TypeError("kaput");
        },
      },
    };
    const r = evaluate(expr("boom()"), ctx);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["function-error"]);
    expect(r.diagnostics[0]!.detail).toContain("kaput");
  });
});

describe("envFunction", () => {
  it("reads process.env by default", () => {
    process.env["HCL_TEST_VARIABLE"] = "from-process";
    try {
      expect(value('env("HCL_TEST_VARIABLE")', { functions: { env: envFunction() } })).toBe("from-process");
    } finally {
      delete process.env["HCL_TEST_VARIABLE"];
    }
  });

  it("never puts a variable's value into a diagnostic", () => {
    const secret = "sk-canary-7f3a9";
    const ctx: EvalContext = { functions: { env: envFunction({ TOKEN: secret }) } };
    const failures = [
      'env("TOKEN") + 1',
      '-env("TOKEN")',
      'env("TOKEN").x',
      'env("TOKEN")[0]',
      'env(env("TOKEN"))',
      '{ x = 1 }[env("TOKEN")]',
      '{for v in [env("TOKEN"), env("TOKEN")] : v => 1}',
      '"${env("TOKEN")}" ? 1 : 2',
      '[for x in env("TOKEN") : x]',
    ];
    for (const text of failures) {
      const r = evaluate(expr(text), ctx);
      expect(r.diagnostics.length, text).toBe(1);
      expect(JSON.stringify(r.diagnostics), text).not.toContain(secret);
    }
  });

  it("does not treat inherited object properties as variables", () => {
    const r = evaluate(expr('env("constructor")'), { functions: { env: envFunction({}) } });
    expect(r.diagnostics.map((d) => d.code)).toEqual(["env-unset"]);
  });
});
