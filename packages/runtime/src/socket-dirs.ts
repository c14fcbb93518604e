// The private directories plugin sockets live in: `<tmp>/ph-<kernel pid>-XXXXXX`, one per
// plugin process, removed when that process exits. A kernel that is killed removes
// nothing, so the next kernel to launch a plugin removes the directories whose owning
// process is gone (its own user's only). The pid in the name is what makes that safe: a
// directory of a live kernel is never touched.
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const NAME = /^ph-(\d+)-[A-Za-z0-9]{6}$/;
const swept = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a live process of another user.
    return (err as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Removes socket directories under `base` left by kernels that died; once per base per process. */
export function sweepStaleSocketDirs(base: string = tmpdir()): string[] {
  if (swept.has(base)) return [];
  swept.add(base);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(base);
  } catch {
    return removed;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const pid = Number(NAME.exec(name)?.[1]);
    if (!pid || pid === process.pid || alive(pid)) continue;
    const dir = join(base, name);
    try {
      if (uid !== undefined && statSync(dir).uid !== uid) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // raced with another sweeper, or not ours to remove
    }
  }
  return removed;
}

/** The longest path makeSocketDir can return under `base`, for the socket-path length check. */
export function longestSocketDir(base: string = tmpdir()): string {
  return join(base, `ph-${process.pid}-XXXXXX`);
}

/** A fresh private (0700) directory for one plugin process's sockets. */
export function makeSocketDir(base: string = tmpdir()): string {
  sweepStaleSocketDirs(base);
  return mkdtempSync(join(base, `ph-${process.pid}-`));
}
