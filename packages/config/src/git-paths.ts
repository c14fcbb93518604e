// The git metadata of the project's repository that no tool may write unless the operator
// opts in (`settings { allow_git_metadata_writes = true }`; docs/security/git.md): what
// decides which programs git runs, and where its configuration comes from. The gate
// refuses calls that name these paths; the command sandbox mounts them read-only
// (runtime/src/git-metadata.ts, which knows the same names).

import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** Per git directory: configuration, its worktree part, the common-directory pointer, hooks. */
const CONTROL = ["config", "config.worktree", "commondir", "hooks"];
/** Per git directory: the git directories of submodules and linked worktrees. */
const NESTED = ["modules", "worktrees"];

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function read(p: string): string | undefined {
  try {
    return readFileSync(p, "utf8");
  } catch {
    return undefined;
  }
}

/** The nearest ancestor of `dir` (itself included) holding a `.git`, or undefined. */
export function repositoryTop(dir: string): string | undefined {
  let d = resolve(dir);
  for (let i = 0; i < 256; i++) {
    if (existsSync(join(d, ".git"))) return d;
    const parent = dirname(d);
    if (parent === d) return undefined;
    d = parent;
  }
  return undefined;
}

/**
 * The git metadata paths of the repository containing `projectDir` (the project's own
 * `.git` when there is none yet, so a repository made later is covered from the start):
 * for a `.git` directory its control files and nested directories; for a `.git` file
 * (a linked worktree, a submodule) the file itself, the worktree's own control files and
 * those of the common directory it shares.
 */
export function gitMetadataPaths(projectDir: string): string[] {
  const top = repositoryTop(projectDir) ?? resolve(projectDir);
  const dotGit = join(top, ".git");
  const out: string[] = [];
  let common = dotGit;
  if (isFile(dotGit)) {
    out.push(dotGit);
    const target = /^gitdir: (.+)$/m.exec(read(dotGit) ?? "")?.[1]?.trim();
    if (target) {
      const gitDir = resolve(top, target);
      out.push(join(gitDir, "config.worktree"), join(gitDir, "commondir"));
      const pointer = read(join(gitDir, "commondir"))?.trim();
      common = pointer ? (isAbsolute(pointer) ? pointer : resolve(gitDir, pointer)) : gitDir;
    }
  }
  for (const name of [...CONTROL, ...NESTED]) out.push(join(common, name));
  return [...new Set(out)];
}
