// Expression evaluation over plain JavaScript values. Variables and functions
// come only from the caller's context; anything else is a positioned
// diagnostic. Evaluation stops at the first error in an expression.
// Diagnostics never quote computed string values, which may be secrets.

import type {
  Binary,
  Expression,
  For,
  FunctionCall,
  GetAttr,
  Index,
  ObjectCons,
  Splat,
  TemplatePart,
  Unary,
} from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import { type CallInfo, FunctionError, type HclFunction } from "./functions.ts";
import type { Range } from "./source.ts";
import {
  hasKey,
  isObject,
  setKey,
  toBool,
  toNumber,
  toStringValue,
  typeName,
  type Value,
  type ValueObject,
  valuesEqual,
} from "./value.ts";

export interface EvalContext {
  /** Names visible to expressions (e.g. `{ var: { region: "eu" } }` makes `var.region` work). */
  variables?: Readonly<Record<string, Value>>;
  /** Callable functions by name, e.g. `{ env: envFunction() }`. */
  functions?: Readonly<Record<string, HclFunction>>;
}

export interface EvalResult {
  /** Absent when evaluation failed; `diagnostics` then holds the reason. */
  value?: Value;
  diagnostics: Diagnostic[];
}

/** Evaluates one expression. Never throws. */
export function evaluate(expr: Expression, ctx: EvalContext = {}): EvalResult {
  try {
    return { value: new Evaluator(ctx).eval(expr, undefined), diagnostics: [] };
  } catch (e) {
    if (e instanceof EvalFailure) return { diagnostics: [e.diagnostic] };
    if (e instanceof RangeError) {
      return {
        diagnostics: [
          errorDiag(
            "too-deep",
            "Expression too complex",
            "This expression is nested too deeply to evaluate.",
            expr.range,
          ),
        ],
      };
    }
    throw e;
  }
}

class EvalFailure {
  readonly diagnostic: Diagnostic;
  constructor(diagnostic: Diagnostic) {
    this.diagnostic = diagnostic;
  }
}

function fail(code: string, summary: string, detail: string, range: Range): never {
  throw new EvalFailure(errorDiag(code, summary, detail, range));
}

/** Variables introduced by `for` expressions and directives, innermost first. */
interface Scope {
  readonly names: ReadonlyMap<string, Value>;
  readonly parent: Scope | undefined;
  /** The element a splat's `each` expression is being evaluated for. */
  readonly splatItem?: Value;
}

class Evaluator {
  private readonly ctx: EvalContext;

  constructor(ctx: EvalContext) {
    this.ctx = ctx;
  }

  eval(e: Expression, scope: Scope | undefined): Value {
    switch (e.kind) {
      case "Number":
        if (!Number.isFinite(e.value)) {
          fail(
            "number-out-of-range",
            "Number out of range",
            `${e.raw} cannot be represented as a 64-bit floating-point number.`,
            e.range,
          );
        }
        return e.value;
      case "Bool":
        return e.value;
      case "Null":
        return null;
      case "Template":
        return this.template(e.parts, scope).normalize("NFC");
      case "TemplateWrap":
      case "Parens":
        return this.eval(e.expr, scope);
      case "Variable":
        return this.variable(e.name, e.range, scope);
      case "GetAttr":
        return this.getAttr(e, scope);
      case "Index":
        return this.index(e, scope);
      case "Splat":
        return this.splat(e, scope);
      case "SplatItem":
        return this.splatItem(e.range, scope);
      case "FunctionCall":
        return this.call(e, scope);
      case "Tuple":
        return e.items.map((item) => this.eval(item, scope));
      case "Object":
        return this.object(e, scope);
      case "Unary":
        return this.unary(e, scope);
      case "Binary":
        return this.binary(e, scope);
      case "Conditional": {
        const cond = this.bool(this.eval(e.condition, scope), e.condition.range, "condition");
        return this.eval(cond ? e.trueExpr : e.falseExpr, scope);
      }
      case "For":
        return this.forExpr(e, scope);
    }
  }

  // ---- names -----------------------------------------------------------------

  private variable(name: string, range: Range, scope: Scope | undefined): Value {
    for (let s = scope; s !== undefined; s = s.parent) {
      if (s.names.has(name)) return s.names.get(name)!;
    }
    const vars = this.ctx.variables;
    if (vars !== undefined && Object.hasOwn(vars, name)) return vars[name]!;
    const known = vars === undefined ? [] : Object.keys(vars);
    fail(
      "unknown-variable",
      "Unknown variable",
      known.length === 0
        ? `There is no variable named "${name}"; variables are not supported here.`
        : `There is no variable named "${name}" here. Available: ${known.map((k) => `"${k}"`).join(", ")}.`,
      range,
    );
  }

  private splatItem(range: Range, scope: Scope | undefined): Value {
    for (let s = scope; s !== undefined; s = s.parent) {
      if ("splatItem" in s) return s.splatItem!;
    }
    return fail("invalid-splat", "Invalid splat", "A splat item was used outside of a splat.", range);
  }

  // ---- access ----------------------------------------------------------------

  private getAttr(e: GetAttr, scope: Scope | undefined): Value {
    const obj = this.eval(e.object, scope);
    if (obj === null) {
      fail(
        "null-access",
        "Attempt to get attribute from null value",
        `This value is null, so it has no attribute "${e.name}".`,
        e.nameRange,
      );
    }
    if (!isObject(obj)) {
      fail(
        "unsupported-attribute",
        "Unsupported attribute",
        Array.isArray(obj)
          ? `A tuple has no attributes. To read "${e.name}" from every element, use a splat: ".*.${e.name}".`
          : `A ${typeName(obj)} value has no attributes.`,
        e.nameRange,
      );
    }
    if (!hasKey(obj, e.name)) {
      fail(
        "unsupported-attribute",
        "Unsupported attribute",
        `This object has no attribute named "${e.name}".`,
        e.nameRange,
      );
    }
    return obj[e.name]!;
  }

  private index(e: Index, scope: Scope | undefined): Value {
    const coll = this.eval(e.collection, scope);
    const key = this.eval(e.key, scope);
    const at = e.key.range;
    if (coll === null)
      fail("null-access", "Attempt to index null value", "This value is null, so it cannot be indexed.", at);
    if (Array.isArray(coll)) {
      const n = toNumber(key);
      if (n === undefined || !Number.isInteger(n)) {
        fail(
          "invalid-index",
          "Invalid index",
          `A tuple is indexed by a whole number, not by a ${typeName(key)}.`,
          at,
        );
      }
      if (n < 0 || n >= coll.length) {
        fail(
          "invalid-index",
          "Invalid index",
          `Index ${n} is out of range for a tuple of ${coll.length} element(s).`,
          at,
        );
      }
      return coll[n]!;
    }
    if (isObject(coll)) {
      const k = toStringValue(key);
      if (k === undefined)
        fail(
          "invalid-index",
          "Invalid index",
          `An object is indexed by a string, not by a ${typeName(key)}.`,
          at,
        );
      // Computed keys are not echoed: they may carry secrets.
      if (!hasKey(coll, k))
        fail("invalid-index", "Invalid index", "This object has no element with the given key.", at);
      return coll[k]!;
    }
    return fail("invalid-index", "Invalid index", `A ${typeName(coll)} value cannot be indexed.`, at);
  }

  private splat(e: Splat, scope: Scope | undefined): Value {
    const source = this.eval(e.source, scope);
    if (source === null) return [];
    // A single non-tuple value is treated as a one-element tuple.
    const items = Array.isArray(source) ? source : [source];
    return items.map((item) => this.eval(e.each, { names: new Map(), parent: scope, splatItem: item }));
  }

  // ---- calls and constructors ----------------------------------------------------

  private call(e: FunctionCall, scope: Scope | undefined): Value {
    const fns = this.ctx.functions;
    const fn = fns !== undefined && Object.hasOwn(fns, e.name) ? fns[e.name] : undefined;
    if (fn === undefined) {
      const known = fns === undefined ? [] : Object.keys(fns);
      fail(
        "unknown-function",
        "Unknown function",
        known.length === 0
          ? `There is no function named "${e.name}"; functions are not supported here.`
          : `There is no function named "${e.name}" here. Available: ${known.map((k) => `"${k}"`).join(", ")}.`,
        e.nameRange,
      );
    }
    const args: Value[] = [];
    const argRanges: Range[] = [];
    const argExpressions: Expression[] = [];
    e.args.forEach((argExpr, i) => {
      const v = this.eval(argExpr, scope);
      if (e.expandFinal && i === e.args.length - 1) {
        if (!Array.isArray(v)) {
          fail(
            "invalid-expansion",
            "Invalid expanding argument value",
            `The argument after "..." must be a tuple to expand into arguments, not a ${typeName(v)}.`,
            argExpr.range,
          );
        }
        for (const x of v) {
          args.push(x);
          argRanges.push(argExpr.range);
          argExpressions.push(argExpr);
        }
      } else {
        args.push(v);
        argRanges.push(argExpr.range);
        argExpressions.push(argExpr);
      }
    });
    const info: CallInfo = { name: e.name, range: e.range, argRanges, argExpressions };
    try {
      return fn(args, info);
    } catch (err) {
      if (err instanceof FunctionError) {
        const at = err.argIndex === undefined ? e.range : (argRanges[err.argIndex] ?? e.range);
        fail(err.code, err.summary, err.detail, at);
      }
      fail(
        "function-error",
        "Error in function call",
        `Calling "${e.name}" failed: ${err instanceof Error ? err.message : String(err)}`,
        e.range,
      );
    }
  }

  private object(e: ObjectCons, scope: Scope | undefined): Value {
    const out: ValueObject = {};
    for (const item of e.items) {
      // A bare name as a key stands for itself, not for a variable.
      const key =
        item.key.kind === "Variable" ? item.key.name : this.key(this.eval(item.key, scope), item.key.range);
      setKey(out, key, this.eval(item.value, scope));
    }
    return out;
  }

  private key(v: Value, range: Range): string {
    if (v === null) fail("invalid-key", "Invalid object key", "An object key cannot be null.", range);
    const s = toStringValue(v);
    if (s === undefined)
      fail(
        "invalid-key",
        "Invalid object key",
        `An object key must be a string, not a ${typeName(v)}.`,
        range,
      );
    return s;
  }

  // ---- operators -----------------------------------------------------------------

  private number(v: Value, range: Range, role: string): number {
    const n = toNumber(v);
    if (n === undefined)
      fail(
        "invalid-operand",
        "Invalid operand",
        `The ${role} must be a number, not a ${typeName(v)}.`,
        range,
      );
    return n;
  }

  private bool(v: Value, range: Range, role: string): boolean {
    const b = toBool(v);
    if (b === undefined)
      fail("invalid-operand", "Invalid operand", `The ${role} must be a bool, not a ${typeName(v)}.`, range);
    return b;
  }

  private unary(e: Unary, scope: Scope | undefined): Value {
    const v = this.eval(e.operand, scope);
    if (e.op === "!") return !this.bool(v, e.operand.range, 'operand of "!"');
    return -this.number(v, e.operand.range, 'operand of "-"');
  }

  private binary(e: Binary, scope: Scope | undefined): Value {
    const { op } = e;
    if (op === "&&" || op === "||") {
      // Short-circuits: the right side is not evaluated when the left decides.
      const left = this.bool(this.eval(e.left, scope), e.left.range, `left operand of "${op}"`);
      if (op === "&&" ? !left : left) return left;
      return this.bool(this.eval(e.right, scope), e.right.range, `right operand of "${op}"`);
    }
    const lv = this.eval(e.left, scope);
    const rv = this.eval(e.right, scope);
    if (op === "==") return valuesEqual(lv, rv);
    if (op === "!=") return !valuesEqual(lv, rv);
    const l = this.number(lv, e.left.range, `left operand of "${op}"`);
    const r = this.number(rv, e.right.range, `right operand of "${op}"`);
    let result: number | boolean;
    switch (op) {
      case "<":
        return l < r;
      case ">":
        return l > r;
      case "<=":
        return l <= r;
      case ">=":
        return l >= r;
      case "+":
        result = l + r;
        break;
      case "-":
        result = l - r;
        break;
      case "*":
        result = l * r;
        break;
      case "/":
      case "%":
        if (r === 0)
          fail("divide-by-zero", "Division by zero", `The right operand of "${op}" is zero.`, e.right.range);
        result = op === "/" ? l / r : l % r;
        break;
    }
    if (!Number.isFinite(result)) {
      fail(
        "number-out-of-range",
        "Number out of range",
        "The result does not fit in a 64-bit floating-point number.",
        e.range,
      );
    }
    return result;
  }

  // ---- for -----------------------------------------------------------------------

  /** The (key, value) pairs a `for` iterates: tuple indices, or object keys in sorted order. */
  private iterate(coll: Value, range: Range): Array<[Value, Value]> {
    if (Array.isArray(coll)) return coll.map((v, i) => [i, v]);
    if (isObject(coll)) {
      return Object.keys(coll)
        .sort()
        .map((k) => [k, coll[k]!]);
    }
    if (coll === null)
      fail("null-iteration", "Iteration over null value", "A 'for' cannot iterate over null.", range);
    return fail(
      "not-iterable",
      "Iteration over non-iterable value",
      `A 'for' can iterate over a tuple or an object, not a ${typeName(coll)}.`,
      range,
    );
  }

  private bindings(
    keyVar: string | undefined,
    valueVar: string,
    key: Value,
    value: Value,
    parent: Scope | undefined,
  ): Scope {
    const names = new Map<string, Value>();
    if (keyVar !== undefined) names.set(keyVar, key);
    names.set(valueVar, value);
    return { names, parent };
  }

  private forExpr(e: For, scope: Scope | undefined): Value {
    const pairs = this.iterate(this.eval(e.collection, scope), e.collection.range);
    const tuple: Value[] = [];
    const object: ValueObject = {};
    for (const [k, v] of pairs) {
      const inner = this.bindings(e.keyVar, e.valueVar, k, v, scope);
      if (e.condition !== undefined) {
        const c = this.eval(e.condition, inner);
        if (c === null)
          fail(
            "invalid-for-condition",
            "Invalid 'for' condition",
            "The 'if' condition produced null.",
            e.condition.range,
          );
        if (!this.bool(c, e.condition.range, "'if' condition")) continue;
      }
      if (!e.object) {
        tuple.push(this.eval(e.valueExpr, inner));
        continue;
      }
      const keyExpr = e.keyExpr!;
      const key = this.key(this.eval(keyExpr, inner), keyExpr.range);
      const value = this.eval(e.valueExpr, inner);
      if (e.grouping) {
        if (hasKey(object, key)) (object[key] as Value[]).push(value);
        else setKey(object, key, [value]);
      } else if (hasKey(object, key)) {
        fail(
          "duplicate-key",
          "Duplicate object key",
          'Two elements produced the same key. Add "..." after the value expression to group values by key.',
          keyExpr.range,
        );
      } else {
        setKey(object, key, value);
      }
    }
    return e.object ? object : tuple;
  }

  // ---- templates -------------------------------------------------------------------

  private template(parts: TemplatePart[], scope: Scope | undefined): string {
    let out = "";
    for (const part of parts) {
      switch (part.kind) {
        case "TemplateLiteral":
          out += part.value;
          break;
        case "TemplateInterpolation":
          out += this.interpolate(this.eval(part.expr, scope), part.expr.range);
          break;
        case "TemplateIf": {
          const c = this.bool(this.eval(part.condition, scope), part.condition.range, "'if' condition");
          out += this.template(c ? part.then : (part.else ?? []), scope);
          break;
        }
        case "TemplateFor":
          for (const [k, v] of this.iterate(this.eval(part.collection, scope), part.collection.range)) {
            out += this.template(part.body, this.bindings(part.keyVar, part.valueVar, k, v, scope));
          }
          break;
      }
    }
    return out;
  }

  private interpolate(v: Value, range: Range): string {
    if (v === null) {
      fail(
        "invalid-interpolation",
        "Invalid template interpolation value",
        "The value is null, and null cannot be included in a string.",
        range,
      );
    }
    const s = toStringValue(v);
    if (s === undefined) {
      fail(
        "invalid-interpolation",
        "Invalid template interpolation value",
        `A ${typeName(v)} cannot be included in a string; only strings, numbers and bools can.`,
        range,
      );
    }
    return s;
  }
}
