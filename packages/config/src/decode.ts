// Shared decoding helpers for the kernel-owned blocks: closed body schemas,
// static evaluation (no variables, no functions) and typed attribute readers.
// Every reader pushes positioned diagnostics and returns undefined on failure,
// so a loader can keep going and collect all problems in one pass.

import {
  type Attribute,
  type Block,
  type Body,
  bodyContent,
  type Expression,
  evaluate,
  isObject,
  literalString,
  type Range,
  type Value,
} from "@pluggableharness/hcl";
import { type ConfigDiagnostic, errorAt, fromHcl } from "./diagnostics.ts";

export type Diags = ConfigDiagnostic[];

export interface BodySpec {
  attributes?: string[];
  required?: string[];
  /** Nested block types; `labels` is the number of labels each takes. */
  blocks?: Record<string, { labels?: number; single?: boolean }>;
}

export interface DecodedBody {
  attrs: Map<string, Attribute>;
  blocks: Block[];
}

/**
 * Checks `body` against a closed schema. `owner` is the range missing-attribute
 * errors point at (the block's type keyword) and `ownerName` names it in messages.
 */
export function decodeBody(
  body: Body,
  spec: BodySpec,
  owner: Range,
  ownerName: string,
  diags: Diags,
): DecodedBody {
  const blockSpecs = spec.blocks ?? {};
  const content = bodyContent(body, {
    attributes: (spec.attributes ?? []).map((name) => ({ name })),
    blocks: Object.entries(blockSpecs).map(([type, b]) => ({
      type,
      labels: Array.from({ length: b.labels ?? 0 }, (_, i) => `label ${i + 1}`),
    })),
  });
  for (const d of content.diagnostics) {
    const category =
      d.code === "unsupported-argument"
        ? "unknown_attribute"
        : d.code === "unsupported-block-type"
          ? "unknown_block"
          : "syntax";
    diags.push(errorAt(category, d.summary, `${d.detail} (in ${ownerName})`, d.subject));
  }
  for (const name of spec.required ?? []) {
    if (!content.attributes.has(name)) {
      diags.push(
        errorAt("missing_attribute", "Missing required argument", `${ownerName} needs "${name}".`, owner),
      );
    }
  }
  const seen = new Map<string, Block>();
  for (const b of content.blocks) {
    if (blockSpecs[b.type]?.single !== true) continue;
    const first = seen.get(b.type);
    if (first !== undefined) {
      diags.push(
        errorAt(
          "duplicate",
          `Duplicate ${b.type} block`,
          `${ownerName} may hold only one "${b.type}" block; the first is at line ${first.typeRange.start.line}.`,
          b.typeRange,
        ),
      );
    } else {
      seen.set(b.type, b);
    }
  }
  return { attrs: content.attributes, blocks: content.blocks };
}

/** Evaluates an expression with no variables and no functions. */
export function evalStatic(expr: Expression, diags: Diags): Value | undefined {
  const r = evaluate(expr, {});
  for (const d of r.diagnostics) diags.push(fromHcl(d, "eval"));
  return r.value;
}

export function typeError(range: Range, what: string, expected: string, got: Value): ConfigDiagnostic {
  return errorAt("type", "Incorrect value type", `${what} must be ${expected}, not ${describe(got)}.`, range);
}

/** The HCL-ish type name of a value, for messages (never the value itself). */
export function describe(v: Value): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (isObject(v)) return "an object";
  if (typeof v === "boolean") return "a bool";
  if (typeof v === "number") return "a number";
  return "a string";
}

export function readString(attr: Attribute, what: string, diags: Diags): string | undefined {
  const v = evalStatic(attr.expr, diags);
  if (v === undefined) return undefined;
  if (typeof v !== "string") {
    diags.push(typeError(attr.expr.range, what, "a string", v));
    return undefined;
  }
  return v;
}

/** A string restricted to `allowed`; an unknown value names the allowed ones. */
export function readEnum<T extends string>(
  attr: Attribute,
  what: string,
  allowed: readonly T[],
  diags: Diags,
  hint?: (value: string) => string | undefined,
): T | undefined {
  const s = readString(attr, what, diags);
  if (s === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(s)) {
    const extra = hint?.(s);
    diags.push(
      errorAt(
        "invalid_value",
        "Invalid value",
        `${what} must be one of ${allowed.map((a) => `"${a}"`).join(", ")}; got "${s}".${extra ? ` ${extra}` : ""}`,
        attr.expr.range,
      ),
    );
    return undefined;
  }
  return s as T;
}

export function readBool(attr: Attribute, what: string, diags: Diags): boolean | undefined {
  const v = evalStatic(attr.expr, diags);
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") {
    diags.push(typeError(attr.expr.range, what, "a bool", v));
    return undefined;
  }
  return v;
}

export interface NumberRule {
  integer?: boolean;
  min?: number;
  max?: number;
  /** `min` itself is not allowed. */
  exclusiveMin?: boolean;
}

export function readNumber(
  attr: Attribute,
  what: string,
  rule: NumberRule,
  diags: Diags,
): number | undefined {
  const v = evalStatic(attr.expr, diags);
  if (v === undefined) return undefined;
  if (typeof v !== "number") {
    diags.push(typeError(attr.expr.range, what, rule.integer ? "a whole number" : "a number", v));
    return undefined;
  }
  const bad = (msg: string) => {
    diags.push(errorAt("invalid_value", "Invalid value", `${what} ${msg}; got ${v}.`, attr.expr.range));
    return undefined;
  };
  if (rule.integer === true && !Number.isSafeInteger(v)) return bad("must be a whole number");
  if (rule.min !== undefined) {
    if (rule.exclusiveMin === true ? v <= rule.min : v < rule.min) {
      return bad(`must be ${rule.exclusiveMin ? "greater than" : "at least"} ${rule.min}`);
    }
  }
  if (rule.max !== undefined && v > rule.max) return bad(`must be at most ${rule.max}`);
  return v;
}

/** A list of strings, each with its own range when written as a tuple literal. */
export function readStringList(
  attr: Attribute,
  what: string,
  diags: Diags,
): Array<{ value: string; range: Range }> | undefined {
  const v = evalStatic(attr.expr, diags);
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) {
    diags.push(typeError(attr.expr.range, what, "a list of strings", v));
    return undefined;
  }
  const ranges = attr.expr.kind === "Tuple" ? attr.expr.items.map((i) => i.range) : [];
  const out: Array<{ value: string; range: Range }> = [];
  let ok = true;
  v.forEach((item, i) => {
    const range = ranges[i] ?? attr.expr.range;
    if (typeof item !== "string") {
      diags.push(typeError(range, `Element ${i + 1} of ${what}`, "a string", item));
      ok = false;
      return;
    }
    out.push({ value: item, range });
  });
  return ok ? out : undefined;
}

export function readStringMap(
  attr: Attribute,
  what: string,
  diags: Diags,
): Record<string, string> | undefined {
  const v = evalStatic(attr.expr, diags);
  if (v === undefined) return undefined;
  if (!isObject(v)) {
    diags.push(typeError(attr.expr.range, what, "a map of strings", v));
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [k, item] of Object.entries(v)) {
    if (typeof item !== "string") {
      diags.push(typeError(attr.expr.range, `${what}["${k}"]`, "a string", item));
      return undefined;
    }
    out[k] = item;
  }
  return out;
}

export interface ObjectEntry {
  key: string;
  keyRange: Range;
  value: Expression;
  range: Range;
}

/**
 * The items of an object constructor, with positions. Keys must be a bare name
 * or a literal string; duplicates are errors. Returns undefined (with a
 * diagnostic) when `expr` is not an object constructor.
 */
export function objectEntries(expr: Expression, what: string, diags: Diags): ObjectEntry[] | undefined {
  if (expr.kind !== "Object") {
    diags.push(
      errorAt(
        "type",
        "Incorrect value type",
        `${what} must be written as an object, e.g. { key = "value" }.`,
        expr.range,
      ),
    );
    return undefined;
  }
  const out: ObjectEntry[] = [];
  const seen = new Map<string, Range>();
  for (const item of expr.items) {
    const key = item.key.kind === "Variable" ? item.key.name : literalString(item.key);
    if (key === undefined) {
      diags.push(
        errorAt(
          "unsupported_expression",
          "Invalid object key",
          `Keys in ${what} must be a name or a quoted literal string.`,
          item.key.range,
        ),
      );
      continue;
    }
    const prev = seen.get(key);
    if (prev !== undefined) {
      diags.push(
        errorAt(
          "duplicate",
          "Duplicate object key",
          `"${key}" is set twice in ${what}; the first is at line ${prev.start.line}.`,
          item.key.range,
        ),
      );
      continue;
    }
    seen.set(key, item.key.range);
    out.push({ key, keyRange: item.key.range, value: item.value, range: item.range });
  }
  return out;
}

/** The label of a one-label block, with its range. */
export function label(block: Block): { value: string; range: Range } {
  const l = block.labels[0]!;
  return { value: l.value, range: l.range };
}
