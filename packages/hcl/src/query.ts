// Helpers for reading bodies and inspecting unevaluated syntax, for layers
// that decode configuration on top of this package.

import type { Attribute, Block, Body, Expression } from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import type { Range } from "./source.ts";

/** The attributes of a body, in source order. */
export function attributes(body: Body): Attribute[] {
  return body.items.filter((i): i is Attribute => i.kind === "Attribute");
}

/** The blocks of a body in source order, optionally only those of one type. */
export function blocks(body: Body, type?: string): Block[] {
  return body.items.filter((i): i is Block => i.kind === "Block" && (type === undefined || i.type === type));
}

/** The attribute named `name`, with its unevaluated expression. */
export function getAttribute(body: Body, name: string): Attribute | undefined {
  return body.items.find((i): i is Attribute => i.kind === "Attribute" && i.name === name);
}

/**
 * The text of a quoted string made only of literal text (`"abc"`, `""`), or
 * undefined for anything else: interpolations, directives, heredocs, or any
 * other kind of expression. Parentheses are not looked through.
 */
export function literalString(expr: Expression): string | undefined {
  if (expr.kind !== "Template" || expr.heredoc !== undefined) return undefined;
  let out = "";
  for (const part of expr.parts) {
    if (part.kind !== "TemplateLiteral") return undefined;
    out += part.value;
  }
  return out;
}

export interface AttributeSchema {
  name: string;
  required?: boolean;
}

export interface BlockSchema {
  type: string;
  /** Names of the labels the block must have, e.g. `["name"]` for `provider "x" {}`. */
  labels?: string[];
}

export interface BodySchema {
  attributes?: AttributeSchema[];
  blocks?: BlockSchema[];
}

export interface BodyContent {
  /** Attributes the schema declares and the body sets, by name. */
  attributes: Map<string, Attribute>;
  /** Blocks of declared types with the right number of labels, in source order. */
  blocks: Block[];
  diagnostics: Diagnostic[];
}

/**
 * Checks a body against a closed schema: unknown attributes and block types,
 * missing required attributes and wrong label counts are errors.
 */
export function bodyContent(body: Body, schema: BodySchema): BodyContent {
  const attrSchemas = new Map((schema.attributes ?? []).map((a) => [a.name, a]));
  const blockSchemas = new Map((schema.blocks ?? []).map((b) => [b.type, b]));
  const content: BodyContent = { attributes: new Map(), blocks: [], diagnostics: [] };
  const diag = (code: string, summary: string, detail: string, range: Range) =>
    content.diagnostics.push(errorDiag(code, summary, detail, range));

  for (const item of body.items) {
    if (item.kind === "Attribute") {
      if (attrSchemas.has(item.name)) {
        content.attributes.set(item.name, item);
        continue;
      }
      const hint = blockSchemas.has(item.name)
        ? ` "${item.name}" is a block type: write "${item.name} { ... }" without "=".`
        : suggestion(item.name, [...attrSchemas.keys()]);
      diag(
        "unsupported-argument",
        "Unsupported argument",
        `An argument named "${item.name}" is not expected here.${hint}`,
        item.nameRange,
      );
      continue;
    }
    const bs = blockSchemas.get(item.type);
    if (bs === undefined) {
      const hint = attrSchemas.has(item.type)
        ? ` "${item.type}" is an argument: write "${item.type} = ...".`
        : suggestion(item.type, [...blockSchemas.keys()]);
      diag(
        "unsupported-block-type",
        "Unsupported block type",
        `Blocks of type "${item.type}" are not expected here.${hint}`,
        item.typeRange,
      );
      continue;
    }
    const want = bs.labels ?? [];
    if (item.labels.length < want.length) {
      const missing = want[item.labels.length]!;
      diag(
        "missing-block-label",
        `Missing ${missing} for ${item.type}`,
        `A "${item.type}" block needs ${want.length} label(s): ${want.join(", ")}.`,
        item.openBraceRange,
      );
      continue;
    }
    if (item.labels.length > want.length) {
      const extra = item.labels[want.length]!;
      diag(
        "extraneous-block-label",
        `Extraneous label for ${item.type}`,
        want.length === 0
          ? `A "${item.type}" block takes no labels.`
          : `A "${item.type}" block takes ${want.length} label(s): ${want.join(", ")}.`,
        extra.range,
      );
      continue;
    }
    content.blocks.push(item);
  }

  for (const a of schema.attributes ?? []) {
    if (a.required === true && !content.attributes.has(a.name)) {
      const at = body.range.start;
      diag(
        "missing-argument",
        "Missing required argument",
        `The argument "${a.name}" is required, but it is not set.`,
        {
          filename: body.range.filename,
          start: at,
          end: at,
        },
      );
    }
  }
  return content;
}

/** ` Did you mean "x"?` for a close enough name, else "". */
function suggestion(name: string, candidates: string[]): string {
  let best: string | undefined;
  let bestDistance = 3;
  for (const c of candidates) {
    const d = editDistance(name, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best === undefined ? "" : ` Did you mean "${best}"?`;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
