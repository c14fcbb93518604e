// packages/hcl's answer to an input, in the reference program's canonical form.

import {
  type Body,
  type Diagnostic,
  evaluate,
  type HclFunction,
  parseFile,
  type Range,
  type Value,
} from "@pluggableharness/hcl";
import { referenceFunctions } from "./functions.ts";
import type { AttrItem, BlockItem, RangeTuple, ReferenceInput, Triple } from "./reference.ts";

export interface OurDiag {
  sev: "error" | "warning";
  code: string;
  summary: string;
  from: Triple;
  to: Triple;
}

export type OurItem = AttrItem<OurDiag, Value> | BlockItem<OurItem>;

export interface OurResult {
  id: string;
  diags: OurDiag[];
  body: OurItem[];
}

const triple = (p: Range["start"]): Triple => [p.line, p.column, p.byte];
const range = (r: Range): RangeTuple => [triple(r.start), triple(r.end)];

function diag(d: Diagnostic): OurDiag {
  return {
    sev: d.severity,
    code: d.code,
    summary: d.summary,
    from: triple(d.subject.start),
    to: triple(d.subject.end),
  };
}

export function ours(input: ReferenceInput): OurResult {
  const { file, diagnostics } = parseFile(input.bytes, "input.hcl");
  const all = referenceFunctions(input.env);
  const functions: Record<string, HclFunction> =
    input.functions === undefined
      ? all
      : Object.fromEntries(input.functions.filter((n) => n in all).map((n) => [n, all[n]!]));
  const ctx = { variables: input.variables as Record<string, Value>, functions };
  const body = (b: Body): OurItem[] =>
    b.items.map((item): OurItem => {
      if (item.kind === "Attribute") {
        const r = evaluate(item.expr, ctx);
        const base = { attr: item.name, name: range(item.nameRange), expr: range(item.expr.range) };
        return r.value === undefined
          ? { ...base, diags: r.diagnostics.map(diag) }
          : { ...base, value: r.value };
      }
      return {
        block: item.type,
        labels: item.labels.map((l) => l.value),
        type: range(item.typeRange),
        labelRanges: item.labels.map((l) => range(l.range)),
        open: range(item.openBraceRange),
        close: range(item.closeBraceRange),
        body: body(item.body),
      };
    });
  return { id: input.id, diags: diagnostics.map(diag), body: body(file.body) };
}
