// .gitignore rules: each file's patterns apply to paths below its directory; later
// rules win over earlier ones and deeper files over shallower ones; a trailing "/"
// limits a rule to directories; "!" re-includes; a pattern containing a "/" (other
// than a trailing one) is anchored to the file's directory, any other pattern matches
// at any depth below it. Ignored directories are not entered, so their content cannot
// be re-included (as in git).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { globSource } from "./glob.ts";

interface Rule {
  negate: boolean;
  dirOnly: boolean;
  re: RegExp;
}

export interface RuleSet {
  /** Directory of the .gitignore, relative to the walk's base ("" for the base). */
  base: string;
  rules: Rule[];
}

export function parseGitignore(text: string, base: string): RuleSet {
  const rules: Rule[] = [];
  for (let line of text.split(/\r?\n/)) {
    if (line === "" || line.startsWith("#")) continue;
    line = trimUnescapedEnd(line);
    if (line === "") continue;
    let negate = false;
    if (line.startsWith("!")) {
      negate = true;
      line = line.slice(1);
    } else if (line.startsWith("\\!") || line.startsWith("\\#")) {
      line = line.slice(1);
    }
    let dirOnly = false;
    if (line.endsWith("/")) {
      dirOnly = true;
      line = line.slice(0, -1);
    }
    if (line === "") continue;
    const anchored = line.includes("/");
    if (line.startsWith("/")) line = line.slice(1);
    const source = anchored ? globSource(line) : `(?:[^/]*/)*${globSource(line)}`;
    rules.push({ negate, dirOnly, re: new RegExp(`^${source}$`) });
  }
  return { base, rules };
}

export async function loadGitignore(dirAbs: string, base: string): Promise<RuleSet | undefined> {
  try {
    const text = await readFile(join(dirAbs, ".gitignore"), "utf8");
    const set = parseGitignore(text, base);
    return set.rules.length > 0 ? set : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `rel` (relative to the walk's base) is ignored by the rule sets in effect. */
export function isIgnored(sets: readonly RuleSet[], rel: string, isDir: boolean): boolean {
  let ignored = false;
  for (const set of sets) {
    let local: string;
    if (set.base === "") local = rel;
    else if (rel.startsWith(`${set.base}/`)) local = rel.slice(set.base.length + 1);
    else continue;
    for (const rule of set.rules) {
      if (rule.dirOnly && !isDir) continue;
      if (rule.re.test(local)) ignored = !rule.negate;
    }
  }
  return ignored;
}

/**
 * Trailing whitespace is not part of a pattern unless a backslash escapes its first
 * character. A scan from the end, not a regex: `\s+$` retries at every whitespace
 * position and is quadratic in a long run of spaces.
 */
function trimUnescapedEnd(line: string): string {
  let j = line.length;
  while (j > 0 && /\s/.test(line[j - 1]!)) j--;
  if (j === line.length) return line;
  return j > 0 && line[j - 1] === "\\" ? line.slice(0, j + 1) : line.slice(0, j);
}
