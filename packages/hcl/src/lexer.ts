// The scanner: turns source text into tokens the way hcl/v2's scanner does, so
// that the parser sees the same token boundaries and reports problems at the
// same places. HCL's lexical grammar is modal (normal code, quoted templates,
// heredoc templates, and code nested in a template through `${`/`%{`), so the
// lexer keeps a stack of modes. Template literal text is decoded here; an
// invalid escape is attached to its token and reported when the parser reads
// it, as HCL does. Characters that are no token at all are reported here.

import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import { IDENT_CONTINUE, IDENT_START } from "./ident-table.ts";
import type { SourceFile } from "./source.ts";

export type TokenKind =
  | "newline" // a newline, or a line comment together with the newline ending it
  | "eof"
  | "ident"
  | "number"
  | "oquote" // opening `"` of a quoted template
  | "cquote" // closing `"`
  | "oheredoc" // `<<EOT` / `<<-EOT` plus its newline
  | "cheredoc" // the closing marker line (without its newline)
  | "lit" // literal template text
  | "qnewline" // a line break inside a quoted string (an error)
  | "${" // template interpolation start (`${` or `${~`)
  | "%{" // template directive start (`%{` or `%{~`)
  | "seqend" // `}` or `~}` closing an interpolation or directive
  | "invalid" // a character that is no token; already reported
  | "{"
  | "}"
  | "["
  | "]"
  | "("
  | ")"
  | ","
  | "."
  | "..."
  | "="
  | "=>"
  | "?"
  | ":"
  | "::"
  | "+"
  | "-"
  | "*"
  | "/"
  | "%"
  | "&&"
  | "||"
  | "!"
  | "=="
  | "!="
  | "<"
  | ">"
  | "<="
  | ">=";

export interface Token {
  kind: TokenKind;
  /** UTF-16 index of the first character. */
  start: number;
  /** UTF-16 index just past the last character. */
  end: number;
  /** Decoded text of a `lit` token; the marker name of an `oheredoc` token. */
  value?: string;
  /** `${~`, `%{~` or `~}`: strip adjacent whitespace. */
  strip?: boolean;
  /** `<<-`: an indented heredoc. */
  indented?: boolean;
  /** Invalid escape sequences in a `lit` token, reported when the parser reads it. */
  problems?: Diagnostic[];
}

type Mode =
  | { kind: "code"; braces: number; inTemplate: boolean }
  | { kind: "quoted" }
  | { kind: "heredoc"; marker: string; atLineStart: boolean };

// Identifier characters are hcl/v2's (Unicode 9.0), not the engine's newer tables: a name
// such as "a\u200db" must be refused here as it is there (see ident-table.ts).
const IDENT = new RegExp(`[${IDENT_START}][${IDENT_CONTINUE}]*`, "uy");
// A digit, then digits, dots and exponents, never ending with a dot ("1.2.3" is
// one token, rejected later as a number).
const NUMBER = /[0-9](?:[0-9.]|[eE][+-]?[0-9])*/y;
const HEREDOC_OPEN = new RegExp(`<<(-?)([${IDENT_START}][${IDENT_CONTINUE}]*)\\r?\\n`, "uy");

// What Go's unicode.IsSpace accepts (JavaScript's \s differs on U+0085 and U+FEFF).
export const GO_SPACE =
  "\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
const PLACEHOLDER = {
  filename: "",
  start: { line: 1, column: 1, byte: 0 },
  end: { line: 1, column: 1, byte: 0 },
};
const TRIM_SPACE = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, "g");

// Longest first, so "..." wins over "." and "==" over "=".
const PUNCT: readonly TokenKind[] = [
  "...",
  "::",
  "&&",
  "||",
  "==",
  "!=",
  "<=",
  ">=",
  "=>",
  ...("[](),.=?:+-*/%!<>".split("") as TokenKind[]),
];

export interface LexResult {
  tokens: Token[];
  diagnostics: Diagnostic[];
}

/** Tokenizes a whole file. The last token is always `eof`. */
export function lex(src: SourceFile): LexResult {
  return new Lexer(src).run();
}

class Lexer {
  private readonly src: SourceFile;
  private readonly text: string;
  private i = 0;
  private readonly modes: Mode[] = [{ kind: "code", braces: 0, inTemplate: false }];
  private readonly tokens: Token[] = [];
  private readonly diagnostics: Diagnostic[] = [];
  /** Diagnostics whose range is resolved once all token boundaries are known. */
  private readonly pending: Array<[Diagnostic, number, number]> = [];
  private readonly breaks: number[] = [];
  /** How many times each kind of repeated character problem was reported (HCL caps some). */
  private readonly told = new Map<string, number>();

  constructor(src: SourceFile) {
    this.src = src;
    this.text = src.text;
    if (this.text.startsWith("\uFEFF")) this.i = 1;
  }

  run(): LexResult {
    while (this.i < this.text.length) {
      const mode = this.modes[this.modes.length - 1]!;
      if (mode.kind === "code") this.code(mode);
      else if (mode.kind === "quoted") this.quoted();
      else this.heredoc(mode);
    }
    // Whatever is still open ends with the file; the parser reports it there.
    this.emit("eof", this.text.length, this.text.length);
    this.src.setBreaks(this.breaks);
    for (const [d, start, end] of this.pending) d.subject = this.src.range(start, end);
    return { tokens: this.tokens, diagnostics: this.diagnostics };
  }

  private emit(kind: TokenKind, start: number, end: number, extra?: Partial<Token>): Token {
    const tok: Token = { kind, start, end, ...extra };
    this.tokens.push(tok);
    this.breaks.push(start, end);
    return tok;
  }

  private report(code: string, summary: string, detail: string, start: number, end: number): void {
    this.diagnostics.push(this.later(errorDiag(code, summary, detail, PLACEHOLDER), start, end));
  }

  /** Registers `d` to get the range `[start, end)` once positions can be computed. */
  private later(d: Diagnostic, start: number, end: number): Diagnostic {
    this.pending.push([d, start, end]);
    return d;
  }

  private startsWith(s: string, at = this.i): boolean {
    return this.text.startsWith(s, at);
  }

  // ---- normal code ---------------------------------------------------------

  private code(mode: Mode & { kind: "code" }): void {
    const text = this.text;
    const start = this.i;
    const c = text[start]!;

    if (c === " " || c === "\t") {
      this.i++;
      return;
    }
    if (c === "\n" || (c === "\r" && text[start + 1] === "\n")) {
      this.i += c === "\n" ? 1 : 2;
      this.emit("newline", start, this.i);
      return;
    }
    if (c === "#" || this.startsWith("//")) {
      // A line comment takes its newline with it and then stands for that newline.
      const nl = text.indexOf("\n", start);
      if (nl < 0) {
        this.i = text.length;
        return;
      }
      this.i = nl + 1;
      this.emit("newline", start, this.i);
      return;
    }
    if (this.startsWith("/*")) {
      const close = text.indexOf("*/", start + 2);
      if (close >= 0) {
        this.i = close + 2;
        this.breaks.push(start, this.i);
        return;
      }
      // hcl/v2 scans an unclosed "/*" as the operators "/" and "*"; we say what it is.
      this.report(
        "unterminated-comment",
        "Unterminated comment",
        'This comment has no closing "*/".',
        start,
        start + 2,
      );
      this.i = start + 1;
      this.emit("/", start, start + 1);
      return;
    }
    if (c === '"') {
      this.i++;
      this.emit("oquote", start, this.i);
      this.modes.push({ kind: "quoted" });
      return;
    }
    if (c === "<" && text[start + 1] === "<") {
      HEREDOC_OPEN.lastIndex = start;
      const m = HEREDOC_OPEN.exec(text);
      if (m !== null) {
        this.i = start + m[0].length;
        this.emit("oheredoc", start, this.i, { value: m[2]!, indented: m[1] === "-" });
        this.modes.push({ kind: "heredoc", marker: m[2]!, atLineStart: true });
        return;
      }
    }
    if (c >= "0" && c <= "9") {
      NUMBER.lastIndex = start;
      let raw = NUMBER.exec(text)![0];
      while (raw.endsWith(".")) raw = raw.slice(0, -1);
      this.i = start + raw.length;
      this.emit("number", start, this.i);
      return;
    }
    IDENT.lastIndex = start;
    const ident = IDENT.exec(text);
    if (ident !== null) {
      this.i = start + ident[0].length;
      this.emit("ident", start, this.i);
      return;
    }
    if (c === "{") {
      mode.braces++;
      this.i++;
      this.emit("{", start, this.i);
      return;
    }
    if (c === "}" || (c === "~" && text[start + 1] === "}")) {
      const strip = c === "~";
      this.i += strip ? 2 : 1;
      if (mode.inTemplate && mode.braces === 0) {
        this.emit("seqend", start, this.i, { strip });
        this.modes.pop();
        return;
      }
      // Like hcl/v2, "~}" is always the end of a template sequence, so that a
      // "~}" closing an ordinary brace is caught by the parser.
      if (mode.braces > 0) mode.braces--;
      this.emit(strip ? "seqend" : "}", start, this.i, strip ? { strip } : {});
      return;
    }
    const p = PUNCT.find((op) => this.startsWith(op));
    if (p !== undefined) {
      this.i = start + p.length;
      this.emit(p, start, this.i);
      return;
    }
    this.invalidCharacter(start);
  }

  /**
   * hcl/v2 reports some repeated characters only a few times: the first four
   * bitwise operators, the first semicolon, and the first and third backtick
   * or apostrophe (the third being the likely start of a second pair).
   */
  private tell(kind: "bitwise" | "semicolon" | "backtick" | "apostrophe"): boolean {
    const n = this.told.get(kind) ?? 0;
    if (kind === "bitwise" || kind === "semicolon") {
      this.told.set(kind, n + 1);
      return n < (kind === "bitwise" ? 4 : 1);
    }
    if (n <= 2) this.told.set(kind, n + 1);
    return n % 2 === 0;
  }

  private invalidCharacter(start: number): void {
    const cp = this.text.codePointAt(start)!;
    const c = String.fromCodePoint(cp);
    this.i = start + c.length;
    this.emit("invalid", start, this.i);
    const report = (summary: string, detail: string) =>
      this.report("invalid-character", summary, detail, start, this.i);
    switch (c) {
      case "&":
      case "|":
      case "^":
      case "~":
        if (this.tell("bitwise")) {
          const hint = {
            "&": ' Logical AND is written "&&".',
            "|": ' Logical OR is written "||".',
            "~": ' Logical NOT is written "!".',
            "^": "",
          }[c];
          report("Unsupported operator", `Bitwise operators do not exist in HCL.${hint}`);
        }
        return;
      case "`":
        if (this.tell("backtick")) {
          report(
            "Invalid character",
            'The "`" character is not valid. For a multi-line string, use a heredoc ("<<EOT").',
          );
        }
        return;
      case "'":
        if (this.tell("apostrophe")) {
          report("Invalid character", 'Strings are written between double quotes ("), not single quotes.');
        }
        return;
      case ";":
        if (this.tell("semicolon")) {
          report(
            "Invalid character",
            'The ";" character is not valid. Arguments and blocks are separated by newlines, collection items by commas.',
          );
        }
        return;
      case "\u201c":
      case "\u201d":
        report("Invalid character", 'Curly quotes are not valid here; use a straight double quote (").');
        return;
      case "\r":
        report("Invalid character", 'A carriage return is only allowed as part of a "\\r\\n" line ending.');
        return;
      default:
        report(
          "Invalid character",
          cp < 0x20 || cp === 0x7f
            ? `The control character U+${hex(cp)} cannot appear here.`
            : `The character "${c}" is not used in HCL syntax.`,
        );
    }
  }

  // ---- templates -----------------------------------------------------------

  /** Starts `${` or `%{` (optionally with `~`) at the current position, if present. */
  private templateSequence(): boolean {
    const start = this.i;
    const two = this.text.slice(start, start + 2);
    if (two !== "${" && two !== "%{") return false;
    const strip = this.text[start + 2] === "~";
    this.i = start + (strip ? 3 : 2);
    this.emit(two, start, this.i, { strip });
    this.modes.push({ kind: "code", braces: 0, inTemplate: true });
    return true;
  }

  /** A lone `$` or `%`, or the escapes `$${` and `%%{`, as hcl/v2 scans them: a token of their own. */
  private sigil(at: number): boolean {
    const ch = this.text[at];
    if (ch !== "$" && ch !== "%") return false;
    if (at + 1 >= this.text.length) {
      // hcl/v2's scanner cannot finish a "$" or "%" at the very end of the input.
      this.invalidCharacter(at);
      return true;
    }
    if (this.text[at + 1] === ch && this.text[at + 2] === "{") {
      this.i = at + 3;
      this.emit("lit", at, this.i, { value: `${ch}{` });
    } else {
      this.i = at + 1;
      this.emit("lit", at, this.i, { value: ch });
    }
    return true;
  }

  private quoted(): void {
    const text = this.text;
    const start = this.i;
    const c = text[start]!;
    if (c === '"') {
      this.i++;
      this.emit("cquote", start, this.i);
      this.modes.pop();
      return;
    }
    if (this.templateSequence() || this.sigil(start)) return;
    if (c === "\n" || c === "\r") {
      let j = start;
      while (text[j] === "\n" || text[j] === "\r") j++;
      this.i = j;
      this.emit("qnewline", start, j);
      this.report(
        "multiline-string",
        "Invalid multi-line string",
        'A quoted string cannot span lines. Write "\\n" for a newline, or use a heredoc ("<<EOT") for multi-line text.',
        start,
        j,
      );
      return;
    }
    if (c === "\\" && (start + 1 >= text.length || text[start + 1] === "\n" || text[start + 1] === "\r")) {
      this.i = start + 1;
      this.emit("invalid", start, this.i);
      this.report(
        "invalid-character",
        "Invalid character",
        'A backslash at the end of a line does not continue the string; write "\\\\" for a literal backslash.',
        start,
        this.i,
      );
      return;
    }
    let value = "";
    const problems: Diagnostic[] = [];
    let j = start;
    while (j < text.length) {
      const ch = text[j]!;
      if (ch === '"' || ch === "\n" || ch === "\r" || ch === "$" || ch === "%") break;
      if (ch === "\\") {
        if (j + 1 >= text.length || text[j + 1] === "\n" || text[j + 1] === "\r") break;
        const [decoded, next] = this.escape(j, problems);
        value += decoded;
        j = next;
        continue;
      }
      value += ch;
      j++;
    }
    this.i = j;
    this.emit("lit", start, j, problems.length > 0 ? { value, problems } : { value });
  }

  /** Decodes the escape sequence starting with the backslash at `at`. */
  private escape(at: number, problems: Diagnostic[]): [string, number] {
    const text = this.text;
    const sel = text[at + 1]!;
    const problem = (detail: string, end: number) =>
      problems.push(
        this.later(errorDiag("invalid-escape", "Invalid escape sequence", detail, PLACEHOLDER), at, end),
      );
    switch (sel) {
      case "n":
        return ["\n", at + 2];
      case "r":
        return ["\r", at + 2];
      case "t":
        return ["\t", at + 2];
      case '"':
        return ['"', at + 2];
      case "\\":
        return ["\\", at + 2];
      case "u":
      case "U": {
        const n = sel === "u" ? 4 : 8;
        let end = at + 2;
        while (end < at + 2 + n && /[0-9A-Fa-f]/.test(text[end] ?? "")) end++;
        if (end - at - 2 !== n) {
          problem(`"\\${sel}" must be followed by exactly ${n} hexadecimal digits.`, end);
          return [text.slice(at, end), end];
        }
        const cp = Number.parseInt(text.slice(at + 2, end), 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          problem(`U+${hex(cp)} is not a Unicode scalar value, so it cannot appear in a string.`, end);
          return [text.slice(at, end), end];
        }
        return [String.fromCodePoint(cp), end];
      }
      default: {
        const ch = String.fromCodePoint(text.codePointAt(at + 1)!);
        problem(
          `"\\${ch}" is not an escape sequence. The escapes are \\n \\r \\t \\" \\\\ \\uNNNN and \\UNNNNNNNN; write "\\\\" for a literal backslash.`,
          at + 1 + ch.length,
        );
        return [ch, at + 1 + ch.length];
      }
    }
  }

  private heredoc(mode: Mode & { kind: "heredoc" }): void {
    const text = this.text;
    const start = this.i;
    if (this.templateSequence()) {
      mode.atLineStart = false;
      return;
    }
    if (this.sigil(start)) {
      mode.atLineStart = false;
      return;
    }
    // A run of text up to the end of the line or the next "$" / "%"; backslashes are literal.
    let j = start;
    while (j < text.length) {
      const ch = text[j]!;
      if (ch === "\n" || ch === "$" || ch === "%") break;
      if (ch === "\r") break;
      j++;
    }
    if (text[j] === "\r" && text[j + 1] !== "\n") {
      // hcl/v2's scanner cannot go on after a lone carriage return in a heredoc:
      // the rest of the input becomes one invalid token.
      if (j > start) {
        this.emit("lit", start, j, { value: text.slice(start, j) });
        mode.atLineStart = false;
      }
      this.i = text.length;
      this.emit("invalid", j, this.i);
      this.report(
        "invalid-character",
        "Invalid character",
        'A carriage return is only allowed as part of a "\\r\\n" line ending.',
        j,
        this.i,
      );
      return;
    }
    const eol = text[j] === "\n" ? 1 : text[j] === "\r" ? 2 : 0;
    if (eol > 0 && mode.atLineStart && text.slice(start, j).replace(TRIM_SPACE, "") === mode.marker) {
      // The closing marker; its newline ends the heredoc's line in normal code.
      this.i = j;
      this.emit("cheredoc", start, j);
      this.modes.pop();
      return;
    }
    this.i = j + eol;
    mode.atLineStart = eol > 0;
    this.emit("lit", start, this.i, { value: text.slice(start, this.i) });
  }
}

function hex(cp: number): string {
  return cp.toString(16).toUpperCase().padStart(4, "0");
}
