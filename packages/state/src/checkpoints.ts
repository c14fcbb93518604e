// File checkpoints beside a session file (`<id>.checkpoints/`), independent of git.
//
// The kernel scans the session's working directory before a turn's resource calls run
// (taking in whatever changed since, the user's own edits included, without recording
// them) and again after them; what differs is that turn's checkpoint: each created,
// modified or deleted file with its content before and after, stored content-addressed
// under objects/. A rewind to a point undoes every checkpoint recorded after it.
//
// Bounded: directories .git and node_modules are not scanned, at most MAX_FILES files, and
// a file over MAX_FILE_BYTES is followed by size and mtime only (a change to it is
// recorded, and a rewind says it cannot restore it).
//
// The kernel's own files in the working directory (`agent.hcl`, `.agent/`: the lock file
// and the remembered approvals) are never followed: a rewind undoes what the agent did to
// the project, never the user's decisions. A rewind writes nothing through a symbolic
// link: a file whose directory has become a link since is reported, not restored, so a
// link planted by a command cannot turn a restore into a write outside the project.
// docs/decisions/tools.md, "Shell, diagnostics, checkpoints".
import { createHash } from "node:crypto";
import {
  appendFileSync,
  cpSync,
  type Dirent,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

export const CHECKPOINTS_SUFFIX = ".checkpoints";
export const MAX_FILES = 20_000;
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
const SKIPPED_DIRS = new Set([".git", "node_modules"]);
/** Top-level names of the working directory that belong to the kernel, not to the project. */
const KERNEL_OWNED = new Set(["agent.hcl", ".agent"]);

/** A path (relative, with `/`) the checkpoints never follow or restore. */
export function isKernelOwned(path: string): boolean {
  return KERNEL_OWNED.has(path.split("/")[0]!);
}

interface Entry {
  size: number;
  mtimeMs: number;
  /** sha256 of the content, or undefined for a file too large to keep. */
  hash: string | undefined;
}

export interface FileChange {
  /** Relative to the working directory, with `/`. */
  readonly path: string;
  /** Content hash before the turn; null: the file did not exist; undefined: too large to keep. */
  readonly before: string | null | undefined;
  readonly after: string | null | undefined;
}

export interface Checkpoint {
  /** The session's last event sequence when it was recorded: it undoes to anything before. */
  readonly seq: number;
  readonly turnId: string;
  readonly at: string;
  readonly changes: readonly FileChange[];
}

export function checkpointsDir(sessionFile: string): string {
  return sessionFile.replace(/\.sqlite$/, "") + CHECKPOINTS_SUFFIX;
}

function walk(root: string): Map<string, { size: number; mtimeMs: number }> {
  const out = new Map<string, { size: number; mtimeMs: number }>();
  const stack = [root];
  while (stack.length > 0 && out.size < MAX_FILES) {
    const dir = stack.pop()!;
    let entries: Dirent[];
    try {
      // The entry types come with the listing: only regular files cost a stat (it runs
      // twice per turn with resource calls, over the whole tree).
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const name = entry.name;
      if (dir === root && KERNEL_OWNED.has(name)) continue;
      const abs = join(dir, name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(name)) stack.push(abs);
        continue;
      }
      if (!entry.isFile()) continue;
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(abs);
      } catch {
        continue;
      }
      // Replaced by something else between the listing and the stat: the next scan sees it.
      if (!st.isFile()) continue;
      out.set(relative(root, abs).split(sep).join("/"), { size: st.size, mtimeMs: st.mtimeMs });
      if (out.size >= MAX_FILES) break;
    }
  }
  return out;
}

interface FileStat {
  size: number;
  mtimeMs: number;
}

/**
 * A file as the walk would see it: its size and mtime, undefined when absent (or not a
 * regular file, which the walk skips too), "unknown" when a directory on its way or the
 * file itself is a symbolic link (the walk does not follow links, but a write through one
 * lands on a file it does see) or a directory (which the walk descends).
 */
function fileState(root: string, parts: readonly string[]): FileStat | undefined | "unknown" {
  let at = root;
  for (let i = 0; i < parts.length; i++) {
    at = join(at, parts[i]!);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(at);
    } catch {
      return undefined; // missing from here on
    }
    if (st.isSymbolicLink()) return "unknown";
    if (i < parts.length - 1) {
      if (!st.isDirectory()) return undefined;
      continue;
    }
    if (st.isDirectory()) return "unknown";
    return st.isFile() ? { size: st.size, mtimeMs: st.mtimeMs } : undefined;
  }
  return undefined;
}

/** One session's checkpoint store and the working tree it follows. */
export class CheckpointStore {
  readonly dir: string;
  readonly root: string;
  private index: Map<string, Entry> | undefined;
  /** Objects known to be stored (by this process), so storing one again costs nothing. */
  private readonly kept = new Set<string>();
  /** The index changed since it was last written. */
  private unsaved = false;
  /**
   * Whether this process has walked the whole tree and found it under MAX_FILES: until
   * then a file named by a call might be one the walk would leave out (past the limit).
   */
  private underLimit = false;

  constructor(dir: string, root: string) {
    this.dir = dir;
    this.root = root;
  }

  private object(hash: string): string {
    return join(this.dir, "objects", hash.slice(0, 2), hash);
  }

  private keep(content: Buffer): string {
    const hash = createHash("sha256").update(content).digest("hex");
    if (this.kept.has(hash)) return hash;
    const file = this.object(hash);
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, content, { mode: 0o600 });
      renameSync(tmp, file);
    }
    this.kept.add(hash);
    return hash;
  }

  /** Content of a kept object. */
  content(hash: string): Buffer {
    return readFileSync(this.object(hash));
  }

  private loadIndex(): Map<string, Entry> {
    if (this.index) return this.index;
    const file = join(this.dir, "index.json");
    this.index = new Map();
    if (existsSync(file)) {
      try {
        for (const [k, v] of Object.entries(JSON.parse(readFileSync(file, "utf8")) as Record<string, Entry>))
          this.index.set(k, v);
      } catch {
        // a damaged index is rebuilt by the next scan
      }
    }
    return this.index;
  }

  private saveIndex(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const file = join(this.dir, "index.json");
    writeFileSync(`${file}.tmp`, JSON.stringify(Object.fromEntries(this.index ?? [])), { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }

  /**
   * Takes in one file as it is now (`st` undefined: absent); pushes its change, if any.
   * Returns whether the index moved.
   */
  private follow(path: string, st: FileStat | undefined, changes: FileChange[]): boolean {
    const index = this.loadIndex();
    const was = index.get(path);
    if (st === undefined) {
      if (!was) return false;
      index.delete(path);
      changes.push({ path, before: was.hash, after: null });
      return true;
    }
    if (was && was.size === st.size && was.mtimeMs === st.mtimeMs) return false;
    let hash: string | undefined;
    if (st.size <= MAX_FILE_BYTES) {
      try {
        hash = this.keep(readFileSync(join(this.root, path)));
      } catch {
        return false; // gone meanwhile: the next scan sees it
      }
    }
    index.set(path, { size: st.size, mtimeMs: st.mtimeMs, hash });
    if (!was) changes.push({ path, before: null, after: hash });
    else if (was.hash !== hash || hash === undefined) changes.push({ path, before: was.hash, after: hash });
    return true;
  }

  /**
   * The index on disk is only a baseline for the next process (a resumed session): every
   * recorded change comes from a scan before the calls and one after them in the same
   * process, and the scan before takes in whatever an older index missed. So it is
   * written by full scans (which cost far more than the write) and by flush(), not after
   * each scan of named files.
   */
  private finish(updated: boolean, save: boolean): void {
    if (updated) this.unsaved = true;
    if (save && (this.unsaved || !existsSync(join(this.dir, "index.json")))) this.flush();
  }

  /** Writes the index if it changed since it was last written. */
  flush(): void {
    if (this.index === undefined) return;
    this.saveIndex();
    this.unsaved = false;
  }

  /** Brings the index up to the tree as it is now; returns what changed since the last scan. */
  scan(): FileChange[] {
    const index = this.loadIndex();
    const now = walk(this.root);
    this.underLimit = now.size < MAX_FILES;
    const changes: FileChange[] = [];
    let updated = false;
    for (const [path, st] of now) if (this.follow(path, st, changes)) updated = true;
    for (const path of [...index.keys()])
      if (!now.has(path) && this.follow(path, undefined, changes)) updated = true;
    this.finish(updated, true);
    return changes;
  }

  /**
   * What a full scan would find at these files (and only there), taking them into the
   * index: for a call known to change nothing else, so the rest of the tree is not walked.
   * Paths are relative to the root or absolute. Undefined when a full scan could see more
   * than these files say (a path outside the root, through or onto a symbolic link or a
   * directory, a tree at the file limit, or not yet walked by this store); the caller
   * then scans the whole tree.
   */
  scanPaths(paths: readonly string[]): FileChange[] | undefined {
    if (!this.underLimit || this.loadIndex().size >= MAX_FILES) return undefined;
    const found = new Map<string, FileStat | undefined>();
    for (const p of paths) {
      const rel = relative(this.root, resolve(this.root, p));
      if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
      const parts = rel.split(sep);
      const key = parts.join("/");
      if (found.has(key)) continue;
      // Files the walk never follows are never recorded, here either.
      if (KERNEL_OWNED.has(parts[0]!) || parts.slice(0, -1).some((d) => SKIPPED_DIRS.has(d))) continue;
      const st = fileState(this.root, parts);
      if (st === "unknown") return undefined;
      found.set(key, st);
    }
    const changes: FileChange[] = [];
    let updated = false;
    for (const [path, st] of found) if (this.follow(path, st, changes)) updated = true;
    this.finish(updated, false);
    return changes;
  }

  /** Appends a checkpoint (only when something changed). */
  record(seq: number, turnId: string, changes: readonly FileChange[]): Checkpoint | undefined {
    if (changes.length === 0) return undefined;
    const cp: Checkpoint = { seq, turnId, at: new Date().toISOString(), changes };
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    appendFileSync(join(this.dir, "checkpoints.jsonl"), `${JSON.stringify(cp)}\n`, { mode: 0o600 });
    return cp;
  }

  checkpoints(): Checkpoint[] {
    const file = join(this.dir, "checkpoints.jsonl");
    if (!existsSync(file)) return [];
    const out: Checkpoint[] = [];
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as Checkpoint);
      } catch {
        // a line cut short by a crash: the checkpoints before it stand
      }
    }
    return out;
  }
}

export type RewindAction = "restore" | "delete" | "create" | "unchanged" | "unrestorable";

export interface RewindStep {
  readonly path: string;
  readonly action: RewindAction;
  /** Content to write (restore/create). */
  readonly target: string | null | undefined;
  /** The file was changed after the agent's last change to it (by someone else): rewinding overwrites that too. */
  readonly changedSince: boolean;
  /** Why an `unrestorable` step cannot be carried out. */
  readonly reason?: string;
}

/** The first directory on `path` (below `root`) that is no longer a plain directory, if any. */
function blockedDirectory(root: string, path: string): string | undefined {
  const parts = path.split("/").slice(0, -1);
  let at = root;
  for (const part of parts) {
    at = join(at, part);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(at);
    } catch {
      return undefined; // missing from here on: mkdir creates plain directories
    }
    if (!st.isDirectory()) return relative(root, at).split(sep).join("/");
  }
  return undefined;
}

function currentHash(abs: string): string | null | undefined {
  try {
    const st = lstatSync(abs);
    if (!st.isFile()) return undefined;
    if (st.size > MAX_FILE_BYTES) return undefined;
    return createHash("sha256").update(readFileSync(abs)).digest("hex");
  } catch {
    return null;
  }
}

/**
 * What undoing every checkpoint recorded after event `seq` does to the working tree: each
 * touched file goes back to its content before the first of those checkpoints.
 */
export function planRewind(store: CheckpointStore, seq: number): RewindStep[] {
  const later = store.checkpoints().filter((c) => c.seq > seq);
  const first = new Map<string, FileChange>();
  const last = new Map<string, FileChange>();
  for (const c of later)
    for (const ch of c.changes) {
      if (!first.has(ch.path)) first.set(ch.path, ch);
      last.set(ch.path, ch);
    }
  const steps: RewindStep[] = [];
  for (const [path, ch] of [...first].sort(([a], [b]) => a.localeCompare(b))) {
    // Checkpoints recorded before the kernel's files were left out may still name them.
    if (isKernelOwned(path)) continue;
    const now = currentHash(join(store.root, path));
    const changedSince = now !== last.get(path)!.after;
    const target = ch.before;
    const blocked = blockedDirectory(store.root, path);
    let action: RewindAction;
    let reason: string | undefined;
    if (blocked !== undefined) {
      action = "unrestorable";
      reason = `${blocked} is no longer a directory (a symbolic link or a file now)`;
    } else if (target === undefined) {
      action = "unrestorable";
      reason = "it was over the checkpoint size limit";
    } else if (now === target) action = "unchanged";
    else if (target === null) action = "delete";
    else if (now === null) action = "create";
    else action = "restore";
    steps.push({ path, action, target, changedSince, ...(reason ? { reason } : {}) });
  }
  return steps;
}

/** Carries the plan out; returns the paths changed. */
export function applyRewind(store: CheckpointStore, steps: readonly RewindStep[]): string[] {
  const done: string[] = [];
  for (const s of steps) {
    const abs = join(store.root, s.path);
    // Checked again here: the tree may have changed since the plan was shown.
    if (isKernelOwned(s.path) || blockedDirectory(store.root, s.path) !== undefined) continue;
    if (s.action === "delete") {
      rmSync(abs, { force: true });
      done.push(s.path);
    } else if (s.action === "restore" || s.action === "create") {
      mkdirSync(dirname(abs), { recursive: true });
      const tmp = `${abs}.rewind-${process.pid}.tmp`;
      writeFileSync(tmp, store.content(s.target!));
      renameSync(tmp, abs);
      done.push(s.path);
    }
  }
  return done;
}

/**
 * The checkpoint store of a session forked at `seq`: the objects, and the checkpoints
 * recorded up to it; the index is left to the fork's first scan (the tree is rewound).
 */
export function forkCheckpoints(
  from: string,
  to: string,
  seq: number,
  seqMap: (old: number) => number,
): void {
  if (!existsSync(from)) return;
  mkdirSync(to, { recursive: true, mode: 0o700 });
  if (existsSync(join(from, "objects")))
    cpSync(join(from, "objects"), join(to, "objects"), { recursive: true });
  const kept = new CheckpointStore(from, "").checkpoints().filter((c) => c.seq <= seq);
  writeFileSync(
    join(to, "checkpoints.jsonl"),
    kept.map((c) => `${JSON.stringify({ ...c, seq: seqMap(c.seq) })}\n`).join(""),
    { mode: 0o600 },
  );
}
