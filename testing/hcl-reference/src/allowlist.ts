// The documented differences between packages/hcl and the reference (Debian's
// hcl/v2 2.14.1). Each entry says why the difference is there and matches
// exactly the disagreements it explains; anything else fails the test.
//   version-skew   upstream hcl/v2 changed after 2.14.1 and we follow the newer
//                  behaviour (the change is named);
//   deviation      a deliberate, documented choice of packages/hcl
//                  (packages/hcl/README.md, "Deviations and choices").

import { evaluate, parseFile } from "@pluggableharness/hcl";
import type { Disagreement } from "./compare.ts";
import { referenceFunctions } from "./functions.ts";
import type { OurResult } from "./ours.ts";
import type { ReferenceInput, RefResult } from "./reference.ts";

export interface Case {
  input: ReferenceInput;
  text: string;
  ref: RefResult;
  ours: OurResult;
  disagreement: Disagreement;
}

export interface AllowlistEntry {
  id: string;
  kind: "version-skew" | "deviation";
  reason: string;
  matches(c: Case): boolean;
}

/** Byte offset → UTF-16 index in `text`. */
function indexOfByte(text: string, byte: number): number {
  let b = 0;
  let i = 0;
  while (i < text.length && b < byte) {
    const cp = text.codePointAt(i)!;
    b += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    i += cp > 0xffff ? 2 : 1;
  }
  return i;
}

/** UTF-16 index → byte offset in `text`. */
function byteOfIndex(text: string, index: number): number {
  return new TextEncoder().encode(text.slice(0, index)).length;
}

/** The source text of the attribute a disagreement is about (by its expression range). */
function attributeText(c: Case): string | undefined {
  const path = c.disagreement.path;
  const find = (items: OurResult["body"], prefix: string): string | undefined => {
    for (const item of items) {
      if ("attr" in item) {
        if (`${prefix}attr ${item.attr}` === path) {
          return c.text.slice(indexOfByte(c.text, item.expr[0][2]), indexOfByte(c.text, item.expr[1][2]));
        }
      } else {
        const found = find(item.body, `${prefix}block ${item.block}/`);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  return find(c.ours.body, "");
}

const EVAL_KINDS = new Set(["value", "eval-outcome", "eval-error"]);

/** A number literal that a 64-bit double cannot hold (it overflows to infinity). */
const hasHugeLiteral = (s: string): boolean =>
  [...s.matchAll(/(?<![\w.])[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/g)].some(
    (m) => !Number.isFinite(Number(m[0])),
  );

/** Values equal up to the rounding of IEEE doubles (numbers, and numbers inside strings). */
function closeEnough(a: unknown, b: unknown): boolean {
  const near = (x: number, y: number) =>
    x === y || Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y));
  if (typeof a === "number" && typeof b === "number") return near(a, b);
  if (typeof a === "string" && typeof b === "string") {
    if (a === b) return true;
    const na = a.split(/(-?[0-9]+(?:\.[0-9]+)?)/);
    const nb = b.split(/(-?[0-9]+(?:\.[0-9]+)?)/);
    return (
      na.length === nb.length &&
      na.every((x, i) => (i % 2 === 1 ? near(Number(x), Number(nb[i])) : x === nb[i]))
    );
  }
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => closeEnough(x, b[i]));
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return (
      ka.join("\0") === kb.join("\0") &&
      ka.every((k) => closeEnough((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return a === b;
}

/** The same structure and strings, whatever the numbers (and numbers inside strings). */
function sameShape(a: unknown, b: unknown): boolean {
  if (typeof a === "number" && typeof b === "number") return true;
  if (typeof a === "string" && typeof b === "string") {
    const strip = (s: string) => s.replace(/-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?/g, "#");
    return strip(a) === strip(b);
  }
  if (Array.isArray(a))
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameShape(x, b[i]));
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return (
      ka.join("\0") === kb.join("\0") &&
      ka.every((k) => sameShape((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
    );
  }
  return a === b;
}

/** The attribute's value evaluated with `&&`/`||` as hcl/v2 2.14.1 does (no short-circuit). */
function strictValue(c: Case): { value?: unknown; failed: boolean } | undefined {
  const path = c.disagreement.path;
  const { file } = parseFile(c.input.bytes, "input.hcl");
  const ctx = {
    variables: c.input.variables as Record<string, never>,
    functions: referenceFunctions(c.input.env),
    strictLogicalOperators: true,
  };
  const walk = (
    items: typeof file.body.items,
    prefix: string,
  ): { value?: unknown; failed: boolean } | undefined => {
    for (const item of items) {
      if (item.kind === "Attribute") {
        if (`${prefix}attr ${item.name}` === path) {
          const r = evaluate(item.expr, ctx);
          return { value: r.value, failed: r.value === undefined };
        }
      } else {
        const found = walk(item.body.items, `${prefix}block ${item.type}/`);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  return walk(file.body.items, "");
}

const refFirstError = (c: Case) =>
  c.ref.diags.filter((d) => d.sev === "error").sort((a, b) => a.from[2] - b.from[2])[0];
const ourFirstError = (c: Case) =>
  c.ours.diags.filter((d) => d.sev === "error").sort((a, b) => a.from[2] - b.from[2])[0];

export const ALLOWLIST: readonly AllowlistEntry[] = [
  {
    id: "namespaced-functions",
    kind: "version-skew",
    reason:
      'Function names with a namespace ("ns::name(...)") exist in hcl/v2 since v2.20.0 (hashicorp/hcl#639); 2.14.1 reads "::" as two colons and reports a syntax error there. packages/hcl parses them, as current hcl/v2 does.',
    matches: (c) => {
      if (c.disagreement.kind !== "acceptance" && c.disagreement.kind !== "first-error") return false;
      // In 2.14.1 every "::" is a syntax error, and what it reports after one depends on its recovery.
      const colons = c.text.indexOf("::");
      if (colons < 0) return false;
      const at = byteOfIndex(c.text, colons);
      const r = refFirstError(c);
      const o = ourFirstError(c);
      // Ours: accepted, or an error from the "::" on, or the report of a bracket left open at
      // the end of the file, which 2.14.1 no longer makes once it is recovering from the "::".
      const unclosedAtEnd = o !== undefined && (o.code === "unclosed-block" || o.code === "unclosed-bracket");
      return r !== undefined && r.to[2] >= at && (o === undefined || o.from[2] >= at || unclosedAtEnd);
    },
  },
  {
    id: "logical-short-circuit",
    kind: "version-skew",
    reason:
      'hcl/v2 2.14.1 evaluates both operands of "&&" and "||" and reports the errors of both. Since hashicorp/hcl#713 and #719 (December 2024, released after v2.23.0) an operand that decides the result alone (false for "&&", true for "||") makes the other operand\'s errors irrelevant, on either side. packages/hcl follows the newer rule; evaluated without it (the strictLogicalOperators option) the attribute agrees with 2.14.1.',
    matches: (c) => {
      if (c.disagreement.kind !== "eval-outcome" && c.disagreement.kind !== "eval-error") return false;
      const strict = strictValue(c);
      const attr = attributeText(c) ?? "";
      return strict?.failed === true && /&&|\|\|/.test(attr);
    },
  },
  {
    id: "ieee-doubles",
    kind: "deviation",
    reason:
      "Numbers are IEEE-754 doubles in packages/hcl, arbitrary-precision in hcl/v2: results of arithmetic on fractions can differ in the last digits (0.1 + 0.2), also once printed into a string, and a remainder by a fraction by a whole step (9 % 0.1).",
    matches: (c) => {
      if (c.disagreement.kind !== "value") return false;
      const ref = JSON.parse(c.disagreement.reference);
      const mine = JSON.parse(c.disagreement.ours);
      if (closeEnough(ref, mine)) return true;
      // A remainder by a fraction (9 % 0.1) can differ by a whole step.
      const attr = attributeText(c) ?? "";
      return /[0-9]\.[0-9]|[0-9][eE]-/.test(attr) && /%/.test(attr) && sameShape(ref, mine);
    },
  },
  {
    id: "numbers-beyond-doubles",
    kind: "deviation",
    reason:
      "A number beyond the range of a double (the literal 1e400, or a result such as 1e308 * 10) is a number-out-of-range error in packages/hcl; hcl/v2 holds it exactly, so expressions using it evaluate (or fail) differently.",
    matches: (c) =>
      EVAL_KINDS.has(c.disagreement.kind) &&
      (hasHugeLiteral(attributeText(c) ?? "") || c.disagreement.ours.includes("(number-out-of-range)")),
  },
  {
    id: "division-by-zero",
    kind: "deviation",
    reason:
      'Dividing by zero is an error in packages/hcl. hcl/v2 (go-cty) yields an infinity for "/" and the left operand for "%"; a Value has no infinity, and a silent x % 0 == x hides mistakes.',
    matches: (c) =>
      c.disagreement.kind === "eval-outcome" && c.disagreement.ours.includes("(divide-by-zero)"),
  },
  {
    id: "unterminated-comment",
    kind: "deviation",
    reason:
      'An unclosed "/*" is reported as an unterminated comment, where it starts. hcl/v2 scans it as the operators "/" and "*" and reports only what the parser then trips on, at or after the "/*".',
    matches: (c) => {
      if (c.disagreement.kind !== "first-error") return false;
      const r = refFirstError(c);
      const o = ourFirstError(c);
      return o?.code === "unterminated-comment" && r !== undefined && r.from[2] >= o.from[2];
    },
  },
  {
    id: "nesting-limit",
    kind: "deviation",
    reason:
      "Expressions and blocks nest at most 200 levels deep in packages/hcl (too-deep), so that no input can overflow the stack; hcl/v2 has no limit.",
    matches: (c) => ourFirstError(c)?.code === "too-deep",
  },
];

export function explain(c: Case): AllowlistEntry | undefined {
  return ALLOWLIST.find((e) => e.matches(c));
}
