// Expression evaluation, following HashiCorp's hcl/v2 (hclsyntax over go-cty)
// closely: the differential test in testing/hcl-reference checks the results
// and the diagnostics against it. Values are typed internally (types.ts)
// because HCL's results depend on types; callers get plain values back.
//
// As in hcl/v2, evaluation does not stop at an error: a failed sub-expression
// yields an unknown value of the type it would have had, evaluation goes on,
// and every problem found is reported. That matters beyond completeness: a
// conditional unifies the types of both of its results even when one of them
// failed. Variables and functions come only from the caller's context.
// Diagnostics never quote computed string values, which may be secrets.

import type {
  Binary,
  Conditional,
  Expression,
  For,
  FunctionCall,
  GetAttr,
  Index,
  ObjectCons,
  Splat,
  TemplateFor,
  TemplateIf,
  TemplatePart,
  Unary,
} from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import { type CallInfo, FunctionError, type HclFunction } from "./functions.ts";
import type { Range } from "./source.ts";
import {
  BOOL,
  bool,
  ConversionError,
  canIterate,
  convert,
  DYNAMIC,
  DYNAMIC_VALUE,
  elements,
  equals,
  friendlyName,
  fromPlain,
  getConversion,
  isKnown,
  isPrimitive,
  isWhollyKnown,
  NUMBER,
  nullOf,
  num,
  object,
  STRING,
  str,
  type Type,
  type TypedValue,
  toPlain,
  tuple,
  typeOf,
  typesEqual,
  unify,
  unknown,
} from "./types.ts";
import type { Value } from "./value.ts";

export interface EvalContext {
  /** Names visible to expressions (e.g. `{ var: { region: "eu" } }` makes `var.region` work). */
  variables?: Readonly<Record<string, Value>>;
  /** Callable functions by name, e.g. `{ env: envFunction() }`. */
  functions?: Readonly<Record<string, HclFunction>>;
  /**
   * Evaluate `&&` and `||` without short-circuiting, as hcl/v2 did before
   * hashicorp/hcl#713 (released after v2.23.0). Only the differential test
   * against an older reference uses it.
   */
  strictLogicalOperators?: boolean;
}

export interface EvalResult {
  /** Absent when evaluation failed; `diagnostics` then holds the reasons. */
  value?: Value;
  diagnostics: Diagnostic[];
}

/** Evaluates one expression. Never throws. */
export function evaluate(expr: Expression, ctx: EvalContext = {}): EvalResult {
  const ev = new Evaluator(ctx);
  try {
    const result = ev.eval(expr, undefined);
    const diagnostics = distinct(ev.diagnostics);
    if (diagnostics.some((d) => d.severity === "error")) return { diagnostics };
    const value = toPlain(result);
    if (value === undefined) {
      return {
        diagnostics: [
          errorDiag("unknown-result", "Unknown result", "The expression has no known value.", expr.range),
        ],
      };
    }
    return { value, diagnostics };
  } catch (e) {
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

/** hcl/v2 can report the same problem twice (an index checked for the result type and for the value). */
function distinct(ds: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return ds.filter((d) => {
    const key = `${d.code}\0${d.summary}\0${d.subject.start.byte}\0${d.subject.end.byte}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const spanning = (a: Range, b: Range): Range => ({ filename: a.filename, start: a.start, end: b.end });

/** The first character of `r` (a bracket, an operator), as a range. */
function firstChar(r: Range): Range {
  return {
    filename: r.filename,
    start: r.start,
    end: { line: r.start.line, column: r.start.column + 1, byte: r.start.byte + 1 },
  };
}

/**
 * A key that hcl/v2's parser folds into a static traversal step: a number,
 * bool, null or a quoted string of exactly one literal part.
 */
export function isLiteralKey(e: Expression): boolean {
  if (e.kind === "Number" || e.kind === "Bool" || e.kind === "Null") return true;
  return (
    e.kind === "Template" &&
    e.heredoc === undefined &&
    e.parts.length === 1 &&
    e.parts[0]!.kind === "TemplateLiteral"
  );
}

/** A variable followed only by static steps (`a.b[0].c`), which hcl/v2 parses as one traversal. */
function isStaticTraversal(e: Expression): boolean {
  for (let x = e; ; ) {
    if (x.kind === "Variable") return true;
    if (x.kind === "GetAttr") x = x.object;
    else if (x.kind === "Index" && (x.legacy || isLiteralKey(x.key))) x = x.collection;
    else return false;
  }
}

/** Where hcl/v2 points a diagnostic about an argument: the start of its expression. */
export function startRange(e: Expression): Range {
  switch (e.kind) {
    case "Index":
      return e.legacy || isLiteralKey(e.key) ? e.range : firstChar(e.stepRange);
    case "FunctionCall":
      return spanning(e.nameRange, e.openParenRange);
    case "Conditional":
      return startRange(e.condition);
    case "Binary":
      return startRange(e.left);
    case "Unary":
      return firstChar(e.range);
    case "Parens":
      return startRange(e.expr);
    case "Tuple":
    case "Object":
    case "For":
      return firstChar(e.range);
    case "Splat":
      return e.markerRange;
    case "Template": {
      const first = e.parts[0];
      // An empty template's only part is an empty literal just after its closing quote or marker.
      if (first === undefined) return { filename: e.range.filename, start: e.range.end, end: e.range.end };
      if (first.kind === "TemplateLiteral") return first.range;
      if (first.kind === "TemplateInterpolation") return startRange(first.expr);
      if (first.kind === "TemplateIf") return startRange(first.condition);
      return first.openRange;
    }
    default:
      return e.range;
  }
}

/** Variables introduced by `for` expressions and directives, innermost first. */
interface Scope {
  readonly names: ReadonlyMap<string, TypedValue>;
  readonly parent: Scope | undefined;
  /** The element a splat's `each` expression is being evaluated for. */
  readonly splatItem?: TypedValue;
}

class Evaluator {
  private readonly ctx: EvalContext;
  private readonly variables = new Map<string, TypedValue>();
  readonly diagnostics: Diagnostic[] = [];

  constructor(ctx: EvalContext) {
    this.ctx = ctx;
  }

  private error(code: string, summary: string, detail: string, range: Range): void {
    this.diagnostics.push(errorDiag(code, summary, detail, range));
  }

  /** Position in the diagnostics, to tell whether a sub-evaluation failed. */
  private mark(): number {
    return this.diagnostics.length;
  }

  private failedSince(mark: number): boolean {
    return this.diagnostics.length > mark;
  }

  /** Evaluates `e` and takes its diagnostics out, for the caller to keep or drop. */
  private isolated(e: Expression, scope: Scope | undefined): { value: TypedValue; diags: Diagnostic[] } {
    const m = this.mark();
    const value = this.eval(e, scope);
    return { value, diags: this.diagnostics.splice(m) };
  }

  eval(e: Expression, scope: Scope | undefined): TypedValue {
    switch (e.kind) {
      case "Number":
        if (!Number.isFinite(e.value)) {
          this.error(
            "number-out-of-range",
            "Number out of range",
            `${e.raw} cannot be represented as a 64-bit floating-point number.`,
            e.range,
          );
          return unknown(NUMBER);
        }
        return num(e.value);
      case "Bool":
        return bool(e.value);
      case "Null":
        return nullOf(DYNAMIC);
      case "Template":
        return this.template(e.parts, scope);
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
        return this.splatItem(scope);
      case "FunctionCall":
        return this.call(e, scope);
      case "Tuple":
        return tuple(e.items.map((item) => this.eval(item, scope)));
      case "Object":
        return this.object(e, scope);
      case "Unary":
        return this.unary(e, scope);
      case "Binary":
        return this.binary(e, scope);
      case "Conditional":
        return this.conditional(e, scope);
      case "For":
        return this.forExpr(e, scope);
    }
  }

  // ---- names -----------------------------------------------------------------

  private variable(name: string, range: Range, scope: Scope | undefined): TypedValue {
    for (let s = scope; s !== undefined; s = s.parent) {
      const v = s.names.get(name);
      if (v !== undefined) return v;
    }
    const cached = this.variables.get(name);
    if (cached !== undefined) return cached;
    const vars = this.ctx.variables;
    if (vars !== undefined && Object.hasOwn(vars, name)) {
      const v = fromPlain(vars[name]!);
      this.variables.set(name, v);
      return v;
    }
    const known = vars === undefined ? [] : Object.keys(vars);
    this.error(
      "unknown-variable",
      "Unknown variable",
      known.length === 0
        ? `There is no variable named "${name}"; variables are not supported here.`
        : `There is no variable named "${name}" here. Available: ${known.map((k) => `"${k}"`).join(", ")}.`,
      range,
    );
    return DYNAMIC_VALUE;
  }

  private splatItem(scope: Scope | undefined): TypedValue {
    for (let s = scope; s !== undefined; s = s.parent) {
      if (s.splatItem !== undefined) return s.splatItem;
    }
    return DYNAMIC_VALUE;
  }

  // ---- access ----------------------------------------------------------------

  private getAttr(e: GetAttr, scope: Scope | undefined): TypedValue {
    return this.attribute(this.eval(e.object, scope), e.name, e.stepRange);
  }

  /** `value.name`, with hcl/v2's diagnostics at `at` (the dot and the name). */
  private attribute(v: TypedValue, name: string, at: Range): TypedValue {
    const unsupported = (detail: string) => {
      this.error("unsupported-attribute", "Unsupported attribute", detail, at);
      return DYNAMIC_VALUE;
    };
    if (v.kind === "null") {
      this.error(
        "null-access",
        "Attempt to get attribute from null value",
        `This value is null, so it has no attribute "${name}".`,
        at,
      );
      return DYNAMIC_VALUE;
    }
    const t = typeOf(v);
    if (t.kind === "dynamic") return DYNAMIC_VALUE;
    if (t.kind === "object") {
      const attrType = t.attrs.get(name);
      if (attrType === undefined) return unsupported(`This object has no attribute named "${name}".`);
      return v.kind === "object" ? v.attrs.get(name)! : unknown(attrType);
    }
    if (t.kind === "map") {
      if (v.kind !== "map") return unknown(t.elem);
      const x = v.entries.get(name);
      if (x === undefined) {
        this.error(
          "missing-map-element",
          "Missing map element",
          `This map has no element with the key "${name}".`,
          at,
        );
        return DYNAMIC_VALUE;
      }
      return x;
    }
    if (t.kind === "tuple" || t.kind === "list") {
      return unsupported(
        `A ${t.kind} has no attributes. To read "${name}" from every element, use a splat: "[*].${name}".`,
      );
    }
    return unsupported(
      isPrimitive(t) ? `A ${t.kind} value has no attributes.` : "This value does not have any attributes.",
    );
  }

  private index(e: Index, scope: Scope | undefined): TypedValue {
    const coll = this.eval(e.collection, scope);
    const key = this.eval(e.key, scope);
    return this.indexValue(coll, key, e.stepRange);
  }

  /** `collection[key]` as hcl.Index does it, with diagnostics at `at` (the brackets). */
  private indexValue(coll: TypedValue, key: TypedValue, at: Range): TypedValue {
    const invalid = (detail: string) => {
      this.error("invalid-index", "Invalid index", detail, at);
      return DYNAMIC_VALUE;
    };
    if (coll.kind === "null") {
      this.error(
        "null-access",
        "Attempt to index null value",
        "This value is null, so it cannot be indexed.",
        at,
      );
      return DYNAMIC_VALUE;
    }
    if (key.kind === "null") return invalid("A null value cannot be used as an index.");
    const t = typeOf(coll);
    const kt = typeOf(key);
    if (t.kind === "dynamic" || kt.kind === "dynamic") return DYNAMIC_VALUE;
    if (t.kind === "tuple" || t.kind === "list" || t.kind === "map") {
      let k: TypedValue;
      try {
        k = convert(key, t.kind === "map" ? STRING : NUMBER);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        return invalid(`This ${t.kind} cannot be indexed by a ${friendlyName(kt)}: ${err.message}.`);
      }
      if (!isKnown(k) || !isKnown(coll)) return t.kind === "tuple" ? DYNAMIC_VALUE : unknown(t.elem);
      if (coll.kind === "map") {
        // Computed keys are not echoed: they may carry secrets.
        return (
          coll.entries.get((k as { value: string }).value) ??
          invalid("This map has no element with the given key.")
        );
      }
      const items = (coll as TypedValue & { kind: "tuple" | "list" }).items;
      const n = (k as { value: number }).value;
      if (!Number.isInteger(n))
        return invalid("A sequence is indexed by a whole number; this index has a fractional part.");
      if (n < 0) return invalid("A negative number is not a valid index for a sequence.");
      if (n >= items.length) {
        return invalid(
          items.length === 0
            ? "The collection has no elements."
            : "The index is greater than or equal to the length of the collection.",
        );
      }
      return items[n]!;
    }
    if (t.kind === "object") {
      let k: TypedValue;
      try {
        k = convert(key, STRING);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        return invalid(`An object cannot be indexed by a ${friendlyName(kt)}: ${err.message}.`);
      }
      if (!isKnown(coll) || !isKnown(k)) return DYNAMIC_VALUE;
      const x = (coll as TypedValue & { kind: "object" }).attrs.get((k as { value: string }).value);
      return (
        x ??
        invalid(
          kt.kind === "number"
            ? "This object has no element with the given key. An object is indexed by attribute name, not by position."
            : "This object has no element with the given key.",
        )
      );
    }
    return invalid(`A ${friendlyName(t)} value does not have any indices.`);
  }

  private splat(e: Splat, scope: Scope | undefined): TypedValue {
    const m = this.mark();
    const source = this.eval(e.source, scope);
    const each = (item: TypedValue) =>
      this.eval(e.each, { names: new Map(), parent: scope, splatItem: item });
    if (this.failedSince(m)) {
      each(DYNAMIC_VALUE);
      return DYNAMIC_VALUE;
    }
    const t = typeOf(source);
    const sequence = t.kind === "tuple" || t.kind === "list";
    if (source.kind === "null") {
      if (!sequence) return tuple([]);
      this.error(
        "null-splat",
        "Splat of null value",
        "A splat cannot be applied to a null sequence.",
        e.source.range,
      );
      return DYNAMIC_VALUE;
    }
    if (t.kind === "dynamic") return DYNAMIC_VALUE;
    // A single value that is not a sequence is treated as a one-element tuple.
    const upgraded = sequence ? source : tuple([source]);
    const resultType = (): Type => {
      const ut = typeOf(upgraded);
      if (ut.kind === "list") return { kind: "list", elem: typeOf(each(unknown(ut.elem))) };
      if (ut.kind === "tuple")
        return { kind: "tuple", elems: ut.elems.map((et) => typeOf(each(unknown(et)))) };
      return DYNAMIC;
    };
    if (!isKnown(upgraded)) return unknown(resultType());
    let known = true;
    const results = (upgraded as TypedValue & { kind: "tuple" | "list" }).items.map((item) => {
      const before = this.mark();
      const r = each(item);
      if (this.failedSince(before)) known = false;
      return r;
    });
    if (!sequence && !isKnown(source)) return DYNAMIC_VALUE;
    if (!known) return unknown(this.discarding(resultType));
    if (upgraded.kind === "list") {
      if (results.length === 0) {
        const rt = resultType();
        return { kind: "list", elem: rt.kind === "list" ? rt.elem : DYNAMIC, items: [] };
      }
      const elem = typeOf(results[0]!);
      if (!results.every((r) => typesEqual(typeOf(r), elem))) {
        this.error(
          "invalid-splat",
          "Invalid splat result",
          "The splat results do not all have the same type.",
          e.range,
        );
        return DYNAMIC_VALUE;
      }
      return { kind: "list", elem, items: results };
    }
    return tuple(results);
  }

  /** Runs `f` and drops whatever it reports. */
  private discarding<T>(f: () => T): T {
    const m = this.mark();
    const r = f();
    this.diagnostics.splice(m);
    return r;
  }

  // ---- calls and constructors ----------------------------------------------------

  private call(e: FunctionCall, scope: Scope | undefined): TypedValue {
    const fns = this.ctx.functions;
    const fn = fns !== undefined && Object.hasOwn(fns, e.name) ? fns[e.name] : undefined;
    if (fn === undefined) {
      const known = fns === undefined ? [] : Object.keys(fns);
      this.error(
        "unknown-function",
        "Unknown function",
        known.length === 0
          ? `There is no function named "${e.name}"; functions are not supported here.`
          : `There is no function named "${e.name}" here. Available: ${known.map((k) => `"${k}"`).join(", ")}.`,
        e.nameRange,
      );
      return DYNAMIC_VALUE;
    }
    const m = this.mark();
    // hcl/v2 evaluates the expanded argument first, and stops if it fails.
    const fixed = e.expandFinal ? e.args.slice(0, -1) : e.args;
    let expanded: TypedValue[] = [];
    const expandExpr = e.expandFinal ? e.args[e.args.length - 1]! : undefined;
    if (expandExpr !== undefined) {
      const v = this.eval(expandExpr, scope);
      if (this.failedSince(m)) return DYNAMIC_VALUE;
      const t = typeOf(v);
      if (t.kind === "tuple" || t.kind === "list" || t.kind === "dynamic") {
        if (v.kind === "null") {
          this.error(
            "invalid-expansion",
            "Invalid expanding argument value",
            'The argument expanded with "..." must not be null.',
            expandExpr.range,
          );
          return DYNAMIC_VALUE;
        }
        if (!isKnown(v)) return DYNAMIC_VALUE;
        expanded = [...(v as TypedValue & { kind: "tuple" | "list" }).items];
      } else {
        this.error(
          "invalid-expansion",
          "Invalid expanding argument value",
          `The argument after "..." must be a tuple or a list to expand into arguments, not a ${friendlyName(t)}.`,
          expandExpr.range,
        );
        return DYNAMIC_VALUE;
      }
    }
    const args: TypedValue[] = fixed.map((a) => this.eval(a, scope));
    if (this.failedSince(m)) return DYNAMIC_VALUE;
    const argExpressions: Expression[] = [...fixed, ...expanded.map(() => expandExpr!)];
    const argRanges = [...fixed.map(startRange), ...expanded.map(() => expandExpr!.range)];
    args.push(...expanded);
    // Like a go-cty function, one given an unknown argument is not called.
    if (!args.every(isWhollyKnown)) return DYNAMIC_VALUE;
    const info: CallInfo = { name: e.name, range: e.range, argRanges, argExpressions };
    const callRange = spanning(e.nameRange, e.openParenRange);
    try {
      return fromPlain(
        fn(
          args.map((a) => toPlain(a)!),
          info,
        ),
      );
    } catch (err) {
      if (err instanceof FunctionError) {
        const at = err.argIndex === undefined ? undefined : argRanges[err.argIndex];
        this.error(err.code, err.summary, err.detail, at ?? callRange);
      } else {
        this.error(
          "function-error",
          "Error in function call",
          `Calling "${e.name}" failed: ${err instanceof Error ? err.message : String(err)}`,
          callRange,
        );
      }
      return DYNAMIC_VALUE;
    }
  }

  /** An object key as hcl/v2 reads it: a bare name (or null/true/false) is literal text. */
  private objectKey(keyExpr: Expression, scope: Scope | undefined): TypedValue {
    if (keyExpr.kind === "Variable") return str(keyExpr.name);
    if (keyExpr.kind === "Null") return str("null");
    if (keyExpr.kind === "Bool") return str(keyExpr.value ? "true" : "false");
    if (keyExpr.kind !== "Parens" && isStaticTraversal(keyExpr)) {
      this.error(
        "invalid-key",
        "Ambiguous attribute key",
        'A reference must be wrapped in parentheses to be used as a key, and a name with dots must be quoted: write "(a.b)" or "\\"a.b\\"".',
        keyExpr.range,
      );
      return DYNAMIC_VALUE;
    }
    return this.eval(keyExpr, scope);
  }

  private object(e: ObjectCons, scope: Scope | undefined): TypedValue {
    const attrs = new Map<string, TypedValue>();
    let known = true;
    for (const item of e.items) {
      const m = this.mark();
      const key = this.objectKey(item.key, scope);
      const keyFailed = this.failedSince(m);
      const value = this.eval(item.value, scope);
      if (keyFailed) {
        known = false;
        continue;
      }
      if (key.kind === "null") {
        this.error("invalid-key", "Null value as key", "An object key cannot be null.", item.value.range);
        known = false;
        continue;
      }
      let k: TypedValue;
      try {
        k = convert(key, STRING);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        this.error(
          "invalid-key",
          "Incorrect key type",
          `An object key must be a string, not a ${friendlyName(typeOf(key))}.`,
          item.key.range,
        );
        known = false;
        continue;
      }
      if (!isKnown(k)) {
        known = false;
        continue;
      }
      attrs.set((k as { value: string }).value.normalize("NFC"), value);
    }
    return known ? object(attrs) : DYNAMIC_VALUE;
  }

  // ---- operators -----------------------------------------------------------------

  /** Converts an operand; a failure is reported at the operand and gives undefined. */
  private operand(v: TypedValue, to: Type, range: Range, side: string): TypedValue | undefined {
    try {
      return convert(v, to);
    } catch (err) {
      if (!(err instanceof ConversionError)) throw err;
      this.error(
        "invalid-operand",
        "Invalid operand",
        `Unsuitable value for ${side} operand: ${err.message}.`,
        range,
      );
      return undefined;
    }
  }

  private unary(e: Unary, scope: Scope | undefined): TypedValue {
    const to = e.op === "!" ? BOOL : NUMBER;
    const m = this.mark();
    const v = this.operand(this.eval(e.operand, scope), to, e.operand.range, "unary");
    if (v === undefined || this.failedSince(m) || v.kind === "unknown") return unknown(to);
    if (v.kind === "null") {
      this.error("operation-failed", "Operation failed", "The operand is null.", e.range);
      return unknown(to);
    }
    if (e.op === "!") return bool(!(v as { value: boolean }).value);
    return num(-(v as { value: number }).value);
  }

  private binary(e: Binary, scope: Scope | undefined): TypedValue {
    const { op } = e;
    const logical = op === "&&" || op === "||";
    const equality = op === "==" || op === "!=";
    const resultType = op === "+" || op === "-" || op === "*" || op === "/" || op === "%" ? NUMBER : BOOL;
    const to = logical ? BOOL : equality ? DYNAMIC : NUMBER;
    const lhs = this.isolated(e.left, scope);
    const l = this.operand(lhs.value, to, e.left.range, "left");
    const rhs = this.isolated(e.right, scope);
    const r = this.operand(rhs.value, to, e.right.range, "right");
    if (l === undefined || r === undefined) {
      this.diagnostics.push(...lhs.diags, ...rhs.diags);
      return unknown(resultType);
    }
    if (logical && this.ctx.strictLogicalOperators !== true) {
      const decided = shortCircuit(op === "||", l, r, lhs.diags, rhs.diags);
      if (decided !== undefined) {
        this.diagnostics.push(...decided.diags);
        return decided.value;
      }
    }
    this.diagnostics.push(...lhs.diags, ...rhs.diags);
    if (lhs.diags.length > 0 || rhs.diags.length > 0) return unknown(resultType);
    if (equality) {
      const eq = equals(l, r);
      return eq === undefined ? unknown(BOOL) : bool(op === "==" ? eq : !eq);
    }
    if (!isKnown(l) || !isKnown(r)) return unknown(resultType);
    if (l.kind === "null" || r.kind === "null") {
      this.error("operation-failed", "Operation failed", `An operand of "${op}" is null.`, e.range);
      return unknown(resultType);
    }
    if (logical) {
      const a = (l as { value: boolean }).value;
      const b = (r as { value: boolean }).value;
      return bool(op === "&&" ? a && b : a || b);
    }
    const a = (l as { value: number }).value;
    const b = (r as { value: number }).value;
    let result: number;
    switch (op) {
      case "<":
        return bool(a < b);
      case ">":
        return bool(a > b);
      case "<=":
        return bool(a <= b);
      case ">=":
        return bool(a >= b);
      case "+":
        result = a + b;
        break;
      case "-":
        result = a - b;
        break;
      case "*":
        result = a * b;
        break;
      default:
        if (b === 0) {
          if (a === 0 && op === "/") {
            this.error("operation-failed", "Operation failed", "Zero cannot be divided by zero.", e.range);
          } else {
            // hcl/v2 yields an infinity (or, for "%", the left operand); a Value cannot hold an infinity.
            this.error(
              "divide-by-zero",
              "Division by zero",
              `The right operand of "${op}" is zero.`,
              e.right.range,
            );
          }
          return unknown(NUMBER);
        }
        result = op === "/" ? a / b : a % b;
        break;
    }
    if (!Number.isFinite(result)) {
      this.error(
        "number-out-of-range",
        "Number out of range",
        "The result does not fit in a 64-bit floating-point number.",
        e.range,
      );
      return unknown(NUMBER);
    }
    return num(result);
  }

  /**
   * `cond ? a : b`. As in hcl/v2, both results are evaluated so that their
   * types can be unified (a number and a string make a string; a number and a
   * bool cannot be unified), and only the chosen result's diagnostics count.
   */
  private conditional(e: Conditional, scope: Scope | undefined): TypedValue {
    const t = this.isolated(e.trueExpr, scope);
    const f = this.isolated(e.falseExpr, scope);
    const tt = typeOf(t.value);
    const ft = typeOf(f.value);
    let resultType: Type | undefined = DYNAMIC;
    let convs: Array<((v: TypedValue) => TypedValue) | undefined> = [undefined, undefined];
    if (t.value.kind === "null" && tt.kind === "dynamic") {
      resultType = ft;
      convs = [getConversion(DYNAMIC, ft), undefined];
    } else if (f.value.kind === "null" && ft.kind === "dynamic") {
      resultType = tt;
      convs = [undefined, getConversion(DYNAMIC, tt)];
    } else if (tt.kind !== "dynamic" && ft.kind !== "dynamic") {
      [resultType, convs] = unify([tt, ft]);
    }
    if (resultType === undefined) {
      this.error(
        "inconsistent-conditional-types",
        "Inconsistent conditional result types",
        `The true and false results must have types that can be unified: here a ${friendlyName(tt)} and a ${friendlyName(ft)}.`,
        spanning(e.trueExpr.range, e.falseExpr.range),
      );
      return DYNAMIC_VALUE;
    }
    const c = this.condition(e.condition, scope);
    if (c === undefined) return unknown(resultType);
    const chosen = c ? t : f;
    this.diagnostics.push(...chosen.diags);
    const conv = convs[c ? 0 : 1];
    if (conv === undefined) return chosen.value;
    try {
      return conv(chosen.value);
    } catch (err) {
      if (!(err instanceof ConversionError)) throw err;
      this.error(
        "inconsistent-conditional-types",
        "Inconsistent conditional result types",
        `The chosen result has the wrong type: ${err.message}.`,
        c ? e.trueExpr.range : e.falseExpr.range,
      );
      return unknown(resultType);
    }
  }

  /** A conditional's condition: its truth, or undefined when it is unknown or was reported. */
  private condition(expr: Expression, scope: Scope | undefined): boolean | undefined {
    const cond = this.eval(expr, scope);
    if (cond.kind === "null") {
      this.error(
        "invalid-condition",
        "Null condition",
        "The condition is null; it must be true or false.",
        expr.range,
      );
      return undefined;
    }
    if (!isKnown(cond)) return undefined;
    try {
      return (convert(cond, BOOL) as { value: boolean }).value;
    } catch (err) {
      if (!(err instanceof ConversionError)) throw err;
      this.error(
        "invalid-condition",
        "Incorrect condition type",
        `The condition must be a bool, not a ${friendlyName(typeOf(cond))}.`,
        expr.range,
      );
      return undefined;
    }
  }

  // ---- for -----------------------------------------------------------------------

  /** The collection a `for` iterates, or undefined when the result is unknown (or reported). */
  private collection(expr: Expression, scope: Scope | undefined): TypedValue | undefined {
    const coll = this.eval(expr, scope);
    if (coll.kind === "null") {
      this.error(
        "null-iteration",
        "Iteration over null value",
        "A null value cannot be iterated by 'for'.",
        expr.range,
      );
      return undefined;
    }
    const t = typeOf(coll);
    if (t.kind === "dynamic") return undefined;
    if (!canIterate(t)) {
      this.error(
        "not-iterable",
        "Iteration over non-iterable value",
        `A 'for' can iterate over a tuple, list, object or map, not a ${friendlyName(t)}.`,
        expr.range,
      );
      return undefined;
    }
    return isKnown(coll) ? coll : undefined;
  }

  private bindings(
    keyVar: string | undefined,
    valueVar: string,
    key: TypedValue,
    value: TypedValue,
    parent: Scope | undefined,
  ): Scope {
    const names = new Map<string, TypedValue>();
    if (keyVar !== undefined) names.set(keyVar, key);
    names.set(valueVar, value);
    return { names, parent };
  }

  private forExpr(e: For, scope: Scope | undefined): TypedValue {
    const coll = this.collection(e.collection, scope);
    if (coll === undefined) return DYNAMIC_VALUE;
    const condition = e.condition;
    if (condition !== undefined) {
      // hcl/v2 first checks the condition with unknown loop variables.
      const m = this.mark();
      const c = this.eval(
        condition,
        this.bindings(e.keyVar, e.valueVar, DYNAMIC_VALUE, DYNAMIC_VALUE, scope),
      );
      if (c.kind === "null") {
        this.error(
          "invalid-condition",
          "Condition is null",
          "The 'if' clause must not be null.",
          condition.range,
        );
        return DYNAMIC_VALUE;
      }
      try {
        convert(c, BOOL);
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        this.error(
          "invalid-condition",
          "Invalid 'for' condition",
          `The 'if' clause must be a bool: ${err.message}.`,
          condition.range,
        );
        return DYNAMIC_VALUE;
      }
      if (this.failedSince(m)) return DYNAMIC_VALUE;
    }
    let known = true;
    /** Reports a problem of one element's `if` or key, once: later ones only make the result unknown. */
    const once = (code: string, summary: string, detail: string, range: Range) => {
      if (known) this.error(code, summary, detail, range);
      known = false;
    };
    const items: TypedValue[] = [];
    const attrs = new Map<string, TypedValue>();
    const groups = new Map<string, TypedValue[]>();
    for (const [k, v] of elements(coll)) {
      const inner = this.bindings(e.keyVar, e.valueVar, k, v, scope);
      if (condition !== undefined) {
        const c = this.eval(condition, inner);
        if (c.kind === "null") {
          once(
            "invalid-condition",
            "Invalid 'for' condition",
            "The 'if' clause must not be null.",
            condition.range,
          );
          continue;
        }
        if (!e.object && !isKnown(c)) {
          known = false;
          continue;
        }
        let b: TypedValue;
        try {
          b = convert(c, BOOL);
        } catch (err) {
          if (!(err instanceof ConversionError)) throw err;
          once(
            "invalid-condition",
            "Invalid 'for' condition",
            `The 'if' clause must be a bool: ${err.message}.`,
            condition.range,
          );
          continue;
        }
        if (!isKnown(b)) {
          known = false;
          continue;
        }
        if (!(b as { value: boolean }).value) continue;
      }
      if (!e.object) {
        items.push(this.eval(e.valueExpr, inner));
        continue;
      }
      const keyExpr = e.keyExpr!;
      const keyRaw = this.eval(keyExpr, inner);
      if (keyRaw.kind === "null") {
        once("invalid-key", "Invalid object key", "The key expression produced null.", keyExpr.range);
        continue;
      }
      if (!isKnown(keyRaw)) {
        known = false;
        continue;
      }
      let key: string;
      try {
        key = (convert(keyRaw, STRING) as { value: string }).value;
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        once(
          "invalid-key",
          "Invalid object key",
          `The key expression must produce a string, not a ${friendlyName(typeOf(keyRaw))}.`,
          keyExpr.range,
        );
        continue;
      }
      const value = this.eval(e.valueExpr, inner);
      if (e.grouping) {
        const group = groups.get(key);
        if (group === undefined) groups.set(key, [value]);
        else group.push(value);
      } else if (attrs.has(key)) {
        this.error(
          "duplicate-key",
          "Duplicate object key",
          'Two elements produced the same key. Add "..." after the value expression to group values by key.',
          keyExpr.range,
        );
      } else {
        attrs.set(key, value);
      }
    }
    if (!known) return DYNAMIC_VALUE;
    if (!e.object) return tuple(items);
    if (e.grouping) return object(new Map([...groups].map(([k, vs]) => [k, tuple(vs)])));
    return object(attrs);
  }

  // ---- templates -------------------------------------------------------------------

  private template(parts: readonly TemplatePart[], scope: Scope | undefined): TypedValue {
    let out = "";
    let known = true;
    for (const part of parts) {
      let piece: TypedValue;
      let at: Range;
      switch (part.kind) {
        case "TemplateLiteral":
          out += part.value;
          continue;
        case "TemplateInterpolation":
          piece = this.eval(part.expr, scope);
          at = part.expr.range;
          break;
        case "TemplateIf":
          piece = this.templateIf(part, scope);
          at = part.range;
          break;
        case "TemplateFor":
          piece = this.templateFor(part, scope);
          at = part.range;
          break;
      }
      if (piece.kind === "null") {
        this.error(
          "invalid-interpolation",
          "Invalid template interpolation value",
          "The value is null, and null cannot be included in a string.",
          at,
        );
        continue;
      }
      if (!isKnown(piece)) {
        known = false;
        continue;
      }
      try {
        out += (convert(piece, STRING) as { value: string }).value;
      } catch (err) {
        if (!(err instanceof ConversionError)) throw err;
        this.error(
          "invalid-interpolation",
          "Invalid template interpolation value",
          `A ${friendlyName(typeOf(piece))} cannot be included in a string; only strings, numbers and bools can.`,
          at,
        );
      }
    }
    return known ? str(out.normalize("NFC")) : unknown(STRING);
  }

  /** `%{ if }`: a conditional whose results are both strings; only the chosen one's diagnostics count. */
  private templateIf(part: TemplateIf, scope: Scope | undefined): TypedValue {
    const c = this.condition(part.condition, scope);
    if (c === undefined) return unknown(STRING);
    return this.template(c ? part.then : (part.else ?? []), scope);
  }

  /** `%{ for }`: the body once per element, joined. */
  private templateFor(part: TemplateFor, scope: Scope | undefined): TypedValue {
    const coll = this.collection(part.collection, scope);
    if (coll === undefined) return unknown(STRING);
    let out = "";
    let known = true;
    for (const [k, v] of elements(coll)) {
      const s = this.template(part.body, this.bindings(part.keyVar, part.valueVar, k, v, scope));
      if (!isKnown(s)) known = false;
      else out += (s as { value: string }).value;
    }
    return known ? str(out) : unknown(STRING);
  }
}

/**
 * `&&` / `||` since hashicorp/hcl#713: an operand that decides the result on
 * its own (false for `&&`, true for `||`, on either side) wins, and only its
 * own diagnostics are kept. Undefined when neither side decides.
 */
function shortCircuit(
  isOr: boolean,
  l: TypedValue,
  r: TypedValue,
  lDiags: Diagnostic[],
  rDiags: Diagnostic[],
): { value: TypedValue; diags: Diagnostic[] } | undefined {
  // A null counts as "not true" (go-cty's True() of a null bool is false).
  const truth = (v: TypedValue) => v.kind === "bool" && v.value;
  const decisive = (v: TypedValue) => isKnown(v) && (isOr ? truth(v) : !truth(v));
  if (!isKnown(l) && !isKnown(r))
    return lDiags.length === 0 ? { value: unknown(BOOL), diags: lDiags } : undefined;
  if (decisive(l)) return { value: bool(isOr), diags: lDiags };
  if (decisive(r)) return { value: bool(isOr), diags: rDiags };
  if (!isKnown(l) && isKnown(r)) return { value: unknown(BOOL), diags: lDiags };
  if (!isKnown(r) && isKnown(l)) return { value: unknown(BOOL), diags: rDiags };
  return undefined;
}
