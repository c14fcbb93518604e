// Template assembly. The parser reads a template as a flat sequence of items
// (literal text, interpolations, and directive markers such as `%{ if x }`);
// this module applies `<<-` de-indentation and `~` strip markers to that flat
// sequence, then nests the directives into TemplateIf / TemplateFor parts.

import type { Expression, TemplateLiteral, TemplatePart } from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
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

const LEADING_SPACE = /^\s*/u;

/**
 * `<<-` heredocs: removes from every line the smallest indentation (counted
 * in grapheme clusters) found on any line. Lines that are only whitespace do
 * not count; a line starting with an interpolation or directive counts as
 * indentation zero.
 */
export function dedentHeredoc(items: FlatItem[]): void {
  let smallest = Number.POSITIVE_INFINITY;
  const toTrim: Array<FlatItem & { kind: "lit" }> = [];
  let atLineStart = true;
  for (const item of items) {
    if (atLineStart) {
      if (item.kind === "lit") {
        const indent = LEADING_SPACE.exec(item.value)![0];
        const blank = indent.length === item.value.length && item.value.endsWith("\n");
        if (!blank) {
          smallest = Math.min(smallest, graphemes(indent).length);
          toTrim.push(item);
        }
      } else {
        smallest = 0;
      }
    }
    atLineStart = item.kind === "lit" && item.value.endsWith("\n");
  }
  if (smallest === 0 || smallest === Number.POSITIVE_INFINITY) return;
  for (const item of toTrim) {
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
 * Merges runs of adjacent literals (a heredoc yields one per line) into one,
 * so that a strip marker removes all the whitespace next to it, across lines.
 */
export function mergeLiterals(items: FlatItem[]): FlatItem[] {
  const out: FlatItem[] = [];
  for (const item of items) {
    const prev = out[out.length - 1];
    if (item.kind === "lit" && prev?.kind === "lit") {
      out[out.length - 1] = {
        kind: "lit",
        value: prev.value + item.value,
        range: span(prev.range, item.range),
      };
    } else {
      out.push(item);
    }
  }
  return out;
}

/** Applies `~` strip markers to the literal text next to them. */
export function applyStripMarkers(items: FlatItem[]): void {
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    if (item.kind === "lit") continue;
    const before = items[i - 1];
    if (item.stripLeft && before?.kind === "lit") before.value = before.value.trimEnd();
    const after = items[i + 1];
    if (item.stripRight && after?.kind === "lit") after.value = after.value.trimStart();
  }
}

/** Nests directives into parts; reports unbalanced `else`/`endif`/`endfor`. */
export function nestTemplate(items: FlatItem[], diagnostics: Diagnostic[]): TemplatePart[] {
  let pos = 0;

  // Reads parts until one of `stops` (or the end); returns the stopping directive.
  const parts = (stops: ReadonlyArray<Directive["keyword"]>): [TemplatePart[], Directive | undefined] => {
    const out: TemplatePart[] = [];
    while (pos < items.length) {
      const item = items[pos++]!;
      if (item.kind === "lit") {
        if (item.value !== "") {
          out.push({
            kind: "TemplateLiteral",
            value: item.value.normalize("NFC"),
            range: item.range,
          } satisfies TemplateLiteral);
        }
      } else if (item.kind === "interp") {
        out.push({
          kind: "TemplateInterpolation",
          expr: item.expr,
          stripLeft: item.stripLeft,
          stripRight: item.stripRight,
          range: item.range,
        });
      } else if (stops.includes(item.keyword)) {
        return [out, item];
      } else if (item.keyword === "if") {
        const [then, end] = parts(["else", "endif"]);
        let otherwise: TemplatePart[] | undefined;
        let last = end;
        if (end?.keyword === "else") {
          const [elseParts, endif] = parts(["endif"]);
          otherwise = elseParts;
          last = endif;
        }
        if (last === undefined) {
          diagnostics.push(unclosed(item, "endif"));
          return [out, undefined];
        }
        out.push({
          kind: "TemplateIf",
          condition: item.condition!,
          then,
          ...(otherwise === undefined ? {} : { else: otherwise }),
          range: span(item.range, last.range),
        });
      } else if (item.keyword === "for") {
        const [body, end] = parts(["endfor"]);
        if (end === undefined) {
          diagnostics.push(unclosed(item, "endfor"));
          return [out, undefined];
        }
        out.push({
          kind: "TemplateFor",
          ...(item.keyVar === undefined ? {} : { keyVar: item.keyVar }),
          valueVar: item.valueVar!,
          collection: item.collection!,
          body,
          range: span(item.range, end.range),
        });
      } else {
        diagnostics.push(
          errorDiag(
            "unexpected-directive",
            "Unexpected template directive",
            `There is no open ${item.keyword === "endfor" ? '"for"' : '"if"'} directive for this "${item.keyword}" to belong to.`,
            item.range,
          ),
        );
      }
    }
    return [out, undefined];
  };

  return parts([])[0];
}

function unclosed(open: Directive, closer: string): Diagnostic {
  return errorDiag(
    "unclosed-directive",
    "Unclosed template directive",
    `This "${open.keyword}" directive has no matching "%{ ${closer} }".`,
    open.range,
  );
}

function span(a: Range, b: Range): Range {
  return { filename: a.filename, start: a.start, end: b.end };
}
