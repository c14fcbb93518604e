// The file walk behind glob and grep: directories read in parallel, `.git` always
// skipped, .gitignore files honoured (those above the starting directory up to the
// root included) unless asked not to, symbolic links listed but never followed. Each
// directory is read through a descriptor the jail checked to be that directory, so a
// link swapped in for a directory during the walk cannot show another directory's names.
import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import type { Jail } from "@pluggableharness/tool-kit";
import { isIgnored, loadGitignore, type RuleSet } from "./gitignore.ts";

/** Directories held open at once (each only while it is read). */
const OPEN_DIRS = 32;

export interface Entry {
  /** Path relative to the walk root, "/"-separated. */
  rel: string;
  abs: string;
  kind: "file" | "symlink";
}

export interface WalkOptions {
  jail: Jail;
  /** The root the walk may not leave (a configured root). */
  root: string;
  /** Directory to walk, inside `root`. */
  start: string;
  includeIgnored: boolean;
  /** Stop after this many entries. */
  limit: number;
  signal?: AbortSignal;
  /** Paths left out entirely, not even listed (credential stores the jail hides). */
  skip?: (abs: string) => boolean;
}

export interface WalkResult {
  entries: Entry[];
  /** The walk stopped at `limit`. */
  capped: boolean;
}

function toRel(root: string, abs: string): string {
  const r = relative(root, abs);
  return sep === "/" ? r : r.split(sep).join("/");
}

export async function walk(opts: WalkOptions): Promise<WalkResult> {
  const sets: RuleSet[] = [];
  if (!opts.includeIgnored) {
    // .gitignore files of the directories between the root and the start.
    const chain = toRel(opts.root, opts.start)
      .split("/")
      .filter((c) => c !== "");
    let dir = opts.root;
    let rel = "";
    for (const part of chain) {
      const set = await loadGitignore(dir, rel);
      if (set) sets.push(set);
      dir = join(dir, part);
      rel = rel ? `${rel}/${part}` : part;
    }
  }
  const entries: Entry[] = [];
  let capped = false;
  let open = 0;
  const waiting: Array<() => void> = [];
  const readDir = async (dirAbs: string): Promise<Dirent[]> => {
    // A slot is handed from a finishing read to the next waiting one.
    if (open < OPEN_DIRS) open++;
    else await new Promise<void>((r) => waiting.push(r));
    try {
      const dir = await opts.jail.openDirectory(dirAbs);
      try {
        return await readdir(dir.self, { withFileTypes: true });
      } finally {
        await dir.close();
      }
    } finally {
      const next = waiting.shift();
      if (next) next();
      else open--;
    }
  };
  const visit = async (dirAbs: string, dirRel: string, inherited: RuleSet[]): Promise<void> => {
    if (capped || opts.signal?.aborted) return;
    let rules = inherited;
    if (!opts.includeIgnored) {
      const own = await loadGitignore(dirAbs, dirRel);
      if (own) rules = [...inherited, own];
    }
    let dirents: Dirent[];
    try {
      dirents = await readDir(dirAbs);
    } catch {
      return; // unreadable directories are skipped, as ripgrep does
    }
    const subdirs: Promise<void>[] = [];
    for (const d of dirents) {
      const rel = dirRel ? `${dirRel}/${d.name}` : d.name;
      const isDir = d.isDirectory();
      if (isDir && d.name === ".git") continue;
      if (!opts.includeIgnored && isIgnored(rules, rel, isDir)) continue;
      const abs = join(dirAbs, d.name);
      if (opts.skip?.(abs)) continue;
      if (isDir) subdirs.push(visit(abs, rel, rules));
      else if (d.isFile() || d.isSymbolicLink()) {
        if (entries.length >= opts.limit) {
          capped = true;
          return;
        }
        entries.push({ rel, abs, kind: d.isFile() ? "file" : "symlink" });
      }
    }
    await Promise.all(subdirs);
  };
  await visit(opts.start, toRel(opts.root, opts.start), sets);
  entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { entries, capped };
}
