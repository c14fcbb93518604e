// The argument matchers of policy rules, directly: command patterns (parse, canonical text,
// weight, matching argv, overlap between two patterns) and path globs.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canonicalPattern,
  escapePathGlob,
  PatternError,
  parseCommandPattern,
  parsePathPattern,
  pathRelativeTo,
  pathWeight,
  patternMatchesArgv,
  patternsOverlap,
  patternWeight,
} from "../src/arg-match.ts";

const argv = (...words: string[]) => words.map((text) => ({ text, dynamic: false }));
const matches = (pattern: string, ...words: string[]) =>
  patternMatchesArgv(parseCommandPattern(pattern), argv(...words));
const overlap = (a: string, b: string) => patternsOverlap(parseCommandPattern(a), parseCommandPattern(b));

describe("command patterns", () => {
  it("parse words, quotes, escapes, globs and a lone * into their kinds", () => {
    expect(parseCommandPattern(`git  "commit -m" 'x' a\\ b`).words).toEqual([
      { kind: "literal", text: "git" },
      { kind: "literal", text: "commit -m" },
      { kind: "literal", text: "x" },
      { kind: "literal", text: "a b" },
    ]);
    expect(parseCommandPattern(`echo ""`).words).toEqual([
      { kind: "literal", text: "echo" },
      { kind: "literal", text: "" },
    ]);
    const glob = parseCommandPattern(`rm -r? "*.txt"* * *`).words;
    expect(glob.map((w) => w.kind)).toEqual(["literal", "glob", "glob", "any"]);
    expect(glob[2]).toMatchObject({ kind: "glob", text: "\\*.txt*" });
    expect(canonicalPattern(parseCommandPattern(`rm   -r? "*.txt"* * *`))).toBe("rm -r? \\*.txt* *");
    expect(canonicalPattern(parseCommandPattern(`git "commit -m"`))).toBe("git 'commit -m'");
  });

  it("refuse malformed text with a reason", () => {
    expect(() => parseCommandPattern("   ")).toThrow(
      new PatternError("a command pattern needs at least one word"),
    );
    expect(() => parseCommandPattern("* ls")).toThrow(
      new PatternError("a command pattern must start with the command name"),
    );
    expect(() => parseCommandPattern(`echo "oops`)).toThrow(
      new PatternError(`unbalanced " in command pattern "echo \\"oops"`),
    );
    expect(() => parseCommandPattern(`echo 'oops`)).toThrow(/unbalanced ' in command pattern/);
  });

  it("weigh literal words above globs, and a lone * as nothing", () => {
    expect(patternWeight(parseCommandPattern("git push origin"))).toBe(3_000);
    expect(patternWeight(parseCommandPattern("git push *"))).toBe(2_000);
    expect(patternWeight(parseCommandPattern("git pu?h o*"))).toBe(1_002);
  });

  it("match the whole argv: exact words, globs within one word, a lone * for any number of words", () => {
    expect(matches("npm test", "npm", "test")).toBe(true);
    expect(matches("npm test", "npm", "test", "--watch")).toBe(false);
    expect(matches("npm test", "npm")).toBe(false);
    expect(matches("ls *", "ls")).toBe(true);
    expect(matches("ls *", "ls", "-l", "a")).toBe(true);
    expect(matches("git * push", "git", "-C", "x", "push")).toBe(true);
    expect(matches("git * push", "git", "push", "x")).toBe(false);
    expect(matches("rm -r?", "rm", "-rf")).toBe(true);
    expect(matches("rm -r?", "rm", "-r")).toBe(false);
    expect(matches("cat *.md", "cat", "a.md")).toBe(true);
    expect(matches("cat *.md", "cat", "a/b.md")).toBe(true);
    expect(matches("cat \\*", "cat", "x")).toBe(false);
    expect(matches("cat \\*", "cat", "*")).toBe(true);
  });

  it("match a program in a system bin directory by its name, only in command position", () => {
    expect(matches("rm *", "/usr/bin/rm", "-rf", "x")).toBe(true);
    expect(matches("rm *", "/bin/rm")).toBe(true);
    expect(matches("rm *", "/usr/local/sbin/rm")).toBe(true);
    expect(matches("rm *", "/opt/bin/rm")).toBe(false);
    expect(matches("echo rm", "echo", "/usr/bin/rm")).toBe(false);
    expect(patternMatchesArgv(parseCommandPattern("rm *"), [{ text: "rm", dynamic: true }])).toBe(false);
    expect(
      patternMatchesArgv(parseCommandPattern("echo *"), [
        { text: "echo", dynamic: false },
        { text: "$x", dynamic: true },
      ]),
    ).toBe(true);
  });
});

describe("overlap of two command patterns", () => {
  it("gives a command line both match, or nothing when there is none", () => {
    expect(overlap("git push", "git push")).toEqual(["git", "push"]);
    expect(overlap("git push", "git pull")).toBeUndefined();
    expect(overlap("git *", "git push --force")).toEqual(["git", "push", "--force"]);
    expect(overlap("git push --force", "git *")).toEqual(["git", "push", "--force"]);
    expect(overlap("git * --force", "git push *")).toEqual(["git", "push", "--force"]);
    expect(overlap("ls *", "ls")).toEqual(["ls"]);
    expect(overlap("ls", "ls *")).toEqual(["ls"]);
    expect(overlap("ls * *", "ls")).toEqual(["ls"]);
    expect(overlap("rm -r?", "rm -rf")).toEqual(["rm", "-rf"]);
    expect(overlap("rm -rf", "rm -r?")).toEqual(["rm", "-rf"]);
    expect(overlap("rm -r?", "rm -x?")).toBeUndefined();
    expect(overlap("cat *.md", "cat a*")).toEqual(["cat", "a.md"]);
    expect(overlap("cat a?c", "cat ?b?")).toEqual(["cat", "abc"]);
    expect(overlap("cat *.md", "cat *.txt")).toBeUndefined();
    expect(overlap("cat \\*", "cat *")).toEqual(["cat", "*"]);
    expect(overlap("npm test", "npm test extra")).toBeUndefined();
    expect(overlap("x * y", "x y *")).toEqual(["x", "y"]);
    expect(overlap("x a* *", "x * b")).toEqual(["x", "a", "b"]);
  });

  // Patterns over a tiny alphabet, so a brute-force search over short argvs is exhaustive enough.
  const word = fc.oneof(fc.constantFrom("a", "b", "ab"), fc.constantFrom("a*", "*b", "?", "a?", "*"));
  const pattern = fc.array(word, { minLength: 0, maxLength: 2 }).map((ws) => `c ${ws.join(" ")}`.trim());
  const universe: string[][] = [[]];
  for (let len = 1; len <= 2; len++) {
    for (const prev of universe.filter((u) => u.length === len - 1)) {
      for (const w of ["a", "b", "ab", "x", "aa", "bb", "abb"]) universe.push([...prev, w]);
    }
  }

  it("a reported overlap is matched by both patterns, and a common match is always found", () => {
    fc.assert(
      fc.property(pattern, pattern, (a, b) => {
        const pa = parseCommandPattern(a);
        const pb = parseCommandPattern(b);
        const found = patternsOverlap(pa, pb);
        if (found !== undefined) {
          expect(patternMatchesArgv(pa, argv(...found)), `${a} / ${b}: ${found.join(" ")}`).toBe(true);
          expect(patternMatchesArgv(pb, argv(...found)), `${a} / ${b}: ${found.join(" ")}`).toBe(true);
        }
        const both = universe.some((u) => matches(a, "c", ...u) && matches(b, "c", ...u));
        if (both) expect(found, `${a} / ${b}`).toBeDefined();
      }),
      { numRuns: 150 },
    );
  });
});

describe("path patterns", () => {
  const m = (glob: string, path: string) => parsePathPattern(glob).regex.test(path);

  it("keep * and ? within a segment, let ** span segments, and escape with a backslash", () => {
    expect(m("src/*.ts", "src/a.ts")).toBe(true);
    expect(m("src/*.ts", "src/x/a.ts")).toBe(false);
    expect(m("src/**/*.ts", "src/a.ts")).toBe(true);
    expect(m("src/**/*.ts", "src/x/y/a.ts")).toBe(true);
    expect(m("src/**", "src/x/.env")).toBe(true);
    expect(m("a?c", "abc")).toBe(true);
    expect(m("a?c", "a/c")).toBe(false);
    expect(m("a\\*", "a*")).toBe(true);
    expect(m("a\\*", "ab")).toBe(false);
    expect(m("./docs/", "docs")).toBe(true);
    expect(m("a.b", "axb")).toBe(false);
    expect(parsePathPattern("/etc/../etc/*").regex.test("/etc/passwd")).toBe(true);
    expect(parsePathPattern("/etc/*").absolute).toBe(true);
    expect(parsePathPattern("etc/*").absolute).toBe(false);
  });

  it("refuse empty, NUL and .. in relative globs", () => {
    expect(() => parsePathPattern(" ")).toThrow(new PatternError("a path pattern cannot be empty"));
    expect(() => parsePathPattern("a\0b")).toThrow(new PatternError("a path pattern cannot contain NUL"));
    expect(() => parsePathPattern("../x")).toThrow(new PatternError("a relative path pattern cannot use .."));
    expect(() => parsePathPattern("a/../../x")).toThrow(PatternError);
  });

  it("weigh an exact path above any glob, then by literal length; escape paths to exact globs", () => {
    expect(pathWeight(parsePathPattern("src/a.ts"))).toBe(1_000_008);
    expect(pathWeight(parsePathPattern("src/*.ts"))).toBe(7);
    expect(pathWeight(parsePathPattern("src/**"))).toBe(4);
    expect(escapePathGlob("a*b?c\\d")).toBe("a\\*b\\?c\\\\d");
    expect(m(escapePathGlob("we*rd?.txt"), "we*rd?.txt")).toBe(true);
    expect(m(escapePathGlob("we*rd?.txt"), "weXrdY.txt")).toBe(false);
  });

  it("sees a path argument from the working directory", () => {
    expect(pathRelativeTo("/repo", "src/a.ts")).toEqual({ absolute: "/repo/src/a.ts", relative: "src/a.ts" });
    expect(pathRelativeTo("/repo", "/repo")).toEqual({ absolute: "/repo", relative: "." });
    expect(pathRelativeTo("/repo", "../etc/passwd")).toEqual({ absolute: "/etc/passwd" });
    expect(pathRelativeTo("/repo", "/elsewhere/x")).toEqual({ absolute: "/elsewhere/x" });
    expect(pathRelativeTo("/repo", "./a/../b")).toEqual({ absolute: "/repo/b", relative: "b" });
  });
});
