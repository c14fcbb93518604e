// Recursive-descent parser for HCL2 native syntax. Its structure follows
// hcl/v2's parser function by function, so that it accepts the same inputs and
// reports each syntax error at the same token (the differential test in
// testing/hcl-reference checks this). Like hcl/v2 it never throws: errors are
// recorded, the parser skips ahead to a plausible restart point, and after the
// first such recovery it stops reporting the errors that recovery tends to
// cause, so a file gets one meaningful syntax error rather than a cascade.
// Unlike hcl/v2, an attribute or block header that had an error is left out of
// the returned body, so callers only ever see items that parsed.

import type {
  Attribute,
  BinaryOp,
  Block,
  BlockLabel,
  Body,
  BodyItem,
  Expression,
  File,
  ObjectItem,
  Template,
  TemplateWrap,
} from "./ast.ts";
import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import { lex, type Token, type TokenKind } from "./lexer.ts";
import { decodeSource, type Range, SourceFile } from "./source.ts";
import { type FlatItem, flushHeredoc, nestTemplate, stripMarkers } from "./template.ts";

export interface ParseResult {
  file: File;
  diagnostics: Diagnostic[];
}

export interface ExpressionParseResult {
  /** Absent when the expression could not be parsed. */
  expr?: Expression;
  diagnostics: Diagnostic[];
}

/**
 * Parses a whole configuration file. `source` may be raw bytes (validated as
 * UTF-8) or an already-decoded string (checked for lone surrogates).
 */
export function parseFile(source: string | Uint8Array, filename: string): ParseResult {
  const decoded = decodeSource(source, filename);
  if ("failure" in decoded) {
    const src = new SourceFile(filename, "");
    const empty: Body = { kind: "Body", items: [], range: src.range(0, 0) };
    return {
      file: { kind: "File", filename, body: empty, range: empty.range },
      diagnostics: [decoded.failure],
    };
  }
  const src = new SourceFile(filename, decoded.text);
  const { tokens, diagnostics } = lex(src);
  const parser = new Parser(src, tokens, diagnostics);
  const items = parser.guard(() => parser.parseBody("eof").items) ?? [];
  const body: Body = { kind: "Body", items, range: src.range(0, src.text.length) };
  return { file: { kind: "File", filename, body, range: body.range }, diagnostics: byPosition(diagnostics) };
}

/** Parses a standalone expression (surrounding newlines allowed). */
export function parseExpression(source: string | Uint8Array, filename: string): ExpressionParseResult {
  const decoded = decodeSource(source, filename);
  if ("failure" in decoded) return { diagnostics: [decoded.failure] };
  const src = new SourceFile(filename, decoded.text);
  const { tokens, diagnostics } = lex(src);
  const parser = new Parser(src, tokens, diagnostics);
  const expr = parser.guard(() => parser.parseStandaloneExpression());
  const sorted = byPosition(diagnostics);
  return expr === undefined || sorted.some((d) => d.severity === "error")
    ? { diagnostics: sorted }
    : { expr, diagnostics: sorted };
}

/** Lexer and parser diagnostics interleaved in source order (the sort is stable). */
function byPosition(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.sort((a, b) => a.subject.start.byte - b.subject.start.byte);
}

/** Thrown (and always caught) when input nests too deeply to parse safely. */
class TooDeep {}

const BINARY_LEVELS: ReadonlyArray<ReadonlyArray<BinaryOp>> = [
  ["||"],
  ["&&"],
  ["==", "!="],
  ["<", ">", "<=", ">="],
  ["+", "-"],
  ["*", "/", "%"],
];

const OPENERS: Partial<Record<TokenKind, TokenKind>> = {
  "{": "}",
  "[": "]",
  "(": ")",
  oquote: "cquote",
  oheredoc: "cheredoc",
  "${": "seqend",
  "%{": "seqend",
};

const INTERP = "$" + "{";

const CLOSERS = new Map<TokenKind, TokenKind>(Object.entries(OPENERS).map(([o, c]) => [c, o as TokenKind]));

/** Deep enough for any real configuration, shallow enough to never overflow the stack. */
const MAX_DEPTH = 200;

// A number literal as go-cty parses one: digits, an optional fraction, an optional exponent.
const NUMBER_LITERAL = /^[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?$/;

class Parser {
  private readonly src: SourceFile;
  private readonly tokens: Token[];
  private readonly diagnostics: Diagnostic[];
  private pos = 0;
  /** Whether newlines are significant in the current context (a stack). */
  private readonly newlineModes: boolean[] = [true];
  private depth = 0;
  /** Set once the parser has skipped input after an error; most later errors are then not reported. */
  private recovery = false;
  /** Errors reported by the parser so far (a sub-parse "had errors" when this grew). */
  private errors = 0;
  /** Problems met so far, reported or not (recovery mode silences some): items with one are dropped. */
  private failures = 0;

  constructor(src: SourceFile, tokens: Token[], diagnostics: Diagnostic[]) {
    this.src = src;
    this.tokens = tokens;
    this.diagnostics = diagnostics;
  }

  /** Runs `f`; nesting too deep (or a stack overflow) becomes a diagnostic and no result. */
  guard<T>(f: () => T): T | undefined {
    try {
      return f();
    } catch (e) {
      if (e instanceof TooDeep || e instanceof RangeError) {
        this.diagnostics.push(
          errorDiag(
            "too-deep",
            "Nesting too deep",
            `Expressions and blocks may nest at most ${MAX_DEPTH} levels deep.`,
            this.range(this.tokens[Math.min(this.pos, this.tokens.length - 1)]!),
          ),
        );
        return undefined;
      }
      throw e;
    }
  }

  // ---- token access -------------------------------------------------------

  private index(): number {
    const significant = this.newlineModes[this.newlineModes.length - 1]!;
    for (let i = this.pos; i < this.tokens.length; i++) {
      if (this.tokens[i]!.kind === "newline" && !significant) continue;
      return i;
    }
    return this.tokens.length - 1;
  }

  private peek(): Token {
    return this.tokens[this.index()]!;
  }

  /** Consumes and returns the next token; at the end it keeps returning `eof`. */
  private read(): Token {
    const i = this.index();
    this.pos = i + 1;
    return this.tokens[i]!;
  }

  /** The range of the last token read. */
  private prevRange(): Range {
    return this.pos === 0
      ? this.range(this.peek())
      : this.range(this.tokens[Math.min(this.pos, this.tokens.length) - 1]!);
  }

  private pushNewlines(significant: boolean): void {
    this.newlineModes.push(significant);
  }

  private popNewlines(): void {
    this.newlineModes.pop();
  }

  private text(tok: Token): string {
    return this.src.text.slice(tok.start, tok.end);
  }

  private range(tok: Token): Range {
    return this.src.range(tok.start, tok.end);
  }

  private between(a: Range, b: Range): Range {
    return { filename: this.src.filename, start: a.start, end: b.end };
  }

  private error(code: string, summary: string, detail: string, subject: Range): void {
    this.diagnostics.push(errorDiag(code, summary, detail, subject));
    this.errors++;
    this.failures++;
  }

  private setRecovery(): void {
    this.recovery = true;
    this.failures++;
  }

  /** Skips to the `end` that balances the current construct (or the end of the file); returns it. */
  private recover(end: TokenKind): Token {
    const start = end === "seqend" ? "${" : CLOSERS.get(end);
    this.setRecovery();
    let nest = 0;
    for (;;) {
      const tok = this.read();
      const kind = end === "seqend" && tok.kind === "%{" ? "${" : tok.kind;
      if (kind === start) nest++;
      else if (kind === end) {
        if (nest < 1) return tok;
        nest--;
      } else if (kind === "eof") return tok;
    }
  }

  /** Skips past the newline that ends the current body item, outside any brackets. */
  private recoverAfterBodyItem(): void {
    this.setRecovery();
    const open: TokenKind[] = [];
    for (;;) {
      const tok = this.read();
      if (tok.kind === "newline") {
        if (open.length === 0) return;
      } else if (tok.kind === "eof") return;
      else if (OPENERS[tok.kind] !== undefined) open.push(tok.kind);
      else if (tok.kind === "seqend") {
        while (open.length > 0 && open[open.length - 1] !== "${" && open[open.length - 1] !== "%{")
          open.pop();
        open.pop();
      } else if (CLOSERS.has(tok.kind)) {
        const opener = CLOSERS.get(tok.kind)!;
        while (open.length > 0 && open[open.length - 1] !== opener) open.pop();
        open.pop();
      }
    }
  }

  private nested<T>(f: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new TooDeep();
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  /** A stand-in for an expression that failed to parse (its item is dropped anyway). */
  private placeholder(range: Range): Expression {
    this.failures++;
    return { kind: "Null", range };
  }

  // ---- structure ---------------------------------------------------------------

  parseStandaloneExpression(): Expression {
    this.pushNewlines(false);
    const expr = this.parseExpression();
    const end = this.peek();
    if (end.kind !== "eof" && !this.recovery) {
      this.error(
        "extra-characters",
        "Extra characters after expression",
        `Expected the end of the expression, but found ${this.describe(end)}.`,
        this.range(end),
      );
    }
    this.popNewlines();
    return expr;
  }

  /** The items of a body up to `end` ("eof", or "}" for a block), consuming `end`. */
  parseBody(end: "eof" | "}"): { items: BodyItem[]; closed: boolean } {
    const items: BodyItem[] = [];
    const seen = new Map<string, Attribute>();
    const startRange = this.prevRange();
    for (;;) {
      const next = this.peek();
      if (next.kind === end) {
        this.read();
        return { items, closed: true };
      }
      if (next.kind === "newline") {
        this.read();
        continue;
      }
      if (next.kind === "ident") {
        const before = this.failures;
        const item = this.nested(() => this.parseBodyItem());
        if (item === undefined) continue;
        if (item.kind === "Attribute") {
          const prev = seen.get(item.name);
          if (prev !== undefined) {
            const p = prev.nameRange.start;
            this.error(
              "attribute-redefined",
              "Attribute redefined",
              `"${item.name}" was already set at ${p.line}:${p.column}. An attribute can be set only once in a body.`,
              item.nameRange,
            );
            continue;
          }
          seen.set(item.name, item);
          if (this.failures > before) continue;
        } else if (!item.ok) continue;
        items.push(item.kind === "Attribute" ? item : item.block);
        continue;
      }
      const bad = this.read();
      if (!this.recovery) {
        if (bad.kind === "oquote") {
          this.error(
            "argument-or-block-required",
            "Invalid argument name",
            "Argument names must not be quoted.",
            this.range(bad),
          );
        } else if (bad.kind === "eof") {
          this.error(
            "unclosed-block",
            end === "}" ? "Unclosed configuration block" : "Unclosed configuration body",
            "There is no closing brace for this block before the end of the file. Check the braces inside it.",
            startRange,
          );
        } else {
          this.error(
            "argument-or-block-required",
            "Argument or block definition required",
            `An attribute ("name = value") or a block ("name { ... }") was expected, but found ${this.describe(bad)}.`,
            this.range(bad),
          );
        }
      }
      this.recover(end);
      return { items, closed: false };
    }
  }

  private parseBodyItem(): Attribute | { kind: "Block"; block: Block; ok: boolean } | undefined {
    const ident = this.read();
    const next = this.peek();
    if (next.kind === "=") return this.finishAttribute(ident, false);
    if (next.kind === "oquote" || next.kind === "{" || next.kind === "ident") return this.finishBlock(ident);
    this.recoverAfterBodyItem();
    this.error(
      "argument-or-block-required",
      "Argument or block definition required",
      `After "${this.text(ident)}", expected "=" to set an attribute or "{" to open a block, but found ${this.describe(next)}.`,
      this.range(ident),
    );
    return undefined;
  }

  private finishAttribute(ident: Token, singleLine: boolean): Attribute {
    this.read(); // "="
    const errorsBefore = this.errors;
    const expr = this.parseExpression();
    if (this.recovery && this.errors > errorsBefore) {
      this.recoverAfterBodyItem();
    } else if (!singleLine) {
      const end = this.peek();
      if (end.kind !== "newline" && end.kind !== "eof") {
        if (!this.recovery) {
          const comma = end.kind === ",";
          this.error(
            "missing-newline",
            comma ? "Unexpected comma after argument" : "Missing newline after argument",
            comma
              ? "Attributes are separated by newlines, not commas. Put each attribute on its own line."
              : `An attribute definition must end with a newline, but found ${this.describe(end)}. Put each attribute on its own line.`,
            this.range(end),
          );
        }
        this.recoverAfterBodyItem();
      } else {
        this.read();
      }
    }
    return {
      kind: "Attribute",
      name: this.text(ident),
      nameRange: this.range(ident),
      expr,
      range: this.between(this.range(ident), expr.range),
    };
  }

  private finishBlock(ident: Token): { kind: "Block"; block: Block; ok: boolean } {
    const labels: BlockLabel[] = [];
    const failuresBefore = this.failures;
    const typeRange = this.range(ident);
    let open: Token;
    for (;;) {
      const tok = this.peek();
      if (tok.kind === "{") {
        open = this.read();
        break;
      }
      if (tok.kind === "oquote") {
        labels.push(this.parseQuotedLabel());
        continue;
      }
      if (tok.kind === "ident") {
        this.read();
        labels.push({ value: this.text(tok), range: this.range(tok), quoted: false });
        continue;
      }
      const invalid = (detail: string) =>
        this.error("invalid-block-definition", "Invalid block definition", detail, this.range(tok));
      if (tok.kind === "=") {
        invalid('"=" sets an attribute; a block is written without it: "name { ... }".');
      } else if (tok.kind === "newline") {
        invalid(
          'A block\'s content must be enclosed in "{" and "}", with "{" on the same line as the block type and labels.',
        );
      } else if (!this.recovery) {
        invalid(`Expected a quoted label or "{", but found ${this.describe(tok)}.`);
      }
      this.recoverAfterBodyItem();
      const empty: Body = { kind: "Body", items: [], range: typeRange };
      const block: Block = {
        kind: "Block",
        type: this.text(ident),
        typeRange,
        labels,
        body: empty,
        openBraceRange: typeRange,
        closeBraceRange: typeRange,
        range: typeRange,
      };
      return { kind: "Block", block, ok: false };
    }
    const openRange = this.range(open);
    let items: BodyItem[] = [];
    let bodyErrors = 0;
    let closed = true;
    const first = this.peek().kind;
    if (first === "newline" || first === "eof" || first === "}") {
      const before = this.failures;
      const body = this.parseBody("}");
      items = body.items;
      closed = body.closed;
      bodyErrors = this.failures - before;
    } else {
      const before = this.failures;
      const reported = this.diagnostics.length;
      const attr = this.parseSingleAttrBody();
      if (attr !== undefined && this.failures === before) items = [attr];
      bodyErrors = this.failures - before;
      // hcl/v2 lists the attribute's own problems after those of the block's one-line form.
      const attrDiagnostics = this.diagnostics.splice(reported);
      const after = this.peek();
      const single = (detail: string) =>
        this.error(
          "invalid-single-line-block",
          "Invalid single-argument block definition",
          detail,
          this.range(after),
        );
      if (after.kind === "}") {
        this.read();
      } else {
        if (after.kind === ",") {
          single(
            "A block written on one line can hold only one attribute. Write the block over several lines, one attribute per line.",
          );
        } else if (after.kind === "newline") {
          single(
            'A block written on one line must also be closed on that line, with "}" right after its attribute.',
          );
        } else if (!this.recovery) {
          if (after.kind === "eof") {
            this.error(
              "unclosed-block",
              "Unclosed configuration block",
              `The block "${this.text(ident)}" opened here has no closing brace before the end of the file.`,
              openRange,
            );
          } else {
            single(
              `A block written on one line must end with "}" right after its attribute; found ${this.describe(after)}.`,
            );
          }
        }
        this.recover("}");
      }
      this.diagnostics.push(...attrDiagnostics);
    }
    const closeRange = this.prevRange();
    const eol = this.peek();
    if (eol.kind === "newline" || eol.kind === "eof") {
      this.read();
    } else {
      if (!this.recovery) {
        this.error(
          "missing-newline",
          "Missing newline after block definition",
          `A block definition must end with a newline after its closing brace, but found ${this.describe(eol)}.`,
          this.range(eol),
        );
      }
      this.recoverAfterBodyItem();
    }
    const block: Block = {
      kind: "Block",
      type: this.text(ident),
      typeRange,
      labels,
      body: { kind: "Body", items, range: this.between(openRange, closeRange) },
      openBraceRange: openRange,
      closeBraceRange: closeRange,
      range: this.between(typeRange, closeRange),
    };
    // Errors inside the body dropped their own items; anything else breaks the block.
    return { kind: "Block", block, ok: closed && this.failures - failuresBefore === bodyErrors };
  }

  /** The single attribute of a one-line block, `type { name = value }`. */
  private parseSingleAttrBody(): Attribute | undefined {
    const ident = this.read();
    if (ident.kind !== "ident") {
      this.recoverAfterBodyItem();
      this.error(
        "argument-or-block-required",
        "Argument or block definition required",
        `A block written on one line holds one "name = value" attribute, but found ${this.describe(ident)}.`,
        this.range(ident),
      );
      return undefined;
    }
    const next = this.peek();
    if (next.kind === "=") return this.finishAttribute(ident, true);
    this.recoverAfterBodyItem();
    if (next.kind === "oquote" || next.kind === "{" || next.kind === "ident") {
      this.error(
        "invalid-single-line-block",
        "Argument definition required",
        "A block written on one line can hold only one attribute, not a nested block. Put the nested block on its own line inside a multi-line block.",
        this.between(this.range(ident), this.range(next)),
      );
    } else {
      this.error(
        "argument-or-block-required",
        "Argument or block definition required",
        `After "${this.text(ident)}", expected "=" to set an attribute, but found ${this.describe(next)}.`,
        this.range(ident),
      );
    }
    return undefined;
  }

  /** A quoted block label: literal text only. */
  private parseQuotedLabel(): BlockLabel {
    const open = this.read();
    let value = "";
    let endRange: Range;
    for (;;) {
      const tok = this.read();
      if (tok.kind === "cquote") {
        endRange = this.range(tok);
        break;
      }
      if (tok.kind === "lit") {
        this.reportProblems(tok);
        value += tok.value!;
        continue;
      }
      if (tok.kind === "${" || tok.kind === "%{") {
        const which = tok.kind[0]!;
        this.error(
          "invalid-block-label",
          "Invalid block label",
          `Block labels must be plain strings; template sequences are not allowed in them. Write "${which}${which}{" for a literal "${which}{".`,
          this.range(tok),
        );
        value += `${which}{ ... }`;
        this.recover("seqend");
        continue;
      }
      if (tok.kind === "eof") {
        this.error(
          "unterminated-string",
          "Unterminated string",
          "This string has no closing quote.",
          this.range(tok),
        );
        endRange = this.range(tok);
        break;
      }
      this.error(
        "invalid-block-label",
        "Invalid block label",
        `${this.describeToken(tok)} is not allowed in a block label.`,
        this.range(tok),
      );
      this.recover("cquote");
      endRange = this.range(tok);
      break;
    }
    // Labels are not normalised: hcl/v2 keeps them exactly as written.
    return { value, range: this.between(this.range(open), endRange), quoted: true };
  }

  /** Reports the invalid escapes the lexer found in a literal token, now that it is used. */
  private reportProblems(tok: Token): void {
    for (const d of tok.problems ?? []) {
      this.diagnostics.push(d);
      this.errors++;
      this.failures++;
    }
  }

  // ---- expressions -------------------------------------------------------------

  private parseExpression(): Expression {
    return this.nested(() => this.parseConditional());
  }

  private parseConditional(): Expression {
    const startRange = this.range(this.peek());
    let before = this.errors;
    const condition = this.parseBinary(0);
    if (this.recovery && this.errors > before) return condition;
    if (this.peek().kind !== "?") return condition;
    this.read();
    before = this.errors;
    const trueExpr = this.parseExpression();
    if (this.recovery && this.errors > before) return condition;
    const colon = this.peek();
    if (colon.kind !== ":") {
      this.error(
        "missing-colon",
        "Missing false expression in conditional",
        'A conditional is written "condition ? true_value : false_value"; the ":" is missing.',
        this.range(colon),
      );
      return condition;
    }
    this.read();
    before = this.errors;
    const falseExpr = this.parseExpression();
    if (this.recovery && this.errors > before) return condition;
    return {
      kind: "Conditional",
      condition,
      trueExpr,
      falseExpr,
      range: this.between(startRange, falseExpr.range),
    };
  }

  private parseBinary(level: number): Expression {
    if (level === BINARY_LEVELS.length) return this.parseWithTraversals();
    const ops = BINARY_LEVELS[level]!;
    let before = this.errors;
    let left = this.parseBinary(level + 1);
    if (this.recovery && this.errors > before) return left;
    for (;;) {
      const op = this.peek().kind as BinaryOp;
      if (!ops.includes(op)) return left;
      this.read();
      before = this.errors;
      const right = this.nested(() => this.parseBinary(level + 1));
      if (this.recovery && this.errors > before) return left;
      left = { kind: "Binary", op, left, right, range: this.between(left.range, right.range) };
    }
  }

  private parseWithTraversals(): Expression {
    return this.parseTraversals(this.parseTerm());
  }

  /** Attribute access, indexing and splats after `from`. */
  private parseTraversals(from: Expression): Expression {
    let ret = from;
    for (;;) {
      const next = this.peek();
      if (next.kind === ".") {
        const dot = this.read();
        const attr = this.peek();
        if (attr.kind === "ident") {
          this.read();
          ret = {
            kind: "GetAttr",
            object: ret,
            name: this.text(attr),
            nameRange: this.range(attr),
            stepRange: this.between(this.range(dot), this.range(attr)),
            range: this.between(ret.range, this.range(attr)),
          };
        } else if (attr.kind === "number") {
          this.read();
          ret = this.legacyIndex(ret, dot, attr, attr);
        } else if (attr.kind === "*") {
          ret = this.attributeSplat(ret, dot);
        } else {
          this.error(
            "invalid-attribute-name",
            "Invalid attribute name",
            `An attribute name is required after a dot, but found ${this.describe(attr)}.`,
            this.range(attr),
          );
          this.setRecovery();
        }
      } else if (next.kind === "[") {
        const open = this.read();
        if (this.peek().kind === "*") {
          this.read();
          let close = this.read();
          if (close.kind !== "]" && !this.recovery) {
            // hcl/v2 reports this at the token its recovery stops on (the "]" or the end of the file).
            close = this.recover("]");
            this.error(
              "missing-bracket",
              "Missing close bracket on splat index",
              'A full splat is written "[*]".',
              this.range(close),
            );
          }
          const marker = this.between(this.range(open), this.range(close));
          const each = this.parseTraversals({ kind: "SplatItem", range: marker });
          ret = {
            kind: "Splat",
            source: ret,
            each,
            full: true,
            markerRange: marker,
            range: this.between(ret.range, each.range),
          };
          continue;
        }
        this.pushNewlines(false);
        const before = this.errors;
        const key = this.parseExpression();
        let close: Token;
        if (this.recovery && this.errors > before) {
          close = this.recover("]");
        } else {
          close = this.read();
          if (close.kind !== "]" && !this.recovery) {
            // hcl/v2 reports this at the token its recovery stops on (the "]" or the end of the file).
            close = this.recover("]");
            this.error(
              "missing-bracket",
              "Missing close bracket on index",
              'The index key must be followed by "]".',
              this.range(close),
            );
          }
        }
        this.popNewlines();
        const stepRange = this.between(this.range(open), this.range(close));
        ret = {
          kind: "Index",
          collection: ret,
          key,
          legacy: false,
          stepRange,
          range: this.between(ret.range, stepRange),
        };
      } else {
        return ret;
      }
    }
  }

  /** `.0` (the legacy index form); `.0.1` reaches us as the single number "0.1" and is refused. */
  private legacyIndex(on: Expression, dot: Token, num: Token, reportAt: Token): Expression {
    const raw = this.text(num);
    const stepRange = this.between(this.range(dot), this.range(num));
    const range = this.between(on.range, stepRange);
    if (raw.includes(".")) {
      const [a, b] = raw.split(".", 2);
      this.error(
        "invalid-legacy-index",
        "Invalid legacy index syntax",
        `Two legacy indexes cannot be chained; write [${a}][${b}] instead.`,
        this.range(reportAt),
      );
      return {
        kind: "Index",
        collection: on,
        key: this.placeholder(this.range(num)),
        legacy: true,
        stepRange,
        range,
      };
    }
    const key = this.numberLiteral(num);
    return { kind: "Index", collection: on, key, legacy: true, stepRange, range };
  }

  /** `source.*` followed by `.name` and `.0` steps, applied to each element. */
  private attributeSplat(source: Expression, dot: Token): Expression {
    const star = this.read();
    const marker = this.between(this.range(dot), this.range(star));
    let each: Expression = { kind: "SplatItem", range: marker };
    let last = marker;
    while (this.peek().kind === ".") {
      const stepDot = this.read();
      const tok = this.peek();
      if (tok.kind === "number") {
        this.read();
        // hcl/v2 reports a chained legacy index here at the splat's "*".
        each = this.legacyIndex(each, stepDot, tok, star);
        last = this.range(tok);
        continue;
      }
      if (tok.kind !== "ident") {
        if (!this.recovery) {
          if (tok.kind === "*") {
            this.error(
              "nested-splat",
              "Nested splat expression not allowed",
              'A splat (".*") cannot be used inside another attribute-only splat; use the full splat "[*]" instead.',
              this.range(tok),
            );
          } else {
            this.error(
              "invalid-attribute-name",
              "Invalid attribute name",
              `An attribute name is required after a dot, but found ${this.describe(tok)}.`,
              this.range(star),
            );
          }
        }
        this.setRecovery();
        return source;
      }
      this.read();
      each = {
        kind: "GetAttr",
        object: each,
        name: this.text(tok),
        nameRange: this.range(tok),
        stepRange: this.between(this.range(stepDot), this.range(tok)),
        range: this.between(each.range, this.range(tok)),
      };
      last = this.range(tok);
    }
    return {
      kind: "Splat",
      source,
      each,
      full: false,
      markerRange: marker,
      range: this.between(source.range, last),
    };
  }

  private numberLiteral(tok: Token): Expression {
    const raw = this.text(tok);
    if (!NUMBER_LITERAL.test(raw)) {
      this.error("invalid-number", "Invalid number literal", `"${raw}" is not a number.`, this.range(tok));
      return this.placeholder(this.range(tok));
    }
    return { kind: "Number", raw, value: Number(raw), range: this.range(tok) };
  }

  private parseTerm(): Expression {
    const start = this.peek();
    switch (start.kind) {
      case "(": {
        const open = this.read();
        this.pushNewlines(false);
        const before = this.errors;
        const expr = this.parseExpression();
        if (this.errors > before) {
          this.recover(")");
          this.popNewlines();
          return expr;
        }
        const close = this.peek();
        if (close.kind !== ")") {
          this.error(
            "missing-paren",
            "Unbalanced parentheses",
            `Expected ")" to close the parenthesis opened at ${pos(this.range(open))}, but found ${this.describe(close)}.`,
            this.range(close),
          );
          this.setRecovery();
        }
        const cparen = this.read();
        this.popNewlines();
        return { kind: "Parens", expr, range: this.between(this.range(open), this.range(cparen)) };
      }
      case "number":
        this.read();
        return this.numberLiteral(start);
      case "ident": {
        this.read();
        const after = this.peek();
        if (after.kind === "(" || after.kind === "::") return this.finishCall(start);
        const name = this.text(start);
        const range = this.range(start);
        if (name === "true" || name === "false") return { kind: "Bool", value: name === "true", range };
        if (name === "null") return { kind: "Null", range };
        return { kind: "Variable", name, range };
      }
      case "oquote":
      case "oheredoc":
        return this.parseTemplate();
      case "-":
      case "!": {
        const op = this.read();
        const operand = this.nested(() => this.parseWithTraversals());
        return {
          kind: "Unary",
          op: op.kind as "-" | "!",
          operand,
          range: this.between(this.range(op), operand.range),
        };
      }
      case "[":
        return this.parseTuple();
      case "{":
        return this.parseObject();
      default: {
        if (!this.recovery) {
          if (start.kind === "eof") {
            this.error(
              "invalid-expression",
              "Missing expression",
              "Expected the start of an expression, but found the end of the file.",
              this.range(start),
            );
          } else {
            this.error(
              "invalid-expression",
              "Invalid expression",
              `Expected the start of an expression, but found ${this.describe(start)}.`,
              this.range(start),
            );
          }
        }
        this.setRecovery();
        return this.placeholder(this.range(start));
      }
    }
  }

  private finishCall(first: Token): Expression {
    let name = this.text(first);
    let last = first;
    // `ns::name` (hcl/v2 from v2.20).
    while (this.peek().kind === "::") {
      this.read();
      const part = this.read();
      if (part.kind !== "ident") {
        this.error(
          "invalid-function-name",
          "Invalid function name",
          'A namespaced function name is written "namespace::name".',
          this.range(part),
        );
        this.setRecovery();
        return this.placeholder(this.range(part));
      }
      name += `::${this.text(part)}`;
      last = part;
    }
    const open = this.read();
    if (open.kind !== "(") {
      this.error(
        "missing-call-arguments",
        "Missing function call",
        `"${name}" is a function name, so it must be followed by "(".`,
        this.range(open),
      );
      this.setRecovery();
      return this.placeholder(this.range(open));
    }
    const nameRange = this.between(this.range(first), this.range(last));
    const args: Expression[] = [];
    let expandFinal = false;
    let close: Token;
    this.pushNewlines(false);
    for (;;) {
      if (this.peek().kind === ")") {
        close = this.read();
        break;
      }
      const before = this.errors;
      args.push(this.parseExpression());
      if (this.recovery && this.errors > before) {
        close = this.recover(")");
        break;
      }
      const sep = this.read();
      if (sep.kind === ")") {
        close = sep;
        break;
      }
      if (sep.kind === "...") {
        expandFinal = true;
        if (this.peek().kind !== ")") {
          if (!this.recovery) {
            this.error(
              "missing-paren",
              "Missing closing parenthesis",
              'An argument expanded with "..." must be the last one, followed by ")".',
              this.range(sep),
            );
          }
          close = this.recover(")");
        } else {
          close = this.read();
        }
        break;
      }
      if (sep.kind !== ",") {
        if (sep.kind === "eof") {
          this.error(
            "unclosed-bracket",
            "Unterminated function call",
            `The call to "${name}" has no closing parenthesis before the end of the file.`,
            this.between(this.range(first), this.range(open)),
          );
        } else {
          this.error(
            "missing-argument-separator",
            "Missing argument separator",
            `Function arguments are separated by commas; found ${this.describe(sep)}.`,
            this.range(sep),
          );
        }
        close = this.recover(")");
        break;
      }
      if (this.peek().kind === ")") {
        close = this.read();
        break;
      }
    }
    this.popNewlines();
    return {
      kind: "FunctionCall",
      name,
      nameRange,
      args,
      expandFinal,
      openParenRange: this.range(open),
      closeParenRange: this.range(close),
      range: this.between(this.range(first), this.range(close)),
    };
  }

  private parseTuple(): Expression {
    const open = this.read();
    this.pushNewlines(false);
    try {
      if (this.isKeyword(this.peek(), "for")) return this.parseFor(open);
      const items: Expression[] = [];
      let close: Token;
      for (;;) {
        if (this.peek().kind === "]") {
          close = this.read();
          break;
        }
        const before = this.errors;
        items.push(this.parseExpression());
        if (this.recovery && this.errors > before) {
          close = this.recover("]");
          break;
        }
        const next = this.peek();
        if (next.kind === "]") {
          close = this.read();
          break;
        }
        if (next.kind !== ",") {
          if (!this.recovery) {
            if (next.kind === "eof") {
              this.error(
                "unclosed-bracket",
                "Unterminated tuple constructor expression",
                'The "[" opened here has no matching "]" before the end of the file.',
                this.range(open),
              );
            } else {
              this.error(
                "missing-item-separator",
                "Missing item separator",
                `Tuple items are separated by commas; found ${this.describe(next)}.`,
                this.range(next),
              );
            }
          }
          close = this.recover("]");
          break;
        }
        this.read();
      }
      return { kind: "Tuple", items, range: this.between(this.range(open), this.range(close)) };
    } finally {
      this.popNewlines();
    }
  }

  private parseObject(): Expression {
    const open = this.read();
    // `for` as the first thing inside the braces, even on a later line, starts a for-expression.
    this.pushNewlines(false);
    const isFor = this.isKeyword(this.peek(), "for");
    this.popNewlines();
    if (isFor) {
      this.pushNewlines(false);
      try {
        return this.parseFor(open);
      } finally {
        this.popNewlines();
      }
    }
    this.pushNewlines(true);
    try {
      const items: ObjectItem[] = [];
      let close: Token;
      const unterminated = () =>
        this.error(
          "unclosed-bracket",
          "Unterminated object constructor expression",
          'The "{" opened here has no matching "}" before the end of the file.',
          this.range(open),
        );
      for (;;) {
        const next = this.peek();
        if (next.kind === "newline") {
          this.read();
          continue;
        }
        if (next.kind === "}") {
          close = this.read();
          break;
        }
        let before = this.errors;
        const key = this.parseExpression();
        if (this.recovery && this.errors > before) {
          close = this.recover("}");
          break;
        }
        const sep = this.peek();
        if (sep.kind !== "=" && sep.kind !== ":") {
          if (!this.recovery) {
            if (sep.kind === "newline" || sep.kind === ",") {
              this.error(
                "missing-attribute-value",
                "Missing attribute value",
                'An object item is written "key = value"; this key has no "=" and value.',
                this.range(sep),
              );
            } else if (sep.kind === "eof") {
              unterminated();
            } else {
              this.error(
                "missing-key-value-separator",
                "Missing key/value separator",
                `An object item is written "key = value" or "key: value"; found ${this.describe(sep)} after the key. A key with dots or spaces must be quoted.`,
                this.range(sep),
              );
            }
          }
          close = this.recover("}");
          break;
        }
        this.read();
        before = this.errors;
        const value = this.parseExpression();
        if (this.recovery && this.errors > before) {
          close = this.recover("}");
          break;
        }
        items.push({ kind: "ObjectItem", key, value, range: this.between(key.range, value.range) });
        const after = this.peek();
        if (after.kind === "}") {
          close = this.read();
          break;
        }
        if (after.kind !== "," && after.kind !== "newline") {
          if (!this.recovery) {
            if (after.kind === "eof") unterminated();
            else {
              this.error(
                "missing-attribute-separator",
                "Missing attribute separator",
                `Object items are separated by commas or newlines; found ${this.describe(after)}.`,
                this.range(after),
              );
            }
          }
          close = this.recover("}");
          break;
        }
        this.read();
      }
      return { kind: "Object", items, range: this.between(this.range(open), this.range(close)) };
    } finally {
      this.popNewlines();
    }
  }

  private isKeyword(tok: Token, word: string): boolean {
    return tok.kind === "ident" && this.text(tok) === word;
  }

  /** `for k, v in coll : ...` after "[" or "{" (newlines are not significant here). */
  private parseFor(open: Token): Expression {
    this.read(); // "for"
    const object = open.kind === "{";
    const closer: TokenKind = object ? "}" : "]";
    const invalid = (detail: string, at: Range) =>
      this.error("invalid-for-expression", "Invalid 'for' expression", detail, at);
    const giveUp = (): Expression =>
      this.placeholder(this.between(this.range(open), this.range(this.recover(closer))));
    const expect = (ok: boolean, detail: string): boolean => {
      if (ok) return true;
      if (!this.recovery) invalid(detail, this.range(this.peek()));
      return false;
    };
    if (
      !expect(
        this.peek().kind === "ident",
        `Expected a variable name after "for", but found ${this.describe(this.peek())}.`,
      )
    ) {
      return giveUp();
    }
    let valueVar = this.text(this.read());
    let keyVar: string | undefined;
    if (this.peek().kind === ",") {
      this.read();
      if (
        !expect(
          this.peek().kind === "ident",
          `Expected a second variable name after ",", but found ${this.describe(this.peek())}.`,
        )
      ) {
        return giveUp();
      }
      keyVar = valueVar;
      valueVar = this.text(this.read());
    }
    if (
      !expect(
        this.isKeyword(this.peek(), "in"),
        `Expected "in" after the variable names, but found ${this.describe(this.peek())}.`,
      )
    ) {
      return giveUp();
    }
    this.read();
    let before = this.errors;
    const collection = this.parseExpression();
    if (this.recovery && this.errors > before) return giveUp();
    if (
      !expect(
        this.peek().kind === ":",
        `Expected ":" after the collection, but found ${this.describe(this.peek())}.`,
      )
    ) {
      return giveUp();
    }
    this.read();
    before = this.errors;
    let valueExpr = this.parseExpression();
    let keyExpr: Expression | undefined;
    if (this.peek().kind === "=>") {
      this.read();
      keyExpr = valueExpr;
      valueExpr = this.parseExpression();
    }
    if (this.recovery && this.errors > before) return giveUp();
    let grouping = false;
    let dots: Token | undefined;
    if (this.peek().kind === "...") {
      dots = this.read();
      grouping = true;
    }
    let condition: Expression | undefined;
    if (this.isKeyword(this.peek(), "if")) {
      this.read();
      before = this.errors;
      condition = this.parseExpression();
      if (this.recovery && this.errors > before) return giveUp();
    }
    let close: Token;
    if (this.peek().kind === closer) {
      close = this.read();
    } else {
      if (!this.recovery) {
        invalid(
          `Expected "${closer}" to end the 'for' expression, but found ${this.describe(this.peek())}.`,
          this.range(this.peek()),
        );
      }
      close = this.recover(closer);
    }
    if (!object) {
      if (keyExpr !== undefined) {
        invalid(
          "A tuple 'for' expression has no key: \"=>\" belongs in an object 'for' expression (\"{for ...}\").",
          keyExpr.range,
        );
      }
      if (dots !== undefined) {
        invalid(
          "The grouping marker \"...\" is only allowed in an object 'for' expression.",
          this.range(dots),
        );
      }
    } else if (keyExpr === undefined) {
      invalid("An object 'for' expression needs \"key => value\".", valueExpr.range);
    }
    return {
      kind: "For",
      object,
      ...(keyVar === undefined ? {} : { keyVar }),
      valueVar,
      collection,
      ...(keyExpr === undefined ? {} : { keyExpr }),
      valueExpr,
      ...(condition === undefined ? {} : { condition }),
      grouping,
      range: this.between(this.range(open), this.range(close)),
    };
  }

  // ---- templates -------------------------------------------------------------

  private parseTemplate(): Template | TemplateWrap {
    const open = this.read();
    const heredoc = open.kind === "oheredoc";
    const end: TokenKind = heredoc ? "cheredoc" : "cquote";
    const items: FlatItem[] = [];
    let ltrimNext = false;
    let nextCanTrimPrev = false;
    let endRange: Range;
    // hcl/v2 reports an unclosed interpolation at the template's first token.
    const firstRange = this.range(this.peek());
    for (;;) {
      const next = this.read();
      if (next.kind === end) {
        endRange = this.range(next);
        break;
      }
      const ltrim = ltrimNext;
      ltrimNext = false;
      const canTrimPrev = nextCanTrimPrev;
      nextCanTrimPrev = false;
      if (next.kind === "lit") {
        this.reportProblems(next);
        items.push({
          kind: "lit",
          value: ltrim ? stripMarkers.left(next.value!) : next.value!,
          range: this.range(next),
        });
        nextCanTrimPrev = true;
        continue;
      }
      if (next.kind === "${" || next.kind === "%{") {
        if (canTrimPrev && next.strip === true) {
          const prev = items[items.length - 1];
          if (prev?.kind === "lit") prev.value = stripMarkers.right(prev.value);
        }
        this.pushNewlines(false);
        const item =
          next.kind === "${" ? this.parseInterpolation(next, end, firstRange) : this.parseDirective(next);
        this.popNewlines();
        if (item === undefined) continue;
        items.push(item);
        if (item.kind !== "lit" && item.stripRight) ltrimNext = true;
        continue;
      }
      if (!this.recovery) {
        this.error(
          heredoc ? "unterminated-heredoc" : "unterminated-string",
          "Unterminated template string",
          heredoc
            ? `No line holding only the closing marker "${open.value}" was found.`
            : "This string has no closing quote.",
          this.range(next),
        );
      }
      endRange = this.range(this.recover(end));
      break;
    }
    if (heredoc && open.indented) flushHeredoc(items);
    const range = this.between(this.range(open), endRange);
    if (!heredoc && items.length === 1 && items[0]!.kind === "interp") {
      return { kind: "TemplateWrap", expr: items[0].expr, range };
    }
    const reported = this.diagnostics.length;
    const parts = nestTemplate(items, endRange, this.diagnostics);
    this.errors += this.diagnostics.length - reported;
    this.failures += this.diagnostics.length - reported;
    return {
      kind: "Template",
      parts,
      ...(heredoc ? { heredoc: { marker: open.value!, indented: open.indented === true } } : {}),
      range,
    };
  }

  private parseInterpolation(open: Token, end: TokenKind, firstRange: Range): FlatItem {
    const expr = this.parseExpression();
    const close = this.peek();
    if (close.kind !== "seqend") {
      if (!this.recovery) {
        if (close.kind === "eof") {
          this.error(
            "unclosed-bracket",
            "Unclosed template interpolation sequence",
            `An "${INTERP}" in this template has no closing "}" before the end of the file.`,
            firstRange,
          );
        } else if ((close.kind === "cquote" || close.kind === "oquote") && end === "cquote") {
          this.error(
            "unclosed-bracket",
            "Unclosed template interpolation sequence",
            `An "${INTERP}" in this template has no closing "}" before the end of the string.`,
            firstRange,
          );
        } else {
          this.error(
            "missing-template-close",
            "Extra characters after interpolation expression",
            `Expected "}" to close the interpolation, but found ${this.describe(close)}. To write a literal "\${", escape it as "$\${".`,
            this.range(close),
          );
        }
      }
      const last = this.recover("seqend");
      return {
        kind: "interp",
        expr,
        stripLeft: open.strip === true,
        stripRight: false,
        range: this.between(this.range(open), this.range(last)),
      };
    }
    this.read();
    return {
      kind: "interp",
      expr,
      stripLeft: open.strip === true,
      stripRight: close.strip === true,
      range: this.between(this.range(open), this.range(close)),
    };
  }

  private parseDirective(open: Token): FlatItem | undefined {
    const kw = this.peek();
    if (kw.kind !== "ident") {
      if (!this.recovery) {
        this.error(
          "invalid-directive",
          "Invalid template directive",
          'A "%{" sequence must start with one of the keywords if, else, endif, for or endfor. To write a literal "%{", escape it as "%%{".',
          this.range(kw),
        );
      }
      this.recover("seqend");
      return undefined;
    }
    this.read();
    const keyword = this.text(kw);
    let fields: Omit<FlatItem & { kind: "directive" }, "kind" | "stripLeft" | "stripRight" | "range">;
    const forProblem = (detail: string) => {
      if (!this.recovery)
        this.error("invalid-for-directive", "Invalid 'for' directive", detail, this.range(this.peek()));
      this.recover("seqend");
      return undefined;
    };
    switch (keyword) {
      case "if":
        fields = { keyword, condition: this.parseExpression() };
        break;
      case "else":
      case "endif":
      case "endfor":
        fields = { keyword };
        break;
      case "for": {
        if (this.peek().kind !== "ident")
          return forProblem('A "for" directive needs a variable name after "for".');
        let valueVar = this.text(this.read());
        let keyVar: string | undefined;
        if (this.peek().kind === ",") {
          this.read();
          if (this.peek().kind !== "ident")
            return forProblem('A "for" directive needs a second variable name after ",".');
          keyVar = valueVar;
          valueVar = this.text(this.read());
        }
        if (!this.isKeyword(this.peek(), "in"))
          return forProblem('A "for" directive needs "in" after the variable names.');
        this.read();
        fields = {
          keyword,
          ...(keyVar === undefined ? {} : { keyVar }),
          valueVar,
          collection: this.parseExpression(),
        };
        break;
      }
      default:
        if (!this.recovery) {
          this.error(
            "invalid-directive",
            "Invalid template control keyword",
            `"${keyword}" is not a template keyword; the keywords are if, else, endif, for and endfor.`,
            this.range(kw),
          );
        }
        this.recover("seqend");
        return undefined;
    }
    const close = this.peek();
    const range = this.between(this.range(open), this.range(close));
    let stripRight = false;
    if (close.kind !== "seqend") {
      if (!this.recovery) {
        this.error(
          "missing-template-close",
          `Extra characters in ${keyword} marker`,
          `Expected "}" to close the directive, but found ${this.describe(close)}.`,
          this.range(close),
        );
      }
      this.recover("seqend");
    } else {
      this.read();
      stripRight = close.strip === true;
    }
    return { kind: "directive", ...fields, stripLeft: open.strip === true, stripRight, range } as FlatItem;
  }

  // ---- messages --------------------------------------------------------------

  /** How a token is named in messages. */
  private describe(tok: Token): string {
    if (tok.kind === "ident") return `the name "${this.text(tok)}"`;
    return this.describeToken(tok);
  }

  private describeToken(tok: Token): string {
    const names: Partial<Record<TokenKind, string>> = {
      newline: "a newline",
      eof: "the end of the file",
      number: "a number",
      oquote: "a string",
      cquote: "a closing quote",
      oheredoc: "a heredoc",
      cheredoc: "the end of a heredoc",
      lit: "template text",
      qnewline: "a line break",
      seqend: 'a "}"',
      invalid: "an invalid character",
    };
    return names[tok.kind] ?? `"${this.text(tok)}"`;
  }
}

function pos(r: Range): string {
  return `${r.start.line}:${r.start.column}`;
}
