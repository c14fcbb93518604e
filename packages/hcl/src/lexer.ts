// The scanner: turns source text into tokens. HCL's lexical grammar is modal
// (normal code, quoted templates, heredoc templates, and code nested in a
// template through `${`/`%{`), so the lexer keeps a stack of modes. Template
// literal text is decoded here (escapes, `$${`, `%%{`) so that an invalid
// escape is reported at its exact position.

import { type Diagnostic, errorDiag } from "./diagnostics.ts";
import type { SourceFile } from "./source.ts";

export type TokenKind =
  | "newline"
  | "eof"
  | "ident"
  | "number"
  | "oquote" // opening `"` of a quoted template
  | "cquote" // closing `"`
  | "oheredoc" // `<<EOT` / `<<-EOT` plus its newline
  | "cheredoc" // the closing marker line
  | "lit" // literal template text
  | "${" // template interpolation start (`${` or `${~`)
  | "%{" // template directive start (`%{` or `%{~`)
  | "seqend" // `}` or `~}` closing an interpolation or directive
  | "invalid" // something already reported by the lexer
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
}

type Mode =
  | { kind: "code"; braces: number; inTemplate: boolean }
  | { kind: "quoted" }
  | { kind: "heredoc"; marker: string; atLineStart: boolean; opener: Token };

const IDENT = /[\p{ID_Start}_][\p{ID_Continue}-]*/uy;
const NUMBER = /[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const HEREDOC_OPEN = /<<(-?)([\p{ID_Start}_][\p{ID_Continue}-]*)\r?\n/uy;
const INTERP_OPEN = "${";

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
  ...("{}[](),.=?:+-*/%!<>".split("") as TokenKind[]),
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
    // Close whatever templates are still open so the parser sees a balanced stream.
    for (let m = this.modes.pop(); m !== undefined; m = this.modes.pop()) {
      if (m.kind === "quoted") {
        this.report(
          "unterminated-string",
          "Unterminated template string",
          "This string has no closing quote.",
          this.i,
          this.i,
        );
        this.emit("cquote", this.i, this.i);
      } else if (m.kind === "heredoc") {
        this.unterminatedHeredoc(m);
      }
    }
    this.emit("eof", this.text.length, this.text.length);
    return { tokens: this.tokens, diagnostics: this.diagnostics };
  }

  private emit(kind: TokenKind, start: number, end: number, extra?: Partial<Token>): Token {
    const tok: Token = { kind, start, end, ...extra };
    this.tokens.push(tok);
    return tok;
  }

  private report(code: string, summary: string, detail: string, start: number, end: number): void {
    this.diagnostics.push(errorDiag(code, summary, detail, this.src.range(start, end)));
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
      // A line comment ends before its newline, which still counts as one.
      let j = text.indexOf("\n", start);
      if (j < 0) j = text.length;
      else if (text[j - 1] === "\r") j--;
      this.i = Math.max(j, start + 1);
      return;
    }
    if (this.startsWith("/*")) {
      const close = text.indexOf("*/", start + 2);
      if (close < 0) {
        this.report(
          "unterminated-comment",
          "Unterminated comment",
          'This comment has no closing "*/".',
          start,
          start + 2,
        );
        this.i = text.length;
      } else {
        this.i = close + 2;
      }
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
        const opener = this.emit("oheredoc", start, this.i, { value: m[2]!, indented: m[1] === "-" });
        this.modes.push({ kind: "heredoc", marker: m[2]!, atLineStart: true, opener });
        return;
      }
    }
    if (c >= "0" && c <= "9") {
      NUMBER.lastIndex = start;
      const m = NUMBER.exec(text)!;
      this.i = start + m[0].length;
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
    if (mode.inTemplate && mode.braces === 0 && (c === "}" || (c === "~" && text[start + 1] === "}"))) {
      this.i += c === "}" ? 1 : 2;
      this.emit("seqend", start, this.i, { strip: c === "~" });
      this.modes.pop();
      return;
    }
    const p = PUNCT.find((op) => this.startsWith(op));
    if (p !== undefined) {
      if (p === "{") mode.braces++;
      else if (p === "}" && mode.braces > 0) mode.braces--;
      this.i = start + p.length;
      this.emit(p, start, this.i);
      return;
    }
    this.invalidCharacter(start);
  }

  private invalidCharacter(start: number): void {
    const cp = this.text.codePointAt(start)!;
    const c = String.fromCodePoint(cp);
    this.i = start + c.length;
    let detail: string;
    if (c === "'") detail = 'Strings are written between double quotes ("), not single quotes.';
    else if (c === "&") detail = 'Bitwise operators do not exist in HCL; logical AND is written "&&".';
    else if (c === "|") detail = 'Bitwise operators do not exist in HCL; logical OR is written "||".';
    else if (c === "~")
      detail =
        'A "~" strip marker may only appear right after "' +
        INTERP_OPEN +
        '" or "%{", or right before the closing "}".';
    else if (c === "\r") detail = 'A carriage return is only allowed as part of a "\\r\\n" line ending.';
    else if (cp < 0x20 || cp === 0x7f) detail = `The control character U+${hex(cp)} cannot appear here.`;
    else detail = `The character "${c}" is not used in HCL syntax.`;
    this.report("invalid-character", "Invalid character", detail, start, this.i);
    this.emit("invalid", start, this.i);
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

  private quoted(): void {
    const text = this.text;
    const start = this.i;
    const c = text[start];
    if (c === '"') {
      this.i++;
      this.emit("cquote", start, this.i);
      this.modes.pop();
      return;
    }
    if (this.templateSequence()) return;
    if (c === "\n" || (c === "\r" && text[start + 1] === "\n")) {
      this.report(
        "multiline-string",
        "Invalid multi-line string",
        'A quoted string cannot span lines. Write "\\n" for a newline, or use a heredoc ("<<EOT") for multi-line text.',
        start,
        start,
      );
      // Close the string here so the rest of the file still parses.
      this.emit("cquote", start, start);
      this.modes.pop();
      return;
    }
    let value = "";
    let j = start;
    while (j < text.length) {
      const ch = text[j]!;
      if (ch === '"' || ch === "\n" || (ch === "\r" && text[j + 1] === "\n")) break;
      if ((ch === "$" || ch === "%") && text[j + 1] === "{") break;
      if ((ch === "$" || ch === "%") && text[j + 1] === ch && text[j + 2] === "{") {
        value += `${ch}{`;
        j += 3;
        continue;
      }
      if (ch === "\\") {
        const [decoded, next] = this.escape(j);
        value += decoded;
        j = next;
        continue;
      }
      value += ch;
      j++;
    }
    this.i = j;
    this.emit("lit", start, j, { value });
  }

  /** Decodes the escape sequence starting with the backslash at `at`. */
  private escape(at: number): [string, number] {
    const text = this.text;
    const sel = text[at + 1];
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
        const digits = text.slice(at + 2, at + 2 + n);
        if (!new RegExp(`^[0-9A-Fa-f]{${n}}$`).test(digits)) {
          let end = at + 2;
          while (end < at + 2 + n && /[0-9A-Fa-f]/.test(text[end] ?? "")) end++;
          this.report(
            "invalid-escape",
            "Invalid escape sequence",
            `"\\${sel}" must be followed by exactly ${n} hexadecimal digits.`,
            at,
            end,
          );
          return [text.slice(at, end), end];
        }
        const cp = Number.parseInt(digits, 16);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          this.report(
            "invalid-escape",
            "Invalid escape sequence",
            `U+${hex(cp)} is not a Unicode scalar value, so it cannot appear in a string.`,
            at,
            at + 2 + n,
          );
          return ["\uFFFD", at + 2 + n];
        }
        return [String.fromCodePoint(cp), at + 2 + n];
      }
      default: {
        if (sel === undefined || sel === "\n" || sel === "\r") {
          this.report(
            "invalid-escape",
            "Invalid escape sequence",
            "A backslash at the end of a line does not continue the string.",
            at,
            at + 1,
          );
          return ["\\", at + 1];
        }
        const ch = String.fromCodePoint(text.codePointAt(at + 1)!);
        this.report(
          "invalid-escape",
          "Invalid escape sequence",
          `"\\${ch}" is not an escape sequence. The escapes are \\n \\r \\t \\" \\\\ \\uNNNN and \\UNNNNNNNN; write "\\\\" for a literal backslash.`,
          at,
          at + 1 + ch.length,
        );
        return [`\\${ch}`, at + 1 + ch.length];
      }
    }
  }

  private heredoc(mode: Mode & { kind: "heredoc" }): void {
    const text = this.text;
    const start = this.i;
    if (mode.atLineStart) {
      let j = start;
      while (text[j] === " " || text[j] === "\t") j++;
      if (text.startsWith(mode.marker, j)) {
        const after = j + mode.marker.length;
        if (
          after === text.length ||
          text[after] === "\n" ||
          (text[after] === "\r" && text[after + 1] === "\n")
        ) {
          this.i = after;
          this.emit("cheredoc", j, after);
          this.modes.pop();
          return;
        }
      }
    }
    mode.atLineStart = false;
    if (this.templateSequence()) return;
    // Backslashes are literal in a heredoc; only `$${` and `%%{` are escapes.
    let value = "";
    let j = start;
    while (j < text.length) {
      const ch = text[j]!;
      if (ch === "\n") {
        value += ch;
        j++;
        mode.atLineStart = true;
        break;
      }
      if ((ch === "$" || ch === "%") && text[j + 1] === "{") break;
      if ((ch === "$" || ch === "%") && text[j + 1] === ch && text[j + 2] === "{") {
        value += `${ch}{`;
        j += 3;
        continue;
      }
      value += ch;
      j++;
    }
    this.i = j;
    this.emit("lit", start, j, { value });
  }

  private unterminatedHeredoc(mode: Mode & { kind: "heredoc" }): void {
    const o = mode.opener;
    this.diagnostics.push(
      errorDiag(
        "unterminated-heredoc",
        "Unterminated heredoc",
        `No line holding only the closing marker "${mode.marker}" was found before the end of the file.`,
        this.src.range(o.start, o.start + 2 + (o.indented ? 1 : 0) + mode.marker.length),
      ),
    );
    this.emit("cheredoc", this.text.length, this.text.length);
  }
}

function hex(cp: number): string {
  return cp.toString(16).toUpperCase().padStart(4, "0");
}
