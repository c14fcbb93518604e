// Recursive-descent parser for HCL2 native syntax.
//
// Errors never escape: each failure is recorded as a diagnostic and the
// parser abandons the current body item (attribute or block), skips to the
// next newline at the item's own nesting level, and carries on. The body
// returned alongside errors therefore holds only the items that parsed.

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
import {
  applyStripMarkers,
  type Directive,
  dedentHeredoc,
  type FlatItem,
  mergeLiterals,
  nestTemplate,
} from "./template.ts";

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
  const body = parser.guard(() => parser.parseFileBody()) ?? {
    kind: "Body",
    items: [],
    range: src.range(0, src.text.length),
  };
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
  return expr === undefined ? { diagnostics: sorted } : { expr, diagnostics: sorted };
}

/** Lexer and parser diagnostics interleaved in source order (the sort is stable). */
function byPosition(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics.sort((a, b) => a.subject.start.byte - b.subject.start.byte);
}

/** Thrown (and always caught) to abandon the current body item. */
class Abort {
  readonly at: number;
  constructor(at: number) {
    this.at = at;
  }
}

const BINARY_LEVELS: ReadonlyArray<ReadonlyArray<BinaryOp>> = [
  ["||"],
  ["&&"],
  ["==", "!="],
  ["<", ">", "<=", ">="],
  ["+", "-"],
  ["*", "/", "%"],
];

const OPENERS = new Set<TokenKind>(["{", "[", "(", "oquote", "oheredoc", "${", "%{"]);
const CLOSERS = new Set<TokenKind>(["}", "]", ")", "cquote", "cheredoc", "seqend"]);

/** Deep enough for any real configuration, shallow enough to never overflow the stack. */
const MAX_DEPTH = 200;

const DESCRIBE: Partial<Record<TokenKind, string>> = {
  newline: "a newline",
  eof: "the end of the file",
  number: "a number",
  oquote: "a string",
  cquote: "a closing quote",
  oheredoc: "a heredoc",
  cheredoc: "the end of a heredoc",
  lit: "template text",
  seqend: 'a "}"',
};

class Parser {
  private readonly src: SourceFile;
  private readonly tokens: Token[];
  private readonly diagnostics: Diagnostic[];
  private pos = 0;
  /** Whether newlines are significant in the current context (a stack). */
  private readonly newlineModes: boolean[] = [true];
  private depth = 0;
  /** Brackets and template sequences currently open inside an expression. */
  private readonly openers: Token[] = [];

  constructor(src: SourceFile, tokens: Token[], diagnostics: Diagnostic[]) {
    this.src = src;
    this.tokens = tokens;
    this.diagnostics = diagnostics;
  }

  /** Runs `f`, turning an escaped Abort or a stack overflow into "no result". */
  guard<T>(f: () => T): T | undefined {
    try {
      return f();
    } catch (e) {
      if (e instanceof Abort) return undefined;
      if (e instanceof RangeError) {
        this.diagnostics.push(
          errorDiag(
            "too-deep",
            "Nesting too deep",
            "This input is nested too deeply to be processed.",
            this.range(this.peekRaw()),
          ),
        );
        return undefined;
      }
      throw e;
    }
  }

  // ---- token access -------------------------------------------------------

  private get newlinesSignificant(): boolean {
    return this.newlineModes[this.newlineModes.length - 1]!;
  }

  private peekRaw(): Token {
    return this.tokens[Math.min(this.pos, this.tokens.length - 1)]!;
  }

  /** Index of the token `offset` places ahead, skipping newlines where they are not significant. */
  private peekIndex(offset = 0): number {
    const last = this.tokens.length - 1; // always the eof token
    for (let i = Math.min(this.pos, last), seen = 0; ; i++) {
      const kind = this.tokens[i]!.kind;
      if (kind === "eof") return i;
      if (kind === "newline" && !this.newlinesSignificant) continue;
      if (seen === offset) return i;
      seen++;
    }
  }

  private peek(offset = 0): Token {
    return this.tokens[this.peekIndex(offset)]!;
  }

  /** Consumes and returns the next token; the eof token is never consumed. */
  private next(): Token {
    const i = this.peekIndex();
    const tok = this.tokens[i]!;
    this.pos = tok.kind === "eof" ? i : i + 1;
    return tok;
  }

  private withNewlines<T>(significant: boolean, f: () => T): T {
    this.newlineModes.push(significant);
    try {
      return f();
    } finally {
      this.newlineModes.pop();
    }
  }

  /** Runs `f` between the bracket `open` and its closer, for end-of-file reporting. */
  private inside<T>(open: Token, newlinesSignificant: boolean, f: () => T): T {
    this.openers.push(open);
    try {
      return this.withNewlines(newlinesSignificant, f);
    } finally {
      this.openers.pop();
    }
  }

  private text(tok: Token): string {
    return this.src.text.slice(tok.start, tok.end);
  }

  private range(tok: Token): Range {
    return this.src.range(tok.start, tok.end);
  }

  private span(a: { range: Range } | Range, b: { range: Range } | Range): Range {
    const ra = "range" in a ? a.range : a;
    const rb = "range" in b ? b.range : b;
    return { filename: this.src.filename, start: ra.start, end: rb.end };
  }

  /** How a token is named in messages. */
  private describe(tok: Token): string {
    if (tok.kind === "ident") return `the name "${this.text(tok)}"`;
    return DESCRIBE[tok.kind] ?? `"${this.text(tok)}"`;
  }

  /**
   * Records an error at `tok` (unless the lexer already did) and abandons the
   * item. Running into the end of the file inside brackets is reported at the
   * innermost unclosed bracket instead, which is where the mistake usually is.
   */
  private fail(tok: Token, code: string, summary: string, detail: string): never {
    const open = this.openers[this.openers.length - 1];
    if (tok.kind === "eof" && open !== undefined) {
      const text = this.text(open).replace("~", "");
      const closer = { "(": ")", "[": "]", "{": "}" }[text] ?? "}";
      this.diagnostics.push(
        errorDiag(
          "unclosed-bracket",
          `Unclosed "${text}"`,
          `The "${text}" opened here has no matching "${closer}" before the end of the file.`,
          this.range(open),
        ),
      );
    } else if (tok.kind !== "invalid") {
      this.diagnostics.push(errorDiag(code, summary, detail, this.range(tok)));
    }
    throw new Abort(this.tokens.indexOf(tok));
  }

  private expect(kind: TokenKind, code: string, summary: string, detail: string): Token {
    const tok = this.peek();
    if (tok.kind !== kind) this.fail(tok, code, summary, detail);
    return this.next();
  }

  private nested<T>(f: () => T): T {
    if (this.depth + 1 > MAX_DEPTH) {
      this.fail(
        this.peek(),
        "too-deep",
        "Nesting too deep",
        `Expressions and blocks may nest at most ${MAX_DEPTH} levels deep.`,
      );
    }
    this.depth++;
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  // ---- structure ---------------------------------------------------------------

  parseFileBody(): Body {
    const items = this.parseBodyItems("eof");
    return { kind: "Body", items, range: this.src.range(0, this.src.text.length) };
  }

  parseStandaloneExpression(): Expression {
    while (this.peek().kind === "newline") this.next();
    const expr = this.parseExpr();
    while (this.peek().kind === "newline") this.next();
    const end = this.peek();
    if (end.kind !== "eof") {
      this.fail(
        end,
        "extra-characters",
        "Extra characters after expression",
        `Expected the end of the expression, but found ${this.describe(end)}.`,
      );
    }
    return expr;
  }

  /** Reads items until `end` ("eof", or "}" for a block body), without consuming it. */
  private parseBodyItems(end: "eof" | "}"): BodyItem[] {
    const items: BodyItem[] = [];
    const seen = new Map<string, Attribute>();
    for (;;) {
      const tok = this.peek();
      if (tok.kind === "newline") {
        this.next();
        continue;
      }
      if (tok.kind === end || tok.kind === "eof") return items;
      const startIndex = this.pos;
      try {
        const item = this.parseBodyItem();
        if (item.kind === "Attribute") {
          const prev = seen.get(item.name);
          if (prev !== undefined) {
            const p = prev.nameRange.start;
            this.diagnostics.push(
              errorDiag(
                "attribute-redefined",
                "Attribute redefined",
                `"${item.name}" was already set at ${p.line}:${p.column}. An attribute can be set only once in a body.`,
                item.nameRange,
              ),
            );
            continue;
          }
          seen.set(item.name, item);
        }
        items.push(item);
      } catch (e) {
        if (!(e instanceof Abort)) throw e;
        this.recover(startIndex, e.at, end);
      }
    }
  }

  /**
   * Skips from the start of a failed item to the first newline after the
   * failure point that is at the item's own nesting level, or to the `}`
   * that closes the enclosing body.
   */
  private recover(startIndex: number, failedAt: number, end: "eof" | "}"): void {
    let depth = 0;
    for (let i = startIndex; i < this.tokens.length; i++) {
      const tok = this.tokens[i]!;
      if (tok.kind === "eof") {
        this.pos = i;
        return;
      }
      if (OPENERS.has(tok.kind)) depth++;
      else if (CLOSERS.has(tok.kind)) {
        if (depth === 0 && tok.kind === "}" && end === "}") {
          this.pos = i;
          return;
        }
        depth = Math.max(0, depth - 1);
      } else if (tok.kind === "newline" && depth === 0 && i >= failedAt) {
        this.pos = i + 1;
        return;
      }
    }
    this.pos = this.tokens.length - 1;
  }

  private parseBodyItem(): BodyItem {
    const name = this.peek();
    if (name.kind !== "ident") {
      this.fail(
        name,
        "argument-or-block-required",
        "Argument or block definition required",
        `An attribute ("name = value") or a block ("name { ... }") was expected, but found ${this.describe(name)}.`,
      );
    }
    this.next();
    const after = this.peek();
    if (after.kind === "=") {
      this.next();
      const attr = this.parseAttributeRest(name);
      const end = this.peek();
      if (end.kind !== "newline" && end.kind !== "eof") {
        this.fail(
          end,
          "missing-newline",
          "Missing newline after argument",
          `An attribute definition must end with a newline, but found ${this.describe(end)}. Put each attribute on its own line.`,
        );
      }
      return attr;
    }
    if (after.kind === "{" || after.kind === "ident" || after.kind === "oquote") {
      const block = this.nested(() => this.parseBlockRest(name));
      const end = this.peek();
      if (end.kind !== "newline" && end.kind !== "eof") {
        this.fail(
          end,
          "missing-newline",
          "Missing newline after block definition",
          `A block definition must end with a newline after its closing brace, but found ${this.describe(end)}.`,
        );
      }
      return block;
    }
    this.fail(
      after,
      "argument-or-block-required",
      "Argument or block definition required",
      `After "${this.text(name)}", expected "=" to set an attribute or "{" to open a block, but found ${this.describe(after)}.`,
    );
  }

  private parseAttributeRest(name: Token): Attribute {
    const expr = this.parseExpr();
    return {
      kind: "Attribute",
      name: this.text(name),
      nameRange: this.range(name),
      expr,
      range: this.span(this.range(name), expr),
    };
  }

  private parseBlockRest(typeTok: Token): Block {
    const labels: BlockLabel[] = [];
    for (;;) {
      const tok = this.peek();
      if (tok.kind === "ident") {
        this.next();
        labels.push({ value: this.text(tok), range: this.range(tok), quoted: false });
      } else if (tok.kind === "oquote") {
        labels.push(this.parseLabelString());
      } else break;
    }
    const open = this.peek();
    if (open.kind !== "{") {
      this.fail(
        open,
        "invalid-block-definition",
        "Invalid block definition",
        `A block's content must be enclosed in "{" and "}", with "{" on the same line as the block type and labels; found ${this.describe(open)}.`,
      );
    }
    this.next();
    const openRange = this.range(open);
    let items: BodyItem[];
    const first = this.peek();
    if (first.kind === "newline") {
      items = this.parseBodyItems("}");
      const close = this.peek();
      if (close.kind !== "}") this.unclosedBlock(typeTok, openRange, close);
    } else if (first.kind === "}") {
      items = [];
    } else if (first.kind === "eof") {
      this.unclosedBlock(typeTok, openRange, first);
    } else {
      items = [this.parseSingleLineItem(typeTok, openRange)];
    }
    const close = this.next();
    const closeRange = this.range(close);
    return {
      kind: "Block",
      type: this.text(typeTok),
      typeRange: this.range(typeTok),
      labels,
      body: { kind: "Body", items, range: this.span(openRange, closeRange) },
      openBraceRange: openRange,
      closeBraceRange: closeRange,
      range: this.span(this.range(typeTok), closeRange),
    };
  }

  private unclosedBlock(typeTok: Token, openRange: Range, eof: Token): never {
    this.diagnostics.push(
      errorDiag(
        "unclosed-block",
        "Unclosed configuration block",
        `The block "${this.text(typeTok)}" opened here has no closing brace before the end of the file. Check the braces inside it.`,
        openRange,
      ),
    );
    throw new Abort(this.tokens.indexOf(eof));
  }

  /** The single attribute of a one-line block, `type { name = value }`. */
  private parseSingleLineItem(typeTok: Token, openRange: Range): Attribute {
    const name = this.peek();
    const second = this.peek(1);
    if (name.kind !== "ident" || second.kind !== "=") {
      const nestedBlock =
        name.kind === "ident" && (second.kind === "{" || second.kind === "ident" || second.kind === "oquote");
      this.fail(
        name,
        "invalid-single-line-block",
        "Invalid single-argument block definition",
        nestedBlock
          ? "A block written on one line can hold only one attribute, not a nested block. Put the nested block on its own line inside a multi-line block."
          : `A block written on one line must hold either nothing or one "name = value" attribute, but found ${this.describe(name)}.`,
      );
    }
    this.next();
    this.next();
    const attr = this.parseAttributeRest(name);
    const close = this.peek();
    if (close.kind === "eof") this.unclosedBlock(typeTok, openRange, close);
    if (close.kind !== "}") {
      this.fail(
        close,
        "invalid-single-line-block",
        "Invalid single-argument block definition",
        `A block written on one line can hold only one attribute and must end with "}" right after it; found ${this.describe(close)}. Write the block over several lines, one attribute per line.`,
      );
    }
    return attr;
  }

  private parseLabelString(): BlockLabel {
    const open = this.next();
    let value = "";
    for (;;) {
      const tok = this.next();
      if (tok.kind === "lit") value += tok.value!;
      else if (tok.kind === "cquote") {
        return { value: value.normalize("NFC"), range: this.src.range(open.start, tok.end), quoted: true };
      } else {
        this.fail(
          tok,
          "invalid-block-label",
          "Invalid block label",
          'Block labels must be plain strings; template sequences ("${" and "%{") are not allowed in them.',
        );
      }
    }
  }

  // ---- expressions -------------------------------------------------------------

  private parseExpr(): Expression {
    return this.nested(() => this.parseConditional());
  }

  private parseConditional(): Expression {
    const condition = this.parseBinary(0);
    if (this.peek().kind !== "?") return condition;
    this.next();
    const trueExpr = this.parseExpr();
    this.expect(
      ":",
      "missing-colon",
      "Missing false expression in conditional",
      'A conditional is written "condition ? true_value : false_value"; the ":" is missing.',
    );
    const falseExpr = this.parseExpr();
    return { kind: "Conditional", condition, trueExpr, falseExpr, range: this.span(condition, falseExpr) };
  }

  private parseBinary(level: number): Expression {
    if (level === BINARY_LEVELS.length) return this.parseUnary();
    const ops = BINARY_LEVELS[level]!;
    let left = this.parseBinary(level + 1);
    for (;;) {
      const op = this.peek().kind as BinaryOp;
      if (!ops.includes(op)) return left;
      this.next();
      const right = this.parseBinary(level + 1);
      left = { kind: "Binary", op, left, right, range: this.span(left, right) };
    }
  }

  private parseUnary(): Expression {
    const tok = this.peek();
    if (tok.kind === "-" || tok.kind === "!") {
      this.next();
      const operand = this.nested(() => this.parseUnary());
      return { kind: "Unary", op: tok.kind, operand, range: this.span(this.range(tok), operand) };
    }
    return this.parsePostfix();
  }

  private parsePostfix(): Expression {
    let expr = this.parseTerm();
    for (;;) {
      const tok = this.peek();
      if (tok.kind === ".") {
        const after = this.peek(1);
        if (after.kind === "*") {
          this.next();
          const star = this.next();
          expr = this.parseSplat(expr, this.src.range(tok.start, star.end), false);
          continue;
        }
        expr = this.parseDotStep(expr);
      } else if (tok.kind === "[") {
        if (this.peek(1).kind === "*") {
          this.next();
          this.next();
          const close = this.expect("]", "invalid-splat", "Invalid splat", 'A full splat is written "[*]".');
          expr = this.parseSplat(expr, this.src.range(tok.start, close.end), true);
          continue;
        }
        expr = this.parseIndexStep(expr);
      } else {
        return expr;
      }
    }
  }

  /** `.name` or the legacy `.0` index, applied to `on`. */
  private parseDotStep(on: Expression): Expression {
    this.next(); // "."
    const tok = this.next();
    if (tok.kind === "ident") {
      return {
        kind: "GetAttr",
        object: on,
        name: this.text(tok),
        nameRange: this.range(tok),
        range: this.span(on, this.range(tok)),
      };
    }
    if (tok.kind === "number") {
      const raw = this.text(tok);
      if (!/^[0-9]+(\.[0-9]+)?$/.test(raw)) {
        this.fail(
          tok,
          "invalid-legacy-index",
          "Invalid legacy index",
          'A legacy index such as ".0" must be a whole number.',
        );
      }
      // `a.0.1` reaches us as the single number token "0.1".
      let result = on;
      let offset = tok.start;
      for (const piece of raw.split(".")) {
        const r = this.src.range(offset, offset + piece.length);
        result = {
          kind: "Index",
          collection: result,
          key: { kind: "Number", raw: piece, value: Number(piece), range: r },
          legacy: true,
          range: this.span(on, r),
        };
        offset += piece.length + 1;
      }
      return result;
    }
    this.fail(
      tok,
      "invalid-attribute-name",
      "Invalid attribute name",
      `An attribute name is required after a dot, but found ${this.describe(tok)}.`,
    );
  }

  private parseIndexStep(on: Expression): Expression {
    const open = this.next(); // "["
    return this.inside(open, false, () => {
      const key = this.parseExpr();
      const close = this.expect(
        "]",
        "missing-bracket",
        "Missing close bracket on index",
        'The index key must be followed by "]".',
      );
      return { kind: "Index", collection: on, key, legacy: false, range: this.span(on, this.range(close)) };
    });
  }

  /** Collects the traversal steps that apply to each element of a splat. */
  private parseSplat(source: Expression, marker: Range, full: boolean): Expression {
    let each: Expression = { kind: "SplatItem", range: marker };
    let end = marker;
    for (;;) {
      const tok = this.peek();
      const after = this.peek(1);
      if (tok.kind === "." && after.kind === "ident") {
        each = this.parseDotStep(each);
      } else if (full && tok.kind === "." && after.kind === "number") {
        each = this.parseDotStep(each);
      } else if (full && tok.kind === "[" && after.kind !== "*") {
        each = this.parseIndexStep(each);
      } else {
        break;
      }
      end = each.range;
    }
    return { kind: "Splat", source, each, full, range: this.span(source, end) };
  }

  private parseTerm(): Expression {
    const tok = this.peek();
    switch (tok.kind) {
      case "number": {
        this.next();
        const raw = this.text(tok);
        return { kind: "Number", raw, value: Number(raw), range: this.range(tok) };
      }
      case "ident": {
        const after = this.peek(1);
        if (after.kind === "(" || after.kind === "::") return this.parseCall();
        this.next();
        const name = this.text(tok);
        const range = this.range(tok);
        if (name === "true" || name === "false") return { kind: "Bool", value: name === "true", range };
        if (name === "null") return { kind: "Null", range };
        return { kind: "Variable", name, range };
      }
      case "(": {
        this.next();
        return this.inside(tok, false, () => {
          const expr = this.parseExpr();
          const close = this.expect(
            ")",
            "missing-paren",
            "Unbalanced parentheses",
            `Expected ")" to close the parenthesis opened at ${pos(this.range(tok))}, but found ${this.describe(this.peek())}.`,
          );
          return { kind: "Parens", expr, range: this.src.range(tok.start, close.end) };
        });
      }
      case "[":
        return this.nested(() => this.parseTuple());
      case "{":
        return this.nested(() => this.parseObject());
      case "oquote":
      case "oheredoc":
        return this.nested(() => this.parseTemplate());
      default:
        return this.fail(
          tok,
          "invalid-expression",
          "Invalid expression",
          `Expected the start of an expression, but found ${this.describe(tok)}.`,
        );
    }
  }

  private parseCall(): Expression {
    const first = this.next();
    let name = this.text(first);
    let last = first;
    while (this.peek().kind === "::") {
      this.next();
      const part = this.next();
      if (part.kind !== "ident") {
        this.fail(
          part,
          "invalid-function-name",
          "Invalid function name",
          'A namespaced function name is written "namespace::name".',
        );
      }
      name += `::${this.text(part)}`;
      last = part;
    }
    const open = this.peek();
    if (open.kind !== "(") {
      this.fail(
        open,
        "missing-call-arguments",
        "Missing function call",
        `"${name}" is a function name, so it must be followed by "(".`,
      );
    }
    this.next();
    return this.inside(open, false, () => {
      const args: Expression[] = [];
      let expandFinal = false;
      while (this.peek().kind !== ")") {
        args.push(this.parseExpr());
        const sep = this.peek();
        if (sep.kind === "...") {
          this.next();
          expandFinal = true;
          const close = this.peek();
          if (close.kind !== ")") {
            this.fail(
              close,
              "missing-paren",
              "Missing closing parenthesis",
              'An argument expanded with "..." must be the last one, followed by ")".',
            );
          }
          break;
        }
        if (sep.kind === ",") {
          this.next();
          continue;
        }
        if (sep.kind !== ")") {
          this.fail(
            sep,
            "missing-argument-separator",
            "Missing argument separator",
            `Function arguments are separated by commas; found ${this.describe(sep)}.`,
          );
        }
      }
      const close = this.next();
      return {
        kind: "FunctionCall",
        name,
        nameRange: this.src.range(first.start, last.end),
        args,
        expandFinal,
        openParenRange: this.range(open),
        closeParenRange: this.range(close),
        range: this.src.range(first.start, close.end),
      };
    });
  }

  private parseTuple(): Expression {
    const open = this.next();
    return this.inside(open, false, () => {
      if (this.isForKeyword(this.peek())) return this.parseFor(open, false);
      const items: Expression[] = [];
      while (this.peek().kind !== "]") {
        items.push(this.parseExpr());
        const sep = this.peek();
        if (sep.kind === ",") {
          this.next();
        } else if (sep.kind !== "]") {
          this.fail(
            sep,
            "missing-item-separator",
            "Missing item separator",
            `Tuple items are separated by commas; found ${this.describe(sep)}.`,
          );
        }
      }
      const close = this.next();
      return { kind: "Tuple", items, range: this.src.range(open.start, close.end) };
    });
  }

  private parseObject(): Expression {
    const open = this.next();
    // `for` directly after "{" (same line) always starts a for-expression.
    if (this.isForKeyword(this.peekRaw())) return this.inside(open, false, () => this.parseFor(open, true));
    return this.inside(open, true, () => {
      const items: ObjectItem[] = [];
      for (;;) {
        while (this.peek().kind === "newline") this.next();
        if (this.peek().kind === "}") break;
        const key = this.parseExpr();
        const eq = this.peek();
        if (eq.kind !== "=" && eq.kind !== ":") {
          this.fail(
            eq,
            "missing-key-value-separator",
            "Missing key/value separator",
            `An object item is written "key = value" or "key: value"; found ${this.describe(eq)} after the key.`,
          );
        }
        this.next();
        const value = this.parseExpr();
        items.push({ kind: "ObjectItem", key, value, range: this.span(key, value) });
        const sep = this.peek();
        if (sep.kind === "," || sep.kind === "newline") {
          this.next();
        } else if (sep.kind !== "}") {
          this.fail(
            sep,
            "missing-attribute-separator",
            "Missing attribute separator",
            `Object items are separated by commas or newlines; found ${this.describe(sep)}.`,
          );
        }
      }
      const close = this.next();
      return { kind: "Object", items, range: this.src.range(open.start, close.end) };
    });
  }

  private isForKeyword(tok: Token): boolean {
    return tok.kind === "ident" && this.text(tok) === "for";
  }

  /** `for k, v in coll : ...` after "[" or "{"; newlines are not significant. */
  private parseFor(open: Token, object: boolean): Expression {
    const closer = object ? "}" : "]";
    const invalid = (tok: Token, detail: string): never =>
      this.fail(tok, "invalid-for-expression", "Invalid 'for' expression", detail);
    this.next(); // "for"
    const [keyVar, valueVar] = this.parseForVars(invalid);
    const collection = this.parseExpr();
    const colon = this.peek();
    if (colon.kind !== ":")
      invalid(colon, `Expected ":" after the collection, but found ${this.describe(colon)}.`);
    this.next();
    let keyExpr: Expression | undefined;
    if (object) {
      keyExpr = this.parseExpr();
      const arrow = this.peek();
      if (arrow.kind !== "=>") {
        invalid(
          arrow,
          `An object 'for' expression needs "key => value"; expected "=>" but found ${this.describe(arrow)}.`,
        );
      }
      this.next();
    }
    const valueExpr = this.parseExpr();
    let grouping = false;
    if (this.peek().kind === "...") {
      const dots = this.next();
      if (!object)
        invalid(dots, "The grouping marker \"...\" is only allowed in an object 'for' expression.");
      grouping = true;
    }
    let condition: Expression | undefined;
    const ifTok = this.peek();
    if (ifTok.kind === "ident" && this.text(ifTok) === "if") {
      this.next();
      condition = this.parseExpr();
    }
    const close = this.peek();
    if (close.kind !== closer)
      invalid(close, `Expected "${closer}" to end the 'for' expression, but found ${this.describe(close)}.`);
    this.next();
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
      range: this.src.range(open.start, close.end),
    };
  }

  /** `v in` or `k, v in`; returns [keyVar, valueVar]. */
  private parseForVars(invalid: (tok: Token, detail: string) => never): [string | undefined, string] {
    const first = this.next();
    if (first.kind !== "ident")
      invalid(first, `Expected a variable name after "for", but found ${this.describe(first)}.`);
    let keyVar: string | undefined;
    let valueVar = this.text(first);
    if (this.peek().kind === ",") {
      this.next();
      const second = this.next();
      if (second.kind !== "ident")
        invalid(second, `Expected a second variable name after ",", but found ${this.describe(second)}.`);
      keyVar = valueVar;
      valueVar = this.text(second);
    }
    const inTok = this.next();
    if (inTok.kind !== "ident" || this.text(inTok) !== "in") {
      invalid(inTok, `Expected "in" after the variable names, but found ${this.describe(inTok)}.`);
    }
    return [keyVar, valueVar];
  }

  // ---- templates -------------------------------------------------------------

  private parseTemplate(): Template | TemplateWrap {
    const open = this.next();
    const heredoc = open.kind === "oheredoc";
    const closer: TokenKind = heredoc ? "cheredoc" : "cquote";
    const items: FlatItem[] = [];
    let close: Token;
    // Template text is lexed separately, so newline significance is irrelevant
    // here except inside `${ }` / `%{ }`, where newlines are ignored.
    for (;;) {
      const tok = this.peekRaw();
      if (tok.kind === closer) {
        close = tok;
        this.pos++;
        break;
      }
      if (tok.kind === "lit") {
        this.pos++;
        items.push({ kind: "lit", value: tok.value!, range: this.range(tok) });
      } else if (tok.kind === "${") {
        this.pos++;
        items.push(this.inside(tok, false, () => this.parseInterpolation(tok)));
      } else if (tok.kind === "%{") {
        this.pos++;
        items.push(this.inside(tok, false, () => this.parseDirective(tok)));
      } else {
        this.fail(
          tok,
          "unterminated-template",
          "Unterminated template",
          `Expected the end of the ${heredoc ? "heredoc" : "string"}, but found ${this.describe(tok)}.`,
        );
      }
    }
    if (heredoc && open.indented) dedentHeredoc(items);
    const merged = mergeLiterals(items);
    applyStripMarkers(merged);
    const range = this.src.range(open.start, close.end);
    if (!heredoc && merged.length === 1 && merged[0]!.kind === "interp") {
      return { kind: "TemplateWrap", expr: merged[0].expr, range };
    }
    const parts = nestTemplate(merged, this.diagnostics);
    return {
      kind: "Template",
      parts,
      ...(heredoc ? { heredoc: { marker: open.value!, indented: open.indented === true } } : {}),
      range,
    };
  }

  private parseInterpolation(open: Token): FlatItem {
    const expr = this.parseExpr();
    const end = this.expectSeqEnd("interpolation");
    return {
      kind: "interp",
      expr,
      stripLeft: open.strip === true,
      stripRight: end.strip === true,
      range: this.src.range(open.start, end.end),
    };
  }

  private expectSeqEnd(what: string): Token {
    const end = this.peek();
    if (end.kind !== "seqend") {
      this.fail(
        end,
        "missing-template-close",
        `Unclosed template ${what}`,
        `Expected "}" to close the template ${what}, but found ${this.describe(end)}.`,
      );
    }
    return this.next();
  }

  private parseDirective(open: Token): FlatItem {
    const kw = this.peek();
    const keyword = kw.kind === "ident" ? this.text(kw) : "";
    let fields: Pick<Directive, "keyword" | "condition" | "keyVar" | "valueVar" | "collection">;
    switch (keyword) {
      case "if":
        this.next();
        fields = { keyword, condition: this.parseExpr() };
        break;
      case "for": {
        this.next();
        const [keyVar, valueVar] = this.parseForVars((tok, detail) =>
          this.fail(tok, "invalid-for-directive", "Invalid 'for' directive", detail),
        );
        fields = {
          keyword,
          ...(keyVar === undefined ? {} : { keyVar }),
          valueVar,
          collection: this.parseExpr(),
        };
        break;
      }
      case "else":
      case "endif":
      case "endfor":
        this.next();
        fields = { keyword };
        break;
      default:
        return this.fail(
          kw,
          "invalid-directive",
          "Invalid template directive",
          'A "%{" sequence must start with one of the keywords if, else, endif, for or endfor. To write a literal "%{", escape it as "%%{".',
        );
    }
    const end = this.expectSeqEnd("directive");
    return {
      kind: "directive",
      ...fields,
      stripLeft: open.strip === true,
      stripRight: end.strip === true,
      range: this.src.range(open.start, end.end),
    };
  }
}

function pos(r: Range): string {
  return `${r.start.line}:${r.start.column}`;
}
