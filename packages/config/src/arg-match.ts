// Argument-scoped policy matching: `command` patterns for shell tools and `path` globs
// for file tools (configuration/policy-dsl.md has only the four schema fields; these
// two are this project's extension, recorded in docs/decisions/sandbox-and-policy.md).
//
// A command pattern is a list of words, written like a shell line: each word matches
// one argv word exactly, a word containing `*`/`?` is a glob within one word, and a
// lone `*` matches any number of words (zero included). The pattern covers the whole
// argv, so `npm test` matches exactly `npm test`, and `ls *` matches `ls` with any
// arguments. Quoted characters are literal.
//
// A path glob is relative to the session's working directory (the first root): `*`
// and `?` stay within one path segment, `**` spans any number of segments (dot files
// included). An absolute glob is matched against the absolute path.

import { isAbsolute, normalize, relative, resolve } from "node:path";
import { basename, parseCommand, type ShellWord, type SimpleCommand, shellQuote } from "./shell.ts";

export type PatternWord =
  | { kind: "literal"; text: string }
  | { kind: "glob"; text: string; regex: RegExp }
  | { kind: "any" };

export interface CommandPattern {
  readonly source: string;
  readonly words: readonly PatternWord[];
}

export class PatternError extends Error {}

/** Parses a command pattern; throws PatternError on malformed text. */
export function parseCommandPattern(source: string): CommandPattern {
  const words: PatternWord[] = [];
  let i = 0;
  const n = source.length;
  while (i < n) {
    while (i < n && /\s/.test(source[i]!)) i++;
    if (i >= n) break;
    // Each character of the word, with whether it was quoted.
    const chars: Array<{ c: string; quoted: boolean }> = [];
    while (i < n && !/\s/.test(source[i]!)) {
      const c = source[i]!;
      if (c === "'" || c === '"') {
        const k = source.indexOf(c, i + 1);
        if (k < 0) throw new PatternError(`unbalanced ${c} in command pattern ${JSON.stringify(source)}`);
        for (const q of source.slice(i + 1, k)) chars.push({ c: q, quoted: true });
        if (k === i + 1) chars.push({ c: "", quoted: true });
        i = k + 1;
      } else if (c === "\\" && i + 1 < n) {
        chars.push({ c: source[i + 1]!, quoted: true });
        i += 2;
      } else {
        chars.push({ c, quoted: false });
        i++;
      }
    }
    const text = chars.map((x) => x.c).join("");
    if (chars.length === 1 && chars[0]!.c === "*" && !chars[0]!.quoted) {
      if (words.at(-1)?.kind !== "any") words.push({ kind: "any" });
      continue;
    }
    if (chars.some((x) => !x.quoted && (x.c === "*" || x.c === "?"))) {
      const body = chars
        .map((x) =>
          x.quoted ? escapeRegex(x.c) : x.c === "*" ? "[^]*" : x.c === "?" ? "[^]" : escapeRegex(x.c),
        )
        .join("");
      words.push({
        kind: "glob",
        text: chars.map((x) => (x.quoted ? escapeGlob(x.c) : x.c)).join(""),
        regex: new RegExp(`^${body}$`),
      });
    } else words.push({ kind: "literal", text });
  }
  if (words.length === 0) throw new PatternError("a command pattern needs at least one word");
  if (words[0]!.kind === "any") throw new PatternError("a command pattern must start with the command name");
  return { source, words };
}

function escapeRegex(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

function escapeGlob(s: string): string {
  return s.replace(/[*?'"\\]/g, "\\$&");
}

/** The canonical text of a pattern: equal patterns have equal text. */
export function canonicalPattern(p: CommandPattern): string {
  return p.words
    .map((w) => (w.kind === "any" ? "*" : w.kind === "glob" ? w.text : shellQuote(w.text)))
    .join(" ");
}

/** How specific a pattern is: its literal words, then its glob words (a lone `*` counts nothing). */
export function patternWeight(p: CommandPattern): number {
  let literal = 0;
  let glob = 0;
  for (const w of p.words) {
    if (w.kind === "literal") literal++;
    else if (w.kind === "glob") glob++;
  }
  return literal * 1_000 + glob;
}

/** Directories whose programs a bare name in a pattern also matches (`/usr/bin/rm` is `rm`). */
const SYSTEM_BIN = /^\/(usr\/(local\/)?)?s?bin\/[^/]+$/;

function wordMatches(p: PatternWord, w: ShellWord, first: boolean): boolean {
  if (p.kind === "any") return true;
  // A word whose value is computed at run time matches no literal or glob.
  if (w.dynamic) return false;
  const candidates = first && SYSTEM_BIN.test(w.text) ? [w.text, basename(w.text)] : [w.text];
  return candidates.some((t) => (p.kind === "literal" ? p.text === t : p.regex.test(t)));
}

/** Whether `argv` is matched by the whole pattern. */
export function patternMatchesArgv(p: CommandPattern, argv: readonly ShellWord[]): boolean {
  const words = p.words;
  // memo[i][j]: pattern words from i match argv words from j
  const memo = new Map<number, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = i * 10_000 + j;
    const hit = memo.get(key);
    if (hit !== undefined) return hit;
    let r: boolean;
    if (i === words.length) r = j === argv.length;
    else if (words[i]!.kind === "any") r = go(i + 1, j) || (j < argv.length && go(i, j + 1));
    else r = j < argv.length && wordMatches(words[i]!, argv[j]!, j === 0) && go(i + 1, j + 1);
    memo.set(key, r);
    return r;
  };
  return go(0, 0);
}

/**
 * A command line two patterns both match, if there is one (patterns only; the
 * `sh -c` unwrapping of real commands is not modelled). Used to report conflicts.
 */
export function patternsOverlap(a: CommandPattern, b: CommandPattern): string[] | undefined {
  const A = a.words;
  const B = b.words;
  const memo = new Map<number, string[] | null>();
  const go = (i: number, j: number): string[] | null => {
    const key = i * 10_000 + j;
    if (memo.has(key)) return memo.get(key)!;
    memo.set(key, null);
    let r: string[] | null = null;
    if (i === A.length && j === B.length) r = [];
    else if (i < A.length && A[i]!.kind === "any") {
      r = go(i + 1, j);
      if (r === null && j < B.length && B[j]!.kind !== "any") {
        const w = sampleWord(B[j]!);
        const rest = go(i, j + 1);
        if (rest !== null && w !== undefined) r = [w, ...rest];
      }
      if (r === null && j < B.length && B[j]!.kind === "any") r = go(i, j + 1);
    } else if (j < B.length && B[j]!.kind === "any") {
      r = go(i, j + 1);
      if (r === null && i < A.length) {
        const w = sampleWord(A[i]!);
        const rest = go(i + 1, j);
        if (rest !== null && w !== undefined) r = [w, ...rest];
      }
    } else if (i < A.length && j < B.length) {
      const w = commonWord(A[i]!, B[j]!);
      if (w !== undefined) {
        const rest = go(i + 1, j + 1);
        if (rest !== null) r = [w, ...rest];
      }
    }
    memo.set(key, r);
    return r;
  };
  const r = go(0, 0);
  return r ?? undefined;
}

function sampleWord(p: PatternWord): string | undefined {
  if (p.kind === "literal") return p.text;
  if (p.kind === "glob") return globSample(p.text);
  return undefined;
}

function globSample(text: string): string {
  return text.replace(/\\(.)|[*]|[?]/g, (m, esc: string | undefined) =>
    esc !== undefined ? esc : m === "?" ? "x" : "",
  );
}

/** A word both single-word patterns match, if any. */
function commonWord(a: PatternWord, b: PatternWord): string | undefined {
  if (a.kind === "literal" && b.kind === "literal") return a.text === b.text ? a.text : undefined;
  if (a.kind === "literal" && b.kind === "glob") return b.regex.test(a.text) ? a.text : undefined;
  if (a.kind === "glob" && b.kind === "literal") return a.regex.test(b.text) ? b.text : undefined;
  if (a.kind === "glob" && b.kind === "glob") return globIntersection(globTokens(a.text), globTokens(b.text));
  return undefined;
}

type GlobToken = { star: true } | { star: false; any: boolean; c: string };

function globTokens(text: string): GlobToken[] {
  const out: GlobToken[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\" && i + 1 < text.length) out.push({ star: false, any: false, c: text[++i]! });
    else if (c === "*") out.push({ star: true });
    else if (c === "?") out.push({ star: false, any: true, c: "x" });
    else out.push({ star: false, any: false, c });
  }
  return out;
}

/** A string two character globs both match (product of the two automata). */
function globIntersection(a: GlobToken[], b: GlobToken[]): string | undefined {
  const memo = new Map<number, string | null>();
  const go = (i: number, j: number): string | null => {
    const key = i * 10_000 + j;
    if (memo.has(key)) return memo.get(key)!;
    memo.set(key, null);
    let r: string | null = null;
    const x = a[i];
    const y = b[j];
    if (x === undefined && y === undefined) r = "";
    else if (x?.star) {
      r = go(i + 1, j);
      if (r === null && y !== undefined && !y.star) {
        const rest = go(i, j + 1);
        if (rest !== null) r = y.c + rest;
      }
      if (r === null && y?.star) r = go(i, j + 1);
    } else if (y?.star) {
      r = go(i, j + 1);
      if (r === null && x !== undefined) {
        const rest = go(i + 1, j);
        if (rest !== null) r = x.c + rest;
      }
    } else if (x !== undefined && y !== undefined) {
      if (x.any || y.any || x.c === y.c) {
        const rest = go(i + 1, j + 1);
        if (rest !== null) r = (x.any ? y.c : x.c) + rest;
      }
    }
    memo.set(key, r);
    return r;
  };
  return go(0, 0) ?? undefined;
}

// ---- paths ----------------------------------------------------------------------

export interface PathPattern {
  readonly source: string;
  readonly regex: RegExp;
  readonly absolute: boolean;
}

export function parsePathPattern(source: string): PathPattern {
  if (source.trim() === "") throw new PatternError("a path pattern cannot be empty");
  if (source.includes("\0")) throw new PatternError("a path pattern cannot contain NUL");
  const absolute = isAbsolute(source);
  let s = absolute ? normalize(source) : source.replace(/^\.\/+/, "");
  if (!absolute && s.split("/").includes(".."))
    throw new PatternError("a relative path pattern cannot use ..");
  s = s.replace(/\/+$/, "");
  let body = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\" && i + 1 < s.length) {
      body += escapeRegex(s[++i]!);
    } else if (c === "*" && s[i + 1] === "*") {
      const slash = s[i + 2] === "/";
      body += slash ? "(?:[^]*/)?" : "[^]*";
      i += slash ? 2 : 1;
    } else if (c === "*") body += "[^/]*";
    else if (c === "?") body += "[^/]";
    else body += escapeRegex(c);
  }
  return { source, regex: new RegExp(`^${body}$`), absolute };
}

/** A path written as a glob that matches exactly it. */
export function escapePathGlob(path: string): string {
  return path.replace(/[*?\\]/g, "\\$&");
}

export function pathWeight(p: PathPattern): number {
  const literal = p.source.replace(/[*?]/g, "").length;
  const wild = /[*?]/.test(p.source) ? 0 : 1;
  return wild * 1_000_000 + Math.min(literal, 999_999);
}

/** The path argument `value` as seen from `base`: lexically normalised, relative when inside. */
export function pathRelativeTo(base: string, value: string): { absolute: string; relative?: string } {
  const absolute = resolve(base, value);
  const rel = relative(base, absolute);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel))
    return rel === "" ? { absolute, relative: "." } : { absolute };
  return { absolute, relative: rel };
}

export function pathMatches(p: PathPattern, base: string, value: string): boolean {
  const { absolute, relative: rel } = pathRelativeTo(base, value);
  if (p.absolute) return p.regex.test(absolute);
  return rel !== undefined && p.regex.test(rel);
}

export function pathPatternsEqual(a: PathPattern, b: PathPattern): boolean {
  return a.regex.source === b.regex.source;
}

// ---- the narrowest rule for a request ----------------------------------------------

/** Command patterns that cover exactly the commands of `line`, or undefined when it cannot be read. */
export function exactCommandPatterns(line: string): string[] | undefined {
  const parsed = parseCommand(line);
  if (parsed.opaque) return undefined;
  const top = parsed.commands.filter((c) => !c.nested);
  if (top.length === 0) return undefined;
  const out: string[] = [];
  for (const c of top) {
    if (c.argv.length === 0 || c.argv.some((w) => w.dynamic)) return undefined;
    const p = c.argv.map((w) => shellQuote(w.text).replace(/[*?]/g, "\\$&")).join(" ");
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

export type { ShellWord, SimpleCommand };
