// A bounded file-tree summary of the working directory (or the repository root): breadth
// first, so a shallow overview survives when the tree is large, then printed depth first
// as an indented outline. .gitignore files (every level, each relative to its own
// directory) and .git/info/exclude are honoured with the `ignore` package, the same
// matching git applies; `.git` itself is never listed. Symlinks are shown, not followed.
import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import ignore, { type Ignore } from "ignore";

export interface TreeOptions {
  readonly maxEntries: number;
  readonly maxDepth: number;
  /** Shown per directory before "... N more". */
  readonly maxPerDirectory: number;
}

interface Node {
  readonly name: string;
  readonly dir: boolean;
  readonly children: Node[];
  /** Entries of this directory not shown. */
  hidden: number;
}

interface Rules {
  /** Directory the patterns are relative to. */
  readonly base: string;
  readonly ig: Ignore;
}

async function rulesIn(dir: string, extra: readonly string[] = []): Promise<Rules | undefined> {
  const texts = await Promise.all(
    [join(dir, ".gitignore"), ...extra].map((f) => readFile(f, "utf8").catch(() => "")),
  );
  const text = texts.filter(Boolean).join("\n");
  return text ? { base: dir, ig: ignore().add(text) } : undefined;
}

function ignored(rules: readonly Rules[], path: string, dir: boolean): boolean {
  for (const r of rules) {
    const rel = relative(r.base, path).split(sep).join("/");
    if (rel === "" || rel.startsWith("..")) continue;
    if (r.ig.ignores(dir ? `${rel}/` : rel)) return true;
  }
  return false;
}

/** The outline of `root`, at most maxEntries lines of entries. */
export async function fileTree(root: string, o: TreeOptions, gitRoot?: string): Promise<string> {
  const top: Node = { name: ".", dir: true, children: [], hidden: 0 };
  const baseRules: Rules[] = [];
  if (gitRoot && gitRoot !== root) {
    // .gitignore files between the repository root and the tree's root apply too.
    const parts = relative(gitRoot, root).split(sep);
    for (let i = 0; i < parts.length; i++) {
      const r = await rulesIn(
        join(gitRoot, ...parts.slice(0, i)),
        i === 0 ? [join(gitRoot, ".git/info/exclude")] : [],
      );
      if (r) baseRules.push(r);
    }
  }
  const queue: { node: Node; path: string; depth: number; rules: Rules[] }[] = [
    { node: top, path: root, depth: 1, rules: baseRules },
  ];
  let shown = 0;
  let truncated = false;
  while (queue.length > 0) {
    const { node, path, depth, rules: inherited } = queue.shift()!;
    const own = await rulesIn(path, path === gitRoot ? [join(path, ".git/info/exclude")] : []);
    const rules = own ? [...inherited, own] : inherited;
    const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
    const visible = entries
      .filter((e) => e.name !== ".git")
      .map((e) => ({ name: e.name, dir: e.isDirectory() }))
      .filter((e) => !ignored(rules, join(path, e.name), e.dir))
      .sort((a, b) => (a.dir === b.dir ? a.name.localeCompare(b.name) : a.dir ? -1 : 1));
    for (const e of visible) {
      if (node.children.length >= o.maxPerDirectory || shown >= o.maxEntries) {
        node.hidden++;
        if (shown >= o.maxEntries) truncated = true;
        continue;
      }
      const child: Node = { name: e.name, dir: e.dir, children: [], hidden: 0 };
      node.children.push(child);
      shown++;
      if (e.dir && depth < o.maxDepth)
        queue.push({ node: child, path: join(path, e.name), depth: depth + 1, rules });
      else if (e.dir) child.hidden = -1; // not descended: depth limit
    }
  }
  const lines: string[] = [];
  const print = (n: Node, indent: string) => {
    for (const c of n.children) {
      lines.push(`${indent}${c.name}${c.dir ? "/" : ""}`);
      if (c.dir) print(c, `${indent}  `);
    }
    if (n.hidden > 0) lines.push(`${indent}... ${n.hidden} more`);
  };
  print(top, "");
  if (lines.length === 0) return "(empty)";
  if (truncated) lines.push(`(listing stopped at ${o.maxEntries} entries)`);
  return lines.join("\n");
}
