// Where records live. Scope decides the root: `global` under the data directory
// ($XDG_DATA_HOME/agent/memory, else ~/.local/share/agent/memory), `project` and `session`
// under the project's .agent/memory/ (the project being the nearest ancestor of the working
// directory holding agent.hcl, .agent or .git). Two stores implement the same interface:
// markdown files (markdown-store.ts) and SQLite with an FTS5 index (sqlite-store.ts).
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { ScopeName, StoredRecord } from "./record.ts";

export interface Roots {
  /** Directory of global records. */
  readonly global: string;
  /** The project's memory directory (project and session records). */
  readonly project: string;
}

export interface MemoryStore {
  /** Every record visible from this project: global ones and the project's own. */
  list(roots: Roots): StoredRecord[];
  get(roots: Roots, id: string): StoredRecord | undefined;
  /** Creates or replaces (by id) the record. */
  put(roots: Roots, record: StoredRecord): void;
  /** Whether a record was removed. */
  remove(roots: Roots, id: string): boolean;
  /**
   * Full-text matches of `query` among the visible records: id -> relevance in [0, 1]. Absent
   * when the store keeps no index (the caller matches terms itself).
   */
  search?(roots: Roots, query: string): Map<string, number>;
  close(): void;
}

export function dataHome(env: NodeJS.ProcessEnv = process.env): string {
  const x = env["XDG_DATA_HOME"];
  return x && isAbsolute(x) ? x : join(env["HOME"] || homedir(), ".local", "share");
}

/** The project a working directory belongs to. */
export function projectRoot(workingDirectory: string): string {
  let dir = resolve(workingDirectory);
  for (;;) {
    if (["agent.hcl", ".agent", ".git"].some((n) => existsSync(join(dir, n)))) return dir;
    const up = dirname(dir);
    if (up === dir) return resolve(workingDirectory);
    dir = up;
  }
}

export function rootsFor(workingDirectory: string, globalDir: string): Roots {
  return { global: globalDir, project: join(projectRoot(workingDirectory), ".agent", "memory") };
}

/** The directory a scope's records go in. */
export function dirOf(roots: Roots, scope: ScopeName): string {
  return scope === "global" ? roots.global : roots.project;
}
