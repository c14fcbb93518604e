// Shared test helpers: compact ranges, AST summaries, body evaluation.

import {
  type Body,
  type Diagnostic,
  type EvalContext,
  envFunction,
  evaluate,
  FunctionError,
  type HclFunction,
  type Range,
  type Value,
} from "../src/index.ts";

/** "line:column:byte-line:column:byte" */
export function rangeText(r: Range): string {
  return `${r.start.line}:${r.start.column}:${r.start.byte}-${r.end.line}:${r.end.column}:${r.end.byte}`;
}

function isRange(v: unknown): v is Range {
  return typeof v === "object" && v !== null && "filename" in v && "start" in v && "end" in v;
}

/** A deep copy of an AST with every Range replaced by its `rangeText`. */
export function summarize(node: unknown): unknown {
  if (isRange(node)) return rangeText(node);
  if (Array.isArray(node)) return node.map(summarize);
  if (typeof node === "object" && node !== null) {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, summarize(v)]));
  }
  return node;
}

/** Visits every AST node (objects with a `kind`) and every Range under `node`. */
export function walk(
  node: unknown,
  onNode: (n: { kind: string; range: Range }) => void,
  onRange: (r: Range) => void,
): void {
  if (isRange(node)) {
    onRange(node);
    return;
  }
  if (Array.isArray(node)) {
    for (const x of node) walk(x, onNode, onRange);
    return;
  }
  if (typeof node === "object" && node !== null) {
    if ("kind" in node) onNode(node as { kind: string; range: Range });
    for (const v of Object.values(node)) walk(v, onNode, onRange);
  }
}

export interface DiagSummary {
  code: string;
  summary: string;
  at: string;
}

export function diagSummary(d: Diagnostic): DiagSummary {
  return { code: d.code, summary: d.summary, at: rangeText(d.subject) };
}

/** Functions the fixtures may call, besides `env`. */
export const testFunctions: Record<string, HclFunction> = {
  upper: (args) => {
    if (typeof args[0] !== "string")
      throw new FunctionError({ summary: "Invalid argument", detail: "upper needs a string.", argIndex: 0 });
    return args[0].toUpperCase();
  },
  join: (args) => {
    const [sep, list] = args;
    if (typeof sep !== "string" || !Array.isArray(list)) {
      throw new FunctionError({ summary: "Invalid arguments", detail: "join(separator, list)." });
    }
    return list.map(String).join(sep);
  },
  sum: (args) =>
    args.reduce<number>((acc, v, i) => {
      if (typeof v !== "number")
        throw new FunctionError({ summary: "Invalid argument", detail: "sum adds numbers.", argIndex: i });
      return acc + v;
    }, 0),
  "ns::twice": (args) => (args[0] as number) * 2,
};

export function fixtureContext(context: {
  variables?: Record<string, Value>;
  env?: Record<string, string>;
  functions?: string[];
}): EvalContext {
  const all: Record<string, HclFunction> = { ...testFunctions, env: envFunction(context.env ?? {}) };
  const functions =
    context.functions === undefined
      ? all
      : Object.fromEntries(context.functions.map((name) => [name, all[name]!]));
  return { variables: context.variables ?? {}, functions };
}

/**
 * Evaluates a body into a plain value for comparisons: attributes by name,
 * blocks under "type label..." as a list of their bodies. Attributes that
 * fail are left out; their diagnostics are appended to `diagnostics`.
 */
export function bodyValue(body: Body, ctx: EvalContext, diagnostics: Diagnostic[]): Record<string, Value> {
  const out: Record<string, Value> = {};
  for (const item of body.items) {
    if (item.kind === "Attribute") {
      const r = evaluate(item.expr, ctx);
      diagnostics.push(...r.diagnostics);
      if (r.value !== undefined) out[item.name] = r.value;
    } else {
      const key = [item.type, ...item.labels.map((l) => l.value)].join(" ");
      const list = (out[key] ?? []) as Value[];
      list.push(bodyValue(item.body, ctx, diagnostics));
      out[key] = list;
    }
  }
  return out;
}
