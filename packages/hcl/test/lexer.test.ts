// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are HCL source, where ${ is template syntax.
import { describe, expect, it } from "vitest";
import { lex, type Token } from "../src/lexer.ts";
import { SourceFile } from "../src/source.ts";

function tokens(text: string): Array<string> {
  const src = new SourceFile("t.hcl", text);
  return lex(src).tokens.map((t: Token) => (t.kind === "lit" ? `lit(${t.value})` : t.kind));
}

describe("lexer", () => {
  it("scans operators longest-first", () => {
    expect(tokens("a... == != <= >= => && || :: < > ! ? : .")).toEqual([
      "ident",
      "...",
      "==",
      "!=",
      "<=",
      ">=",
      "=>",
      "&&",
      "||",
      "::",
      "<",
      ">",
      "!",
      "?",
      ":",
      ".",
      "eof",
    ]);
  });

  it("turns line comments into nothing but keeps their newline", () => {
    expect(tokens("a # c\nb // d\r\nc /* e \n f */ d")).toEqual([
      "ident",
      "newline",
      "ident",
      "newline",
      "ident",
      "ident",
      "eof",
    ]);
  });

  it("scans numbers without a trailing dot or sign", () => {
    const src = new SourceFile("t.hcl", "1.5e-3 2. 3e");
    const texts = lex(src).tokens.map((t) => `${t.kind}:${src.text.slice(t.start, t.end)}`);
    expect(texts).toEqual(["number:1.5e-3", "number:2", ".:.", "number:3", "ident:e", "eof:"]);
  });

  it("tracks quoted templates with nested braces and strings", () => {
    expect(tokens('"a${ {b = "c${d}"}.b ~}e%{~ if x }f"')).toEqual([
      "oquote",
      "lit(a)",
      "${",
      "{",
      "ident",
      "=",
      "oquote",
      "lit(c)",
      "${",
      "ident",
      "seqend",
      "cquote",
      "}",
      ".",
      "ident",
      "seqend",
      "lit(e)",
      "%{",
      "ident",
      "ident",
      "seqend",
      "lit(f)",
      "cquote",
      "eof",
    ]);
  });

  it("records strip markers", () => {
    const src = new SourceFile("t.hcl", '"${~ x ~}"');
    const strips = lex(src)
      .tokens.filter((t) => t.kind === "${" || t.kind === "seqend")
      .map((t) => t.strip);
    expect(strips).toEqual([true, true]);
  });

  it("decodes escapes and doubled template introducers, splitting literals at $ and % as hcl/v2 does", () => {
    expect(tokens('"\\t$${x}%%{y}$$"')).toEqual([
      "oquote",
      "lit(\t)",
      "lit(${)",
      "lit(x})",
      "lit(%{)",
      "lit(y})",
      "lit($)",
      "lit($)",
      "cquote",
      "eof",
    ]);
  });

  it("splits heredoc text per line and ends at the marker line", () => {
    expect(tokens("<<EOT\none\\n\n  EOT\nx")).toEqual([
      "oheredoc",
      "lit(one\\n\n)",
      "cheredoc",
      "newline",
      "ident",
      "eof",
    ]);
    expect(tokens("<<-X\na${b}c\n X \t\n")).toEqual([
      "oheredoc",
      "lit(a)",
      "${",
      "ident",
      "seqend",
      "lit(c\n)",
      "cheredoc",
      "newline",
      "eof",
    ]);
  });

  it("takes identifier characters from hcl/v2's Unicode 9.0 tables, not the engine's newer ones", () => {
    // Accepted by both: Latin, a middle dot and a combining mark inside a name, CJK.
    expect(tokens("\u00e9t\u00b7e\u0301 \u65e5\u672c _a-1")).toEqual(["ident", "ident", "ident", "eof"]);
    // ZWJ and ZWNJ joined ID_Continue, U+0560 and U+9FEB joined ID_Start, after 9.0:
    // hcl/v2 ends the name there (the character is then invalid).
    for (const c of ["\u200d", "\u200c", "\u0560", "\u9feb"]) {
      expect(tokens(`a${c}b`)[0]).toBe("ident");
      expect(tokens(`a${c}b`)).not.toEqual(["ident", "eof"]);
      expect(tokens(`<<E${c}F\nx\nE${c}F\n`)[0]).not.toBe("oheredoc");
    }
  });

  it("takes a marker line only when it ends with a newline", () => {
    // At the very end of the file "X" is heredoc text, and the heredoc is unterminated.
    expect(tokens("<<X\na\nX")).toEqual(["oheredoc", "lit(a\n)", "lit(X)", "eof"]);
    // Spaces and tabs around the marker are allowed.
    expect(tokens("<<X\n  X  \n")).toEqual(["oheredoc", "cheredoc", "newline", "eof"]);
  });

  it("does not treat << without a marker and newline as a heredoc", () => {
    expect(tokens("<<EOT x")).toEqual(["<", "<", "ident", "ident", "eof"]);
  });

  it("reports line breaks in quoted strings and invalid characters, and goes on like hcl/v2", () => {
    // A line break does not end the string: the next quote does. "$" is no token outside strings.
    const src = new SourceFile("t.hcl", 'a = "x\n@\n"${');
    const { tokens: toks, diagnostics } = lex(src);
    expect(diagnostics.map((d) => [d.code, d.subject.start.line, d.subject.end.line])).toEqual([
      ["multiline-string", 1, 2],
      ["multiline-string", 2, 3],
      ["invalid-character", 3, 3],
    ]);
    expect(toks.map((t) => t.kind)).toEqual([
      "ident",
      "=",
      "oquote",
      "lit",
      "qnewline",
      "lit",
      "qnewline",
      "cquote",
      "invalid",
      "{",
      "eof",
    ]);
  });

  it("always ends with exactly one eof token", () => {
    for (const text of ["", "a", "<<EOT\n", '"', "/*", "${"]) {
      const kinds = lex(new SourceFile("t.hcl", text)).tokens.map((t) => t.kind);
      expect(kinds.filter((k) => k === "eof")).toHaveLength(1);
      expect(kinds[kinds.length - 1]).toBe("eof");
    }
  });
});
