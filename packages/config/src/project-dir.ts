// Where a project's agent.hcl is, seen from a directory inside it. Like git looking for
// `.git`, the search walks up from the starting directory, but never past the root of the
// repository that directory belongs to: a file above the repository belongs to some other
// project (or to whoever controls that parent directory), and silently adopting its
// providers, roots and policies would hand them a session started here.
import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

const CONFIG_NAME = "agent.hcl";

export interface ProjectLocation {
  /** The project directory: where agent.hcl, `.agent/` and the lock file live. */
  readonly dir: string;
  /** The agent.hcl found, or undefined when there is none (the built-in configuration applies). */
  readonly file: string | undefined;
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The project `start` belongs to: the nearest directory from `start` upward holding an
 * agent.hcl, stopping after the first directory that holds `.git` (the repository root)
 * or at the filesystem root. Without one, `start` itself is the project directory.
 */
export function findProjectDir(start: string): ProjectLocation {
  const origin = resolve(start);
  // A directory that does not exist (a mistyped -C) belongs to no project above it.
  if (!existsSync(origin)) return { dir: origin, file: undefined };
  let d = origin;
  for (let i = 0; i < 256; i++) {
    const file = join(d, CONFIG_NAME);
    if (isFile(file)) return { dir: d, file };
    if (existsSync(join(d, ".git"))) break;
    const parent = dirname(d);
    if (parent === d) break;
    d = parent;
  }
  return { dir: origin, file: undefined };
}
