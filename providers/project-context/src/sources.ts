// Finding the project's convention files: from the repository root (the nearest
// ancestor holding .git) down to the working directory, each configured file name in
// each directory, root first. Without a repository only the working directory counts.
// Then, loaded just in time, those of the directories the session has touched files in
// (ContextRequest.files_touched) inside the repository, from the root down to each.
import { readFile, stat } from "node:fs/promises";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

export interface Source {
  label: string;
  path: string;
  /** Distance from the working directory: 0 for the working directory itself. */
  depth: number;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

export async function repositoryRoot(dir: string): Promise<string | undefined> {
  let current = dir;
  for (;;) {
    if (await exists(join(current, ".git"))) return current;
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/** Convention files in root-first order. */
export async function conventionFiles(workingDirectory: string, names: readonly string[]): Promise<Source[]> {
  if (
    !(await stat(workingDirectory).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  )
    return [];
  const root = (await repositoryRoot(workingDirectory)) ?? workingDirectory;
  const dirs: string[] = [];
  for (let d = workingDirectory; ; d = dirname(d)) {
    dirs.unshift(d);
    if (d === root || dirname(d) === d) break;
  }
  const found: Source[] = [];
  for (const [i, dir] of dirs.entries()) {
    for (const name of names) {
      const path = join(dir, name);
      const st = await stat(path).catch(() => undefined);
      if (!st?.isFile()) continue;
      const rel = relative(root, path).split(sep).join("/");
      found.push({ label: rel, path, depth: dirs.length - 1 - i });
    }
  }
  return found;
}

/** Touched directories whose convention files are looked for, the most recently touched first. */
const MAX_TOUCHED_DIRS = 20;

function inside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Convention files of the directories holding the touched files, between the repository
 * root and each of them, that `known` (paths already contributed) does not hold: the
 * subdirectory-scoped rules a session only needs once it works there. Root-first per
 * directory; the most recently touched directory's first.
 */
export async function touchedConventionFiles(
  workingDirectory: string,
  filesTouched: readonly string[],
  names: readonly string[],
  known: ReadonlySet<string>,
): Promise<Source[]> {
  const root = await repositoryRoot(workingDirectory);
  if (!root || filesTouched.length === 0) return [];
  const dirs: string[] = [];
  for (const f of [...filesTouched].reverse()) {
    const abs = isAbsolute(f) ? resolve(f) : resolve(workingDirectory, f);
    const st = await stat(abs).catch(() => undefined);
    const dir = st?.isDirectory() ? abs : dirname(abs);
    if (!inside(dir, root) || dirs.includes(dir)) continue;
    dirs.push(dir);
    if (dirs.length >= MAX_TOUCHED_DIRS) break;
  }
  const seen = new Set(known);
  const found: Source[] = [];
  for (const dir of dirs) {
    const chain: string[] = [];
    for (let d = dir; ; d = dirname(d)) {
      chain.unshift(d);
      if (d === root || dirname(d) === d) break;
    }
    for (const d of chain) {
      for (const name of names) {
        const path = join(d, name);
        if (seen.has(path)) continue;
        seen.add(path);
        const st = await stat(path).catch(() => undefined);
        if (!st?.isFile()) continue;
        found.push({ label: relative(root, path).split(sep).join("/"), path, depth: 0 });
      }
    }
  }
  return found;
}

/** Most bytes read from one convention file. */
export const MAX_FILE_BYTES = 256 * 1024;

/** The file's text without HTML comments or a leading front-matter block; undefined if unreadable. */
export async function readSource(path: string): Promise<string | undefined> {
  let data: Buffer;
  try {
    data = await readFile(path);
  } catch {
    return undefined;
  }
  if (data.subarray(0, 8192).includes(0)) return undefined;
  let text = data.subarray(0, MAX_FILE_BYTES).toString("utf8");
  text = text.replace(/^\uFEFF/, "");
  text = text.replace(/^---\r?\n[\s\S]*?\r?\n---\r?\n/, "");
  text = text.replace(/<!--[\s\S]*?-->/g, "");
  return text.replace(/\n{3,}/g, "\n\n").trim();
}
