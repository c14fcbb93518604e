// The documentation's cross-references resolve: every relative Markdown link in a tracked
// .md file points at a file that exists (and, with a #fragment, at a heading of that file),
// and every `docs/….md` path a document or a source comment cites exists. A cited decision
// section (`docs/decisions/<subject>.md, "Title"`, the title possibly on the next comment
// line) must be a heading or a bold entry title of that file, so a renamed or removed
// decision is caught where it is cited.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

function tracked(...patterns: string[]): string[] {
  const out = execFileSync(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...patterns],
    { cwd: ROOT, encoding: "utf8" },
  );
  // Untracked files count (a new document is checked before its commit); deleted ones do not.
  return out.split("\0").filter((f) => f !== "" && !f.includes("/gen/") && existsSync(join(ROOT, f)));
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors a Markdown file offers, duplicates numbered as GitHub numbers them. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const m = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Markdown inline links outside code: [text](target). */
function mdLinks(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  let fenced = false;
  text.split("\n").forEach((raw, i) => {
    if (/^\s*(```|~~~)/.test(raw)) fenced = !fenced;
    if (fenced) return;
    const line = raw.replace(/`[^`]*`/g, "");
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
      out.push({ target: m[1]!, line: i + 1 });
  });
  return out;
}

/** What a file says in prose: a document whole, a source file's comment lines only (its
 * string literals may name made-up paths as test data). Other lines are kept empty so line
 * numbers stay right. */
function prose(file: string): string {
  const text = readFileSync(join(ROOT, file), "utf8");
  if (file.endsWith(".md")) return text;
  return text
    .split("\n")
    .map((l) => (/^\s*(\/\/|\/\*|\*)/.test(l) ? l : ""))
    .join("\n");
}

/** The titles a decision may be cited by: its headings and its bold entry titles. */
function decisionTitles(text: string): string[] {
  const titles: string[] = [];
  for (const m of text.matchAll(/^#{1,6}\s+(.*)$/gm)) titles.push(m[1]!.trim());
  for (const m of text.matchAll(/^\s*- \*\*(.+?)\*\*/gm)) titles.push(m[1]!.trim());
  return titles;
}

describe("documentation links", () => {
  const docs = tracked("*.md");

  it("every relative Markdown link resolves to a file, and a #fragment to a heading", () => {
    const broken: string[] = [];
    for (const file of docs) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const { target, line } of mdLinks(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) continue; // URLs
        const [path, fragment] = target.split("#", 2) as [string, string | undefined];
        const dest = path === "" ? join(ROOT, file) : normalize(join(ROOT, dirname(file), decodeURI(path)));
        const where = `${file}:${line}: ${target}`;
        if (!existsSync(dest)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (fragment && dest.endsWith(".md") && !anchors(readFileSync(dest, "utf8")).has(fragment)) {
          broken.push(`${where} (no heading #${fragment} in ${relative(ROOT, dest)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("every docs/….md path cited in sources and documents exists", () => {
    const missing: string[] = [];
    for (const file of tracked("*.md", "*.ts", "*.mjs", "*.go", "*.proto")) {
      const text = prose(file);
      for (const m of text.matchAll(/(?<![\w./-])docs\/[\w./-]*?\.md\b/g)) {
        if (!existsSync(join(ROOT, m[0]))) {
          missing.push(`${file}:${text.slice(0, m.index).split("\n").length}: ${m[0]}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('a cited decision section (docs/decisions/<subject>.md, "Title") exists in that file', () => {
    const missing: string[] = [];
    const titles = new Map<string, string[]>();
    for (const file of tracked("*.md", "*.ts", "*.mjs", "*.go", "*.proto")) {
      const text = prose(file);
      for (const m of text.matchAll(/docs\/decisions\/([\w-]+\.md)`?,\s*(?:(?:\/\/|\*)\s*)?"([^"\n]+)"/g)) {
        const subject = join(ROOT, "docs", "decisions", m[1]!);
        if (!existsSync(subject)) continue; // reported by the test above
        if (!titles.has(subject)) titles.set(subject, decisionTitles(readFileSync(subject, "utf8")));
        const cited = m[2]!;
        if (!titles.get(subject)!.some((t) => t === cited || t.startsWith(cited))) {
          missing.push(`${file}:${text.slice(0, m.index).split("\n").length}: ${m[1]} "${cited}"`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("docs/decisions.md indexes every subject file, and only those", () => {
    const index = readFileSync(join(ROOT, "docs", "decisions.md"), "utf8");
    const linked = new Set([...index.matchAll(/\]\(decisions\/([\w-]+\.md)\)/g)].map((m) => m[1]!));
    const files = new Set(tracked("docs/decisions/*.md").map((f) => f.slice("docs/decisions/".length)));
    expect([...files].filter((f) => !linked.has(f))).toEqual([]);
    expect([...linked].filter((f) => !files.has(f))).toEqual([]);
  });

  it("docs/architecture.md draws every package and plugin, and the files it names exist", () => {
    const text = readFileSync(join(ROOT, "docs", "architecture.md"), "utf8");
    const tree = /```text\n([\s\S]*?)```/.exec(text)?.[1] ?? "";
    const dirs = (parent: string) =>
      tracked(`${parent}/*/package.json`).map((f) => f.slice(parent.length + 1).split("/")[0]!);
    const packages = [...tree.matchAll(/^ {2}([\w-]+)\/\s/gm)].map((m) => m[1]!);
    expect(dirs("packages").filter((p) => !packages.includes(p))).toEqual([]);
    const plugins = [...tree.matchAll(/^ {2}[\w ]+: +(.*)$/gm)].flatMap((m) =>
      m[1]!.split(",").map((p) => p.trim().split(" ")[0]!),
    );
    expect(dirs("providers").filter((p) => !plugins.includes(p))).toEqual([]);
    expect(plugins.filter((p) => !existsSync(join(ROOT, "providers", p)))).toEqual([]);
    // A path in backticks: from the repository root, else from the kernel's src/ (where the
    // turn's modules are named without their prefix).
    const named = [...text.matchAll(/`([\w./-]+\.(?:ts|md)|[\w-]+\/(?:[\w-]+\/)*)`/g)].map((m) => m[1]!);
    const gone = named.filter(
      (p) => !existsSync(join(ROOT, p)) && !existsSync(join(ROOT, "packages", "kernel", "src", p)),
    );
    expect(named.length).toBeGreaterThan(20);
    expect(gone).toEqual([]);
  });
});
