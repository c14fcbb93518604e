// Compares the reference's canonical answer with ours and lists every
// disagreement. What is compared:
//   - acceptance: whether parsing reported an error;
//   - for rejected inputs, the first error by position: its class and its range;
//   - for accepted inputs, the body: items in source order with their names,
//     block types and labels, and the ranges of names, expressions, labels and braces;
//   - each attribute's evaluation: the same value, or both failing with our
//     (single) error among the reference's errors, same class and range.
// Reference summaries and our codes are mapped onto shared classes (CLASSES)
// because the wording of messages is free; a summary or code missing from the
// table is its own class, so it can never match by accident.

import type { Value } from "@pluggableharness/hcl";
import type { OurDiag, OurItem, OurResult } from "./ours.ts";
import type { AttrItem, RangeTuple, RefDiag, RefItem, RefResult } from "./reference.ts";

export type DisagreementKind =
  | "reference-panic"
  | "acceptance"
  | "first-error"
  | "body-shape"
  | "labels"
  | "ranges"
  | "value"
  | "eval-outcome"
  | "eval-error";

export interface Disagreement {
  kind: DisagreementKind;
  /** Where in the body, e.g. `block.x/attr a`. */
  path: string;
  reference: string;
  ours: string;
}

/** Shared diagnostic classes: reference summaries and our codes that mean the same thing. */
const CLASSES: Record<string, { summaries: string[]; codes: string[] }> = {
  "invalid-character": {
    summaries: ["Invalid character", "Unsupported operator"],
    codes: ["invalid-character"],
  },
  "invalid-utf8": { summaries: ["Invalid character encoding"], codes: ["invalid-utf8"] },
  "body-item": {
    summaries: ["Argument or block definition required", "Invalid argument name"],
    codes: ["argument-or-block-required"],
  },
  "attribute-redefined": { summaries: ["Attribute redefined"], codes: ["attribute-redefined"] },
  "missing-newline": {
    summaries: [
      "Missing newline after argument",
      "Missing newline after block definition",
      "Unexpected comma after argument",
    ],
    codes: ["missing-newline"],
  },
  "single-line-block": {
    summaries: ["Invalid single-argument block definition", "Argument definition required"],
    codes: ["invalid-single-line-block"],
  },
  "block-definition": { summaries: ["Invalid block definition"], codes: ["invalid-block-definition"] },
  "block-label": { summaries: ["Invalid string literal"], codes: ["invalid-block-label"] },
  unclosed: {
    summaries: [
      "Unclosed configuration block",
      "Unclosed configuration body",
      "Unterminated tuple constructor expression",
      "Unterminated object constructor expression",
      "Unterminated function call",
      "Unclosed index brackets",
      "Unclosed template interpolation sequence",
    ],
    codes: ["unclosed-block", "unclosed-bracket"],
  },
  "unterminated-string": {
    summaries: ["Unterminated string literal", "Unterminated template string"],
    codes: ["unterminated-string", "unterminated-heredoc", "unterminated-template"],
  },
  "multiline-string": { summaries: ["Invalid multi-line string"], codes: ["multiline-string"] },
  "invalid-escape": { summaries: ["Invalid escape sequence"], codes: ["invalid-escape"] },
  expression: { summaries: ["Invalid expression", "Missing expression"], codes: ["invalid-expression"] },
  "for-expression": { summaries: ["Invalid 'for' expression"], codes: ["invalid-for-expression"] },
  "for-directive": { summaries: ["Invalid 'for' directive"], codes: ["invalid-for-directive"] },
  "template-directive": {
    summaries: [
      "Invalid template directive",
      "Invalid template control keyword",
      "Unexpected end of template",
      "Unexpected else directive",
      "Unexpected endif directive",
      "Unexpected endfor directive",
    ],
    codes: ["invalid-directive", "unexpected-directive", "unclosed-directive"],
  },
  "sequence-end": {
    summaries: [
      "Extra characters after interpolation expression",
      "Extra characters in if marker",
      "Extra characters in else marker",
      "Extra characters in endif marker",
      "Extra characters in for marker",
      "Extra characters in endfor marker",
    ],
    codes: ["missing-template-close"],
  },
  "attribute-value": { summaries: ["Missing attribute value"], codes: ["missing-attribute-value"] },
  "number-literal": { summaries: ["Invalid number literal"], codes: ["invalid-number"] },
  "item-separator": { summaries: ["Missing item separator"], codes: ["missing-item-separator"] },
  "attribute-separator": {
    summaries: ["Missing attribute separator"],
    codes: ["missing-attribute-separator"],
  },
  "argument-separator": { summaries: ["Missing argument separator"], codes: ["missing-argument-separator"] },
  "key-value-separator": {
    summaries: ["Missing key/value separator"],
    codes: ["missing-key-value-separator"],
  },
  "attribute-name": {
    summaries: ["Invalid attribute name", "Attribute name required"],
    codes: ["invalid-attribute-name"],
  },
  "legacy-index": { summaries: ["Invalid legacy index syntax"], codes: ["invalid-legacy-index"] },
  "nested-splat": { summaries: ["Nested splat expression not allowed"], codes: ["nested-splat"] },
  parenthesis: {
    summaries: ["Unbalanced parentheses", "Missing closing parenthesis"],
    codes: ["missing-paren"],
  },
  "index-bracket": {
    summaries: ["Missing close bracket on index", "Missing close bracket on splat index"],
    codes: ["missing-bracket", "invalid-splat"],
  },
  "conditional-colon": { summaries: ["Missing false expression in conditional"], codes: ["missing-colon"] },
  // Evaluation.
  "unknown-variable": {
    summaries: ["Unknown variable", "Variables not allowed"],
    codes: ["unknown-variable"],
  },
  "unknown-function": {
    summaries: ["Call to unknown function", "Function calls not allowed"],
    codes: ["unknown-function"],
  },
  "unsupported-attribute": { summaries: ["Unsupported attribute"], codes: ["unsupported-attribute"] },
  "missing-map-element": { summaries: ["Missing map element"], codes: ["missing-map-element"] },
  "null-splat": { summaries: ["Splat of null value"], codes: ["null-splat"] },
  "operation-failed": { summaries: ["Operation failed"], codes: ["operation-failed"] },
  "null-access": {
    summaries: ["Attempt to get attribute from null value", "Attempt to index null value"],
    codes: ["null-access"],
  },
  "invalid-index": { summaries: ["Invalid index"], codes: ["invalid-index"] },
  "function-argument": { summaries: ["Invalid function argument"], codes: ["invalid-argument", "env-unset"] },
  "function-call": { summaries: ["Error in function call"], codes: ["function-error"] },
  operand: { summaries: ["Invalid operand"], codes: ["invalid-operand"] },
  condition: {
    summaries: ["Incorrect condition type", "Null condition", "Invalid 'for' condition", "Condition is null"],
    codes: ["invalid-condition"],
  },
  "interpolation-value": {
    summaries: ["Invalid template interpolation value"],
    codes: ["invalid-interpolation"],
  },
  "object-key": {
    summaries: ["Incorrect key type", "Null value as key", "Invalid object key", "Ambiguous attribute key"],
    codes: ["invalid-key"],
  },
  "duplicate-key": { summaries: ["Duplicate object key"], codes: ["duplicate-key"] },
  iteration: {
    summaries: ["Iteration over non-iterable value", "Iteration over null value"],
    codes: ["not-iterable", "null-iteration"],
  },
  expansion: { summaries: ["Invalid expanding argument value"], codes: ["invalid-expansion"] },
  "conditional-types": {
    summaries: ["Inconsistent conditional result types"],
    codes: ["inconsistent-conditional-types"],
  },
};

const BY_SUMMARY = new Map<string, string>();
const BY_CODE = new Map<string, string>();
for (const [cls, { summaries, codes }] of Object.entries(CLASSES)) {
  for (const s of summaries) BY_SUMMARY.set(s, cls);
  for (const c of codes) BY_CODE.set(c, cls);
}

export const refClass = (d: RefDiag): string => BY_SUMMARY.get(d.summary) ?? `reference:${d.summary}`;
export const ourClass = (d: OurDiag): string => BY_CODE.get(d.code) ?? `ours:${d.code}`;

const json = (x: unknown): string => JSON.stringify(x);
const rangeText = (r: RangeTuple): string => `${r[0].join(":")}-${r[1].join(":")}`;
const sameRange = (a: RangeTuple, b: RangeTuple): boolean => json(a) === json(b);
const refDiagText = (d: RefDiag): string => `${refClass(d)} "${d.summary}" at ${rangeText([d.from, d.to])}`;
const ourDiagText = (d: OurDiag): string => `${ourClass(d)} (${d.code}) at ${rangeText([d.from, d.to])}`;

const errors = <D extends { sev: string; from: readonly number[] }>(ds: readonly D[]): D[] =>
  ds.filter((d) => d.sev === "error").sort((a, b) => a.from[2] - b.from[2]);

/** The reference's value rendering against ours: numbers by value, objects by key set. */
export function sameValue(ref: unknown, ours: Value): boolean {
  if (ref === null || ours === null) return ref === ours;
  if (typeof ref === "number") return typeof ours === "number" && ref === ours;
  if (Array.isArray(ref)) {
    return Array.isArray(ours) && ref.length === ours.length && ref.every((x, i) => sameValue(x, ours[i]!));
  }
  if (typeof ref === "object") {
    if (typeof ours !== "object" || Array.isArray(ours)) return false;
    const rk = Object.keys(ref).sort();
    const ok = Object.keys(ours).sort();
    return json(rk) === json(ok) && rk.every((k) => sameValue((ref as Record<string, unknown>)[k], ours[k]!));
  }
  return ref === ours;
}

export function compareResults(ref: RefResult, ours: OurResult): Disagreement[] {
  if (ref.panic !== undefined) return [{ kind: "reference-panic", path: "", reference: ref.panic, ours: "" }];
  const refErrors = errors(ref.diags);
  const ourErrors = errors(ours.diags);
  if (refErrors.length > 0 !== ourErrors.length > 0) {
    return [
      {
        kind: "acceptance",
        path: "",
        reference: refErrors.length > 0 ? refDiagText(refErrors[0]!) : "accepted",
        ours: ourErrors.length > 0 ? ourDiagText(ourErrors[0]!) : "accepted",
      },
    ];
  }
  if (refErrors.length > 0) {
    const r = refErrors[0]!;
    const o = ourErrors[0]!;
    if (refClass(r) !== ourClass(o) || !sameRange([r.from, r.to], [o.from, o.to])) {
      return [{ kind: "first-error", path: "", reference: refDiagText(r), ours: ourDiagText(o) }];
    }
    return [];
  }
  const out: Disagreement[] = [];
  compareBody(ref.body ?? [], ours.body, "", out);
  return out;
}

function compareBody(
  ref: readonly RefItem[],
  ours: readonly OurItem[],
  path: string,
  out: Disagreement[],
): void {
  const describe = (items: readonly (RefItem | OurItem)[]) =>
    items.map((i) => ("attr" in i ? `attr ${i.attr}` : `block ${i.block}`)).join(", ");
  if (ref.length !== ours.length || ref.some((r, i) => "attr" in r !== "attr" in ours[i]!)) {
    out.push({ kind: "body-shape", path, reference: describe(ref), ours: describe(ours) });
    return;
  }
  ref.forEach((r, i) => {
    const o = ours[i]!;
    if ("attr" in r && "attr" in o) {
      const at = `${path}attr ${r.attr}`;
      if (r.attr !== o.attr) {
        out.push({ kind: "body-shape", path: at, reference: r.attr, ours: o.attr });
        return;
      }
      if (!sameRange(r.name, o.name) || !sameRange(r.expr, o.expr)) {
        out.push({
          kind: "ranges",
          path: at,
          reference: `name ${rangeText(r.name)}, expression ${rangeText(r.expr)}`,
          ours: `name ${rangeText(o.name)}, expression ${rangeText(o.expr)}`,
        });
      }
      compareEval(r, o, at, out);
    } else if ("block" in r && "block" in o) {
      const at = `${path}block ${r.block}`;
      if (r.block !== o.block) {
        out.push({ kind: "body-shape", path: at, reference: r.block, ours: o.block });
        return;
      }
      if (json(r.labels) !== json(o.labels)) {
        out.push({ kind: "labels", path: at, reference: json(r.labels), ours: json(o.labels) });
      }
      const ranges = (b: {
        type: RangeTuple;
        labelRanges: RangeTuple[];
        open: RangeTuple;
        close: RangeTuple;
      }) => [b.type, ...b.labelRanges, b.open, b.close].map(rangeText).join(" ");
      if (ranges(r) !== ranges(o))
        out.push({ kind: "ranges", path: at, reference: ranges(r), ours: ranges(o) });
      compareBody(r.body, o.body, `${at}/`, out);
    }
  });
}

function compareEval(
  r: AttrItem<RefDiag, unknown>,
  o: AttrItem<OurDiag, Value>,
  path: string,
  out: Disagreement[],
): void {
  const refFailed = r.diags !== undefined;
  const ourFailed = o.diags !== undefined;
  if (!refFailed && !ourFailed) {
    if (!sameValue(r.value, o.value!))
      out.push({ kind: "value", path, reference: json(r.value), ours: json(o.value) });
    return;
  }
  if (refFailed !== ourFailed) {
    out.push({
      kind: "eval-outcome",
      path,
      reference: refFailed ? errors(r.diags!).map(refDiagText).join("; ") : json(r.value),
      ours: ourFailed ? errors(o.diags!).map(ourDiagText).join("; ") : json(o.value),
    });
    return;
  }
  const ourError = errors(o.diags!)[0]!;
  const found = errors(r.diags!).some(
    (d) => refClass(d) === ourClass(ourError) && sameRange([d.from, d.to], [ourError.from, ourError.to]),
  );
  if (!found) {
    out.push({
      kind: "eval-error",
      path,
      reference: errors(r.diags!).map(refDiagText).join("; "),
      ours: ourDiagText(ourError),
    });
  }
}
