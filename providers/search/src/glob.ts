// Glob patterns compiled to regular expressions over "/"-separated relative paths:
// `*` and `?` stay within one path segment, `**` spans segments, `[...]` is a
// character class (`!` or `^` negates), `{a,b}` alternatives, `\` escapes. `*` also
// matches names starting with a dot.

function escapeRe(c: string): string {
  return /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c;
}

function closingBracket(p: string, open: number): number {
  let i = open + 1;
  if (p[i] === "!" || p[i] === "^") i++;
  if (p[i] === "]") i++;
  for (; i < p.length; i++) if (p[i] === "]") return i;
  return -1;
}

function closingBrace(p: string, open: number): number {
  let depth = 0;
  for (let i = open; i < p.length; i++) {
    if (p[i] === "\\") i++;
    else if (p[i] === "{") depth++;
    else if (p[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

function splitAlternatives(body: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "\\") i++;
    else if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (c === "," && depth === 0) {
      parts.push(body.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(body.slice(start));
  return parts;
}

/** The regular-expression source for a glob (no anchors). */
export function globSource(p: string): string {
  let out = "";
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === "*") {
      if (p[i + 1] === "*") {
        const j = i + 2;
        const segmentStart = i === 0 || p[i - 1] === "/";
        if (segmentStart && p[j] === "/") {
          out += "(?:[^/]*/)*"; // "**/": any number of directories, none included
          i = j + 1;
          continue;
        }
        if (segmentStart && j === p.length) {
          out += ".*"; // trailing "**": everything below
          i = j;
          continue;
        }
        out += "[^/]*";
        i = j;
        continue;
      }
      out += "[^/]*";
      i++;
      continue;
    }
    if (c === "?") {
      out += "[^/]";
      i++;
      continue;
    }
    if (c === "[") {
      const close = closingBracket(p, i);
      if (close < 0) {
        out += "\\[";
        i++;
        continue;
      }
      let body = p.slice(i + 1, close);
      const negate = body[0] === "!" || body[0] === "^";
      if (negate) body = body.slice(1);
      out += `[${negate ? "^" : ""}${body.replace(/\\/g, "\\\\").replace(/\[/g, "\\[")}]`;
      i = close + 1;
      continue;
    }
    if (c === "{") {
      const close = closingBrace(p, i);
      if (close < 0) {
        out += "\\{";
        i++;
        continue;
      }
      out += `(?:${splitAlternatives(p.slice(i + 1, close))
        .map(globSource)
        .join("|")})`;
      i = close + 1;
      continue;
    }
    if (c === "\\" && i + 1 < p.length) {
      out += escapeRe(p[i + 1]!);
      i += 2;
      continue;
    }
    out += escapeRe(c);
    i++;
  }
  return out;
}

export function compileGlob(pattern: string): RegExp {
  return new RegExp(`^${globSource(pattern)}$`);
}

/**
 * A file filter: a pattern without "/" matches the file name at any depth (like
 * ripgrep's --glob), one with "/" matches the path relative to the search directory.
 */
export function fileFilter(pattern: string): (rel: string) => boolean {
  const re = compileGlob(pattern.replace(/^\//, ""));
  if (pattern.includes("/")) return (rel) => re.test(rel);
  return (rel) => re.test(rel.slice(rel.lastIndexOf("/") + 1));
}
