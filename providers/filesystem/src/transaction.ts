// One change across several files, all or nothing (apply_patch, edit_files, and anything
// else that writes more than one file). The new contents are computed in memory first;
// then, holding the lock of every file involved (taken in sorted order, so two changes
// never deadlock), the change is re-planned, journaled, staged and committed:
//
//   1. journal: `.apply-patch-<id>.journal` at the top of the root of the first file,
//      naming every target, its staged temporary file and its backup;
//   2. stage: each new content written to a temporary file in its target's directory,
//      each existing target hard-linked to a backup name beside it (the data stays put);
//   3. commit: temporary files renamed over their targets, deleted targets unlinked;
//   4. done: backups and the journal removed.
//
// A failure in 2 or 3 rolls back (backups renamed over their targets, created files
// removed). A crash leaves the journal, and the next start of the provider rolls the
// change back from it (`recoverJournals`), so a half-applied change never survives.
import { randomBytes } from "node:crypto";
import { link, mkdir, open, readdir, readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  diffLines,
  formatUnified,
  type Hunk,
  type RenderNodeInit,
  type ResolvedPath,
  r,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { fileLocks, guard } from "./files.ts";

export interface FileChange {
  /** The path as the call named it. */
  path: string;
  file: ResolvedPath;
  /** Current content; undefined when the file does not exist. */
  before: string | undefined;
  /** New content; undefined when the file is deleted. */
  after: string | undefined;
  mode: number | undefined;
  /** This file is the new name of `movedFrom` (which is deleted by the same change). */
  movedFrom?: string;
  /** What the diff is taken against when not `before` (a move: the old file's content). */
  diffBase?: string;
  /** This deletion is the old name of a move to `movedTo`. */
  movedTo?: string;
}

const JOURNAL = /^\.apply-patch-[0-9a-f]{12}\.journal$/;

interface JournalEntry {
  target: string;
  tmp?: string;
  backup?: string;
  existed: boolean;
}

/**
 * Test hook, "<n>:crash" or "<n>:fail": after n commit steps the process dies (SIGKILL),
 * or the next step fails as an I/O error would. Proves recovery and rollback.
 */
const FAULT = /^(\d+):(crash|fail)$/.exec(process.env["PH_FS_FAULT_AFTER_COMMITS"] ?? "");

export function statsOf(c: FileChange): { hunks: Hunk[]; additions: number; deletions: number } {
  const hunks = diffLines(c.diffBase ?? c.before ?? "", c.after ?? "");
  let additions = 0;
  let deletions = 0;
  for (const h of hunks)
    for (const l of h.lines) {
      if (l.op === "add") additions++;
      else if (l.op === "remove") deletions++;
    }
  return { hunks, additions, deletions };
}

export function verbOf(c: FileChange): string {
  if (c.movedFrom !== undefined) return `Move ${c.movedFrom} →`;
  if (c.after === undefined) return c.movedTo !== undefined ? "Remove (moved)" : "Delete";
  return c.before === undefined ? "Create" : "Update";
}

/** The whole change as one preview: a summary line, then every file with its diff. */
export function previewChanges(changes: readonly FileChange[]): RenderNodeInit {
  let adds = 0;
  let dels = 0;
  const parts: RenderNodeInit[] = [];
  for (const c of changes) {
    if (c.movedTo !== undefined) continue; // counted and shown with its destination
    const { hunks, additions, deletions } = statsOf(c);
    adds += additions;
    dels += deletions;
    parts.push(r.text(`${verbOf(c)} ${c.path} (+${additions} -${deletions})`, "bold"));
    if (hunks.length > 0) parts.push(r.diff(hunks));
  }
  const files = changes.filter((c) => c.movedTo === undefined).length;
  return r.group([r.text(`${files} file${files === 1 ? "" : "s"} (+${adds} -${dels})`, "bold"), ...parts]);
}

/** Unified diff text of the whole change (git-style headers, /dev/null for absent sides). */
export function unifiedChange(changes: readonly FileChange[]): string {
  return changes
    .filter((c) => c.movedTo === undefined)
    .map((c) => {
      const { hunks } = statsOf(c);
      const name = c.file.relative || c.path;
      const body = formatUnified(name, hunks);
      if (c.before !== undefined && c.after !== undefined && c.movedFrom === undefined) return body;
      const from = c.movedFrom ?? (c.before === undefined ? "/dev/null" : `a/${name}`);
      const to = c.after === undefined ? "/dev/null" : `b/${name}`;
      const rest = body.split("\n").slice(2).join("\n");
      return `--- ${from === "/dev/null" || from.startsWith("a/") ? from : `a/${from}`}\n+++ ${to}\n${rest}`;
    })
    .join("");
}

/** Refuses two operations on one file: their order would be ambiguous. */
export function checkDistinct(changes: readonly FileChange[]): void {
  const seen = new Map<string, string>();
  for (const c of changes) {
    const prior = seen.get(c.file.real);
    if (prior !== undefined)
      throw new ToolFailure(
        "invalid_arguments",
        `${c.path} is changed twice in one change (also as ${prior}); merge the two into one`,
      );
    seen.set(c.file.real, c.path);
  }
}

async function withLocks<T>(keys: readonly string[], fn: () => Promise<T>): Promise<T> {
  const sorted = [...new Set(keys)].sort();
  const step = (i: number): Promise<T> =>
    i === sorted.length ? fn() : fileLocks.run(sorted[i]!, () => step(i + 1));
  return step(0);
}

const hex = () => randomBytes(6).toString("hex");
const sibling = (target: string, tag: string) =>
  join(dirname(target), `.${basename(target)}.${hex()}.${tag}`);

async function rollBack(entries: readonly JournalEntry[]): Promise<void> {
  for (const e of [...entries].reverse()) {
    if (e.backup !== undefined && (await exists(e.backup))) {
      // rename() between two links of one file does nothing: the target was never replaced.
      if (await sameFile(e.backup, e.target)) await unlink(e.backup);
      else await rename(e.backup, e.target);
    } else if (!e.existed) await unlink(e.target).catch(() => {});
    if (e.tmp !== undefined) await unlink(e.tmp).catch(() => {});
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([stat(a).catch(() => undefined), stat(b).catch(() => undefined)]);
  return !!x && !!y && x.ino === y.ino && x.dev === y.dev;
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/**
 * Plans under every file's lock (re-reading each), then applies the plan atomically.
 * `plan` is called twice: once to learn the files, once under their locks.
 */
export async function commitChanges(plan: () => Promise<FileChange[]>): Promise<FileChange[]> {
  const first = await plan();
  return withLocks(
    first.map((c) => c.file.real),
    async () => {
      const changes = await plan();
      const locked = new Set(first.map((c) => c.file.real));
      if (changes.some((c) => !locked.has(c.file.real)))
        throw new ToolFailure(
          "concurrency_conflict",
          "the files of the change moved while it was planned; retry",
        );
      await applyAtomically(changes);
      return changes;
    },
  );
}

export async function applyAtomically(changes: readonly FileChange[]): Promise<void> {
  const real = changes.filter((c) => c.before !== c.after);
  if (real.length === 0) return;
  const entries: JournalEntry[] = real.map((c) => ({
    target: c.file.real,
    ...(c.after !== undefined ? { tmp: sibling(c.file.real, "tmp") } : {}),
    ...(c.before !== undefined ? { backup: sibling(c.file.real, "bak") } : {}),
    existed: c.before !== undefined,
  }));
  const journal = join(real[0]!.file.root, `.apply-patch-${hex()}.journal`);
  await guard(real[0]!.path, () => writeDurably(journal, JSON.stringify({ version: 1, entries })));
  let committed = 0;
  try {
    // Stage.
    for (const [i, c] of real.entries()) {
      const e = entries[i]!;
      await guard(c.path, async () => {
        if (e.tmp !== undefined) {
          await mkdir(dirname(e.target), { recursive: true });
          const handle = await open(e.tmp, "wx", c.mode ?? 0o666);
          try {
            await handle.writeFile(c.after!, "utf8");
            if (c.mode !== undefined) await handle.chmod(c.mode);
            await handle.sync();
          } finally {
            await handle.close();
          }
        }
        if (e.backup !== undefined) await link(e.target, e.backup);
      });
    }
    // Commit.
    for (const [i, c] of real.entries()) {
      const e = entries[i]!;
      await guard(c.path, async () => {
        if (e.tmp !== undefined) await rename(e.tmp, e.target);
        else await unlink(e.target);
      });
      committed++;
      if (FAULT && committed === Number(FAULT[1])) {
        if (FAULT[2] === "crash") process.kill(process.pid, "SIGKILL");
        throw new ToolFailure(
          "execution_failed",
          `cannot write ${real[committed]?.path ?? c.path}: EIO (injected)`,
        );
      }
    }
  } catch (err) {
    await rollBack(entries).catch(() => {});
    await unlink(journal).catch(() => {});
    if (err instanceof ToolFailure) {
      throw new ToolFailure(err.category, `${err.message}; no file was changed`, {
        details: { rolled_back: true },
      });
    }
    throw err;
  }
  for (const e of entries) if (e.backup !== undefined) await unlink(e.backup).catch(() => {});
  await unlink(journal).catch(() => {});
}

async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, "wx", 0o600);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Rolls back every change a crash left half-applied under `roots` (their journals), at
 * start-up before any call. Returns the journals handled.
 */
export async function recoverJournals(roots: readonly string[]): Promise<string[]> {
  const done: string[] = [];
  for (const root of roots) {
    const names = await readdir(root).catch(() => [] as string[]);
    for (const name of names) {
      if (!JOURNAL.test(name)) continue;
      const path = join(root, name);
      try {
        const j = JSON.parse(await readFile(path, "utf8")) as { entries?: JournalEntry[] };
        await rollBack(j.entries ?? []);
        await unlink(path);
        done.push(path);
      } catch {
        // unreadable: leave it for a human rather than guess
      }
    }
  }
  return done;
}
