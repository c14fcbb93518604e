// How the sandbox keeps a repository's git metadata read-only (docs/security/git.md). The
// kernel's protected-path list (config/src/git-paths.ts) names, for the project's
// repository, the files that decide which programs git runs or where its configuration
// comes from: in its git directory `config`, `config.worktree`, `commondir` and `hooks`,
// the `modules` and `worktrees` directories (each submodule and linked worktree has its
// own), and a `.git` file pointing elsewhere. Inside a writable root these become
// read-only mounts; git itself must go on working in the sandbox (commit, branch, stash
// write objects, refs, the index and lock files next to them), so the rest of the git
// directory stays writable.

import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Per git directory: what decides the programs git runs and where its configuration comes from. */
export const GIT_CONTROL = ["config", "config.worktree", "commondir", "hooks"] as const;
/** Per git directory: directories holding more git directories (submodules, linked worktrees). */
export const GIT_NESTED = ["modules", "worktrees"] as const;

export type GitMetadataKind = "gitfile" | "control" | "nested";

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** A git directory: it has a HEAD. */
export function isGitDir(dir: string): boolean {
  return existsSync(join(dir, "HEAD"));
}

/**
 * What a protected path is to git, judged by its name and its parent as they are now:
 * a `.git` entry, a control file or a nested directory of an existing git directory;
 * undefined for anything else (a kernel-owned path, or git metadata of no repository yet).
 */
export function gitMetadataKind(path: string): GitMetadataKind | undefined {
  const name = basename(path);
  if (name === ".git") return "gitfile";
  const parent = dirname(path);
  const looksGit =
    basename(parent) === ".git" ||
    ["modules", "worktrees"].includes(basename(dirname(parent))) ||
    isGitDir(parent);
  if (!looksGit) return undefined;
  if ((GIT_CONTROL as readonly string[]).includes(name)) return "control";
  if ((GIT_NESTED as readonly string[]).includes(name)) return "nested";
  return undefined;
}

export interface GitMounts {
  /** Existing paths to mount read-only onto themselves. */
  readonly readOnly: string[];
  /** Absent ones to hold with a read-only placeholder: an empty directory, an empty file, or a commondir saying ".". */
  readonly placeholders: Array<{ path: string; kind: "dir" | "file" | "commondir" }>;
  /** Directories to bind onto themselves so they cannot be renamed or removed around those mounts. */
  readonly pinned: string[];
}

/**
 * The mounts one protected git path needs. An absent control file of an existing git
 * directory gets a placeholder (a hooks directory or a commondir a command could create
 * would redirect git as surely as an edited one); no placeholder is ever made where there
 * is no git directory yet, so a project without a repository stays one.
 */
export function gitMetadataMounts(path: string, kind: GitMetadataKind): GitMounts {
  const out: GitMounts = { readOnly: [], placeholders: [], pinned: [] };
  if (kind === "gitfile") {
    if (isFile(path)) out.readOnly.push(path);
    return out;
  }
  // The name decided this is a git directory; HEAD is not asked for here: a command could
  // delete it to have the next one find no repository to protect.
  if (!isDir(dirname(path))) return out;
  if (kind === "control") control(path, out, true);
  else nested(path, out, 0);
  return out;
}

function control(path: string, out: GitMounts, placeholders: boolean): void {
  if (existsSync(path)) {
    out.readOnly.push(path);
    return;
  }
  if (!placeholders) return;
  const name = basename(path);
  // config.worktree is read only when the (read-only) config turns worktree configuration on.
  if (name === "hooks") out.placeholders.push({ path, kind: "dir" });
  else if (name === "config") out.placeholders.push({ path, kind: "file" });
  else if (name === "commondir") out.placeholders.push({ path, kind: "commondir" });
}

function nested(dir: string, out: GitMounts, depth: number): void {
  if (!isDir(dir) || depth > 3) return;
  out.pinned.push(dir);
  let children: string[];
  try {
    children = readdirSync(dir);
  } catch {
    return;
  }
  for (const child of children) {
    const gd = join(dir, child);
    if (!isDir(gd)) continue;
    // A submodule's hooks directory is its own: hold an absent one too. A linked worktree
    // takes hooks and config from the common directory.
    for (const c of GIT_CONTROL) control(join(gd, c), out, c === "hooks" && basename(dir) === "modules");
    nested(join(gd, "modules"), out, depth + 1);
  }
}
