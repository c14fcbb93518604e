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
import { constants } from "node:fs";
import { link, lstat, open, readdir, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  type DirHandle,
  diffLines,
  formatUnified,
  type Hunk,
  type Jail,
  type RenderNodeInit,
  type ResolvedPath,
  r,
  ToolFailure,
} from "@pluggableharness/tool-kit";
import { fileLocks, guard } from "./files.ts";
import { settings } from "./settings.ts";

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
const siblingName = (target: string, tag: "tmp" | "bak") => `.${basename(target)}.${hex()}.${tag}`;

/**
 * The directories of a change, each opened once through the jail (from its root, no link
 * followed) and kept open until the change is done: every name below is taken relative
 * to one of them, so a link planted on the way after the check is never followed.
 */
class Dirs {
  readonly #jail: Jail;
  readonly #open = new Map<string, Promise<DirHandle>>();

  constructor(jail: Jail) {
    this.#jail = jail;
  }

  of(file: ResolvedPath, create: boolean): Promise<DirHandle> {
    const key = dirname(file.real);
    let d = this.#open.get(key);
    if (!d) {
      d = this.#jail.openParent(file, { create });
      this.#open.set(key, d);
      d.catch(() => this.#open.delete(key));
    }
    return d;
  }

  async close(): Promise<void> {
    for (const d of this.#open.values()) await (await d.catch(() => undefined))?.close();
    this.#open.clear();
  }
}

/** The entry's files as names in its (open) directory. */
function namesOf(e: JournalEntry) {
  return {
    target: basename(e.target),
    tmp: e.tmp === undefined ? undefined : basename(e.tmp),
    backup: e.backup === undefined ? undefined : basename(e.backup),
  };
}

async function rollBack(
  entries: readonly JournalEntry[],
  dirOf: (e: JournalEntry) => Promise<DirHandle>,
): Promise<void> {
  for (const e of [...entries].reverse()) {
    // A directory that is gone holds nothing to undo.
    const dir = await dirOf(e).catch((err: unknown) => {
      if (err instanceof ToolFailure && err.category === "not_found") return undefined;
      throw err;
    });
    if (!dir) continue;
    const n = namesOf(e);
    if (n.backup !== undefined && (await exists(dir.at(n.backup)))) {
      // rename() between two links of one file does nothing: the target was never replaced.
      if (await sameFile(dir.at(n.backup), dir.at(n.target))) await unlink(dir.at(n.backup));
      else await rename(dir.at(n.backup), dir.at(n.target));
    } else if (!e.existed) await unlink(dir.at(n.target)).catch(() => {});
    if (n.tmp !== undefined) await unlink(dir.at(n.tmp)).catch(() => {});
  }
}

async function sameFile(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([lstat(a).catch(() => undefined), lstat(b).catch(() => undefined)]);
  return !!x && !!y && x.ino === y.ino && x.dev === y.dev;
}

const exists = (p: string) =>
  lstat(p).then(
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
      await applyAtomically(changes, settings().jail);
      return changes;
    },
  );
}

export async function applyAtomically(changes: readonly FileChange[], jail: Jail): Promise<void> {
  const real = changes.filter((c) => c.before !== c.after);
  if (real.length === 0) return;
  // Every file of the change, the old name of a move included, before anything is written.
  for (const c of real) await guard(c.path, () => jail.assertWritable(c.file));
  const entries: JournalEntry[] = real.map((c) => ({
    target: c.file.real,
    ...(c.after !== undefined ? { tmp: join(dirname(c.file.real), siblingName(c.file.real, "tmp")) } : {}),
    ...(c.before !== undefined
      ? { backup: join(dirname(c.file.real), siblingName(c.file.real, "bak")) }
      : {}),
    existed: c.before !== undefined,
  }));
  const journal = join(real[0]!.file.root, `.apply-patch-${hex()}.journal`);
  await guard(real[0]!.path, () => writeDurably(journal, JSON.stringify({ version: 1, entries })));
  const dirs = new Dirs(jail);
  const linked: string[] = [];
  let committed = 0;
  try {
    // Stage.
    for (const [i, c] of real.entries()) {
      const e = entries[i]!;
      const n = namesOf(e);
      await guard(c.path, async () => {
        const dir = await dirs.of(c.file, c.after !== undefined);
        if (n.tmp !== undefined) {
          const handle = await jail.createIn(dir, n.tmp, c.mode ?? 0o666);
          try {
            await handle.writeFile(c.after!, "utf8");
            if (c.mode !== undefined) await handle.chmod(c.mode);
            await handle.sync();
          } finally {
            await handle.close();
          }
        }
        if (n.backup !== undefined) {
          await jail.checkBeforeReplace(dir, n.target, c.file);
          await link(dir.at(n.target), dir.at(n.backup));
          jail.noteOwnLink(e.target);
          linked.push(e.target);
        }
      });
    }
    // Commit.
    for (const [i, c] of real.entries()) {
      const e = entries[i]!;
      const n = namesOf(e);
      await guard(c.path, async () => {
        const dir = await dirs.of(c.file, false);
        await jail.checkBeforeReplace(dir, n.target, c.file);
        if (n.tmp !== undefined) await rename(dir.at(n.tmp), dir.at(n.target));
        else await unlink(dir.at(n.target));
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
    const byTarget = new Map(real.map((c) => [c.file.real, c.file]));
    await rollBack(entries, (e) => dirs.of(byTarget.get(e.target)!, false)).catch(() => {});
    for (const t of linked) jail.dropOwnLink(t);
    await dirs.close();
    await unlink(journal).catch(() => {});
    if (err instanceof ToolFailure) {
      throw new ToolFailure(err.category, `${err.message}; no file was changed`, {
        details: { rolled_back: true },
      });
    }
    throw err;
  }
  for (const [i, c] of real.entries()) {
    const n = namesOf(entries[i]!);
    if (n.backup === undefined) continue;
    const dir = await dirs.of(c.file, false).catch(() => undefined);
    if (dir) await unlink(dir.at(n.backup)).catch(() => {});
  }
  for (const t of linked) jail.dropOwnLink(t);
  await dirs.close();
  await unlink(journal).catch(() => {});
}

async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A journal the recovery left alone, and why. */
export interface KeptJournal {
  journal: string;
  reason: string;
}

const hexName = (target: string, tag: string) =>
  new RegExp(`^\\.${basename(target).replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}\\.[0-9a-f]{12}\\.${tag}$`);

/**
 * The entries of a journal, each checked as a write of the tool itself would be: a target
 * inside the roots with no link on its path (so it is where the tool wrote it), not
 * kernel-owned, and its temporary file and backup named as the tool names them, beside it.
 * Anything else is not a journal this provider wrote (a model can write files in the
 * roots): the whole journal is refused and left as it is.
 */
async function checkedEntries(
  text: string,
  jail: Jail,
): Promise<Array<{ e: JournalEntry; file: ResolvedPath }>> {
  const j = JSON.parse(text) as { entries?: unknown };
  if (!Array.isArray(j.entries)) throw new Error("it has no list of entries");
  const out: Array<{ e: JournalEntry; file: ResolvedPath }> = [];
  for (const raw of j.entries as Array<Record<string, unknown>>) {
    const { target, tmp, backup, existed } = raw ?? {};
    if (typeof target !== "string" || typeof existed !== "boolean") throw new Error("an entry is malformed");
    const file = await jail.resolve(target, undefined);
    if (file.real !== target) throw new Error(`${target} is not a plain path inside the roots`);
    await jail.assertWritable(file);
    for (const [v, tag] of [
      [tmp, "tmp"],
      [backup, "bak"],
    ] as const) {
      if (v === undefined) continue;
      if (typeof v !== "string" || dirname(v) !== dirname(target) || !hexName(target, tag).test(basename(v)))
        throw new Error(`${String(v)} is not a ${tag} file the tool would make for ${target}`);
    }
    out.push({
      e: {
        target,
        ...(typeof tmp === "string" ? { tmp } : {}),
        ...(typeof backup === "string" ? { backup } : {}),
        existed,
      },
      file,
    });
  }
  return out;
}

/**
 * Rolls back every change a crash left half-applied under the jail's roots (their
 * journals), at start-up before any call. A journal whose entries the tool could not
 * have written is kept, with the reason (returned).
 */
export async function recoverJournals(jail: Jail): Promise<KeptJournal[]> {
  const kept: KeptJournal[] = [];
  for (const root of jail.roots) {
    const names = await readdir(root).catch(() => [] as string[]);
    for (const name of names) {
      if (!JOURNAL.test(name)) continue;
      const path = join(root, name);
      const dirs = new Dirs(jail);
      try {
        const file = await jail.resolve(path, undefined);
        const { handle } = await jail.openForRead(file);
        let text: string;
        try {
          text = await handle.readFile("utf8");
        } finally {
          await handle.close();
        }
        const checked = await checkedEntries(text, jail);
        const byTarget = new Map(checked.map((x) => [x.e.target, x.file]));
        await rollBack(
          checked.map((x) => x.e),
          (e) => dirs.of(byTarget.get(e.target)!, false),
        );
        await unlink(path);
      } catch (err) {
        kept.push({ journal: path, reason: (err as Error).message });
      } finally {
        await dirs.close();
      }
    }
  }
  return kept;
}
