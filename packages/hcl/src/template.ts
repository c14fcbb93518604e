// Template assembly, following hcl/v2's template parser. The parser reads a
// template as a flat sequence of items (literal text tokens, interpolations,
// and directive markers such as `%{ if x }`), applying `~` strip markers to
// the neighbouring literal token as it goes; this module applies `<<-`
// de-indentation to that sequence and nests the directives into TemplateIf /
// TemplateFor parts.

import type { Expression, TemplateLiteral, TemplatePart } from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import { GO_SPACE } from "./lexer.ts";
import { graphemes, type Range, utf8Length } from "./source.ts";

export type FlatItem =
  | { kind: "lit"; value: string; range: Range }
  | { kind: "interp"; expr: Expression; stripLeft: boolean; stripRight: boolean; range: Range }
  | {
      kind: "directive";
      keyword: "if" | "else" | "endif" | "for" | "endfor";
      condition?: Expression;
      keyVar?: string;
      valueVar?: string;
      collection?: Expression;
      stripLeft: boolean;
      stripRight: boolean;
      range: Range;
    };

export type Directive = FlatItem & { kind: "directive" };

const LEADING = new RegExp(`^[${GO_SPACE}]*`, "u");
const TRAILING = new RegExp(`[${GO_SPACE}]*$`, "u");

/** `~` strip markers remove the whitespace (as Go's unicode.IsSpace defines it) of the adjacent literal token. */
export const stripMarkers = {
  left: (s: string): string => s.replace(LEADING, ""),
  right: (s: string): string => s.replace(TRAILING, ""),
};

/**
 * `<<-` heredocs: removes from every line the smallest indentation (counted
 * in grapheme clusters) found on any line. Lines that are only whitespace do
 * not count; a line starting with an interpolation or directive counts as
 * indentation zero.
 */
export function flushHeredoc(items: FlatItem[]): void {
  let smallest = Number.POSITIVE_INFINITY;
  const adjust: Array<FlatItem & { kind: "lit" }> = [];
  let atLineStart = true;
  for (const item of items) {
    if (atLineStart) {
      atLineStart = false;
      let spaces = 0;
      if (item.kind === "lit") {
        const indent = LEADING.exec(item.value)![0];
        if (indent.length === item.value.length && item.value.endsWith("\n")) {
          spaces = Number.POSITIVE_INFINITY;
        } else {
          spaces = graphemes(indent).length;
          adjust.push(item);
        }
      }
      smallest = Math.min(smallest, spaces);
    }
    if (item.kind === "lit" && item.value.endsWith("\n")) atLineStart = true;
  }
  if (smallest === 0 || smallest === Number.POSITIVE_INFINITY) return;
  for (const item of adjust) {
    const removed = graphemes(item.value).slice(0, smallest).join("");
    item.value = item.value.slice(removed.length);
    const start = item.range.start;
    item.range = {
      ...item.range,
      start: { line: start.line, column: start.column + smallest, byte: start.byte + utf8Length(removed) },
    };
  }
}

/**
 * Nests directives into parts. Unbalanced directives are reported as hcl/v2
 * does: a missing `endif`/`endfor` at the template's end (`endRange`), a
 * stray `else`/`endif`/`endfor` where it stands.
 */
export function nestTemplate(
  items: readonly FlatItem[],
  endRange: Range,
  diagnostics: Diagnostic[],
): TemplatePart[] {
  let pos = 0;
  const unexpected = (d: Directive, detail: string) =>
    diagnostics.push(errorDiag("unexpected-directive", `Unexpected ${d.keyword} directive`, detail, d.range));
  const unbalanced = (d: Directive, closer: string) =>
    diagnostics.push(
      errorDiag(
        "unclosed-directive",
        "Unexpected end of template",
        `The "${d.keyword}" directive at ${d.range.start.line}:${d.range.start.column} has no matching "%{ ${closer} }".`,
        endRange,
      ),
    );

  /** One part; undefined when a directive problem ended it. */
  const part = (): TemplatePart | undefined => {
    const item = items[pos++]!;
    if (item.kind === "lit") {
      return {
        kind: "TemplateLiteral",
        value: item.value.normalize("NFC"),
        range: item.range,
      } satisfies TemplateLiteral;
    }
    if (item.kind === "interp") {
      return {
        kind: "TemplateInterpolation",
        expr: item.expr,
        stripLeft: item.stripLeft,
        stripRight: item.stripRight,
        range: item.range,
      };
    }
    if (item.keyword === "if") return ifPart(item);
    if (item.keyword === "for") return forPart(item);
    unexpected(item, "There is no open directive for it to belong to.");
    return undefined;
  };

  const ifPart = (open: Directive): TemplatePart | undefined => {
    const then: TemplatePart[] = [];
    let otherwise: TemplatePart[] | undefined;
    for (;;) {
      const next = items[pos];
      if (next === undefined) {
        unbalanced(open, "endif");
        return undefined;
      }
      if (next.kind === "directive" && next.keyword !== "if" && next.keyword !== "for") {
        pos++;
        if (next.keyword === "else" && otherwise === undefined) {
          otherwise = [];
          continue;
        }
        if (next.keyword === "endif") {
          return {
            kind: "TemplateIf",
            condition: open.condition!,
            // biome-ignore lint/suspicious/noThenProperty: the AST names the branch "then" (ast.ts).
            then: nonEmpty(then),
            ...(otherwise === undefined ? {} : { else: nonEmpty(otherwise) }),
            range: span(open.range, next.range),
          };
        }
        unexpected(
          next,
          `Expected "%{ endif }" for the "if" at ${open.range.start.line}:${open.range.start.column}.`,
        );
        return undefined;
      }
      const p = part();
      if (p !== undefined) (otherwise ?? then).push(p);
    }
  };

  const forPart = (open: Directive): TemplatePart | undefined => {
    const body: TemplatePart[] = [];
    for (;;) {
      const next = items[pos];
      if (next === undefined) {
        unbalanced(open, "endfor");
        return undefined;
      }
      if (next.kind === "directive" && next.keyword !== "if" && next.keyword !== "for") {
        pos++;
        if (next.keyword === "endfor") {
          return {
            kind: "TemplateFor",
            ...(open.keyVar === undefined ? {} : { keyVar: open.keyVar }),
            valueVar: open.valueVar!,
            collection: open.collection!,
            body: nonEmpty(body),
            openRange: open.range,
            range: span(open.range, next.range),
          };
        }
        unexpected(
          next,
          next.keyword === "else"
            ? 'A "for" directive has no "else".'
            : `Expected "%{ endfor }" for the "for" at ${open.range.start.line}:${open.range.start.column}.`,
        );
        return undefined;
      }
      const p = part();
      if (p !== undefined) body.push(p);
    }
  };

  const out: TemplatePart[] = [];
  while (pos < items.length) {
    const p = part();
    if (p !== undefined) out.push(p);
  }
  return nonEmpty(out);
}

/** Drops empty literal parts (a `""` template has no parts). */
function nonEmpty(parts: TemplatePart[]): TemplatePart[] {
  return parts.filter((p) => p.kind !== "TemplateLiteral" || p.value !== "");
}

function span(a: Range, b: Range): Range {
  return { filename: a.filename, start: a.start, end: b.end };
}
