// The roots jail. A path argument is resolved against the call's working directory,
// normalised, then every symlink on it is followed by hand (dangling ones included, so
// that creating a file through a link cannot land outside). Only a fully resolved path
// inside a configured root is ever handed to the operating system. A path in a
// credential store (credentials.ts) is refused too, as written and as resolved.
//
// Resolving is a check; what holds is how the file is then opened (docs/security/
// protected-writes.md). Reads open the resolved path once without following a final link
// and confirm, from the descriptor, that what was opened is that path (Linux:
// /proc/self/fd/N), a regular file with one link; everything after reads that descriptor.
// Writes never name the path again from the top: the parent directory is reached from
// the root one component at a time, each opened without following links, and the file is
// created under a fresh name with O_EXCL and renamed into place within that directory.
// A link planted after the check is then refused or replaced, never followed.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  openSync,
  readlinkSync,
  realpathSync,
  type Stats,
  statSync,
} from "node:fs";
import { type FileHandle, lstat, mkdir, open, readlink, realpath, rename, unlink } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { hiddenBy, hiddenMessage, type ReadRules } from "./credentials.ts";
import { ToolFailure } from "./events.ts";

/** Longest path argument accepted (Linux PATH_MAX). */
export const MAX_PATH_LENGTH = 4096;
/** Symlinks followed while resolving one path before giving up (Linux's limit). */
export const MAX_SYMLINK_HOPS = 40;

export interface ResolvedPath {
  /** The path argument as given. */
  readonly requested: string;
  /** Absolute, symlink-free path inside a root: what the tool operates on. */
  readonly real: string;
  /** The root containing `real`. */
  readonly root: string;
  /** `real` relative to its root ("" for the root itself), with "/" separators. */
  readonly relative: string;
  readonly exists: boolean;
}

export interface JailOptions {
  /**
   * Paths no write may reach, whatever the roots allow: the kernel's own files
   * (KernelCallbackService.ExecEnvironment). Asked before each write; a rejection refuses it.
   */
  readonly protectedPaths?: () => Promise<readonly string[]>;
  /** Read regular files with more than one hard link (default false: refused). */
  readonly allowHardLinks?: boolean;
  /** Credential stores refused even inside a root (credentials.ts); none when undefined. */
  readonly readRules?: ReadRules;
}

const F = constants;
const READ_FLAGS = F.O_RDONLY | F.O_NOFOLLOW | F.O_NONBLOCK;
const DIR_FLAGS = F.O_RDONLY | F.O_DIRECTORY | F.O_NOFOLLOW;
const CREATE_FLAGS = F.O_WRONLY | F.O_CREAT | F.O_EXCL | F.O_NOFOLLOW;

/** Where the kernel says a descriptor points; undefined without /proc (macOS, BSD). */
const PROC_FD = existsSync("/proc/self/fd") ? "/proc/self/fd" : undefined;

function fdPath(fd: number): string | undefined {
  if (!PROC_FD) return undefined;
  try {
    return readlinkSync(`${PROC_FD}/${fd}`);
  } catch {
    return undefined;
  }
}

function isInside(path: string, root: string): boolean {
  if (path === root) return true;
  return path.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** Folded as a case-insensitive file system compares names (see the kernel's protected-paths.ts). */
function fold(path: string): string {
  return path.normalize("NFKC").toLowerCase();
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

function short(p: string): string {
  return p.length > 200 ? `${p.slice(0, 200)}…` : p;
}

const q = (p: string) => JSON.stringify(short(p));

/** A file opened for reading and confirmed to be the resolved path. */
export interface OpenedFile {
  readonly handle: FileHandle;
  readonly stat: Stats;
}

/**
 * A directory held open by descriptor. `at(name)` names an entry of that very directory
 * (`/proc/self/fd/N/name`), wherever the directory is now and whatever links appeared on
 * the path to it since it was opened: the operating system resolves only `name` (and,
 * in the calls that follow links, a link that `name` itself is).
 */
export class DirHandle {
  /** The directory's real path when it was opened. */
  readonly path: string;
  readonly #handle: FileHandle | undefined;

  constructor(path: string, handle: FileHandle | undefined) {
    this.path = path;
    this.#handle = handle;
  }

  /** The directory itself, as a path the file system calls accept. */
  get self(): string {
    return this.#handle && PROC_FD ? `${PROC_FD}/${this.#handle.fd}` : this.path;
  }

  at(name: string): string {
    if (name === "" || name === "." || name === ".." || name.includes(sep))
      throw new Error(`not a directory entry name: ${q(name)}`);
    return `${this.self}${sep}${name}`;
  }

  /** Whether the directory is still where it was opened (always true without /proc). */
  inPlace(): boolean {
    if (!this.#handle || !PROC_FD) return true;
    return fdPath(this.#handle.fd) === this.path;
  }

  async close(): Promise<void> {
    await this.#handle?.close().catch(() => {});
  }
}

export class Jail {
  readonly roots: readonly string[];
  readonly #options: JailOptions;
  /** Files this process itself hard-linked (a transaction's backups), with how many extra links. */
  readonly #ownLinks = new Map<string, number>();
  /** Paths refused even inside a root (credential stores); none when undefined. */
  readonly readRules: ReadRules | undefined;
  /** Every deny_read/allow_read entry, for the walkers' per-entry check. */
  readonly #entries: ReadonlySet<string>;

  private constructor(roots: readonly string[], options: JailOptions) {
    this.roots = roots;
    this.#options = options;
    this.readRules = options.readRules;
    this.#entries = new Set([...(options.readRules?.deny ?? []), ...(options.readRules?.allow ?? [])]);
  }

  /**
   * Canonicalises configured roots (absolute, existing directories). Throws an Error
   * naming the first bad root.
   */
  static async create(roots: readonly string[], options: JailOptions = {}): Promise<Jail> {
    if (roots.length === 0) throw new Error("at least one root is required");
    const real: string[] = [];
    for (const root of roots) {
      if (!isAbsolute(root)) throw new Error(`root ${JSON.stringify(root)} is not an absolute path`);
      let r: string;
      try {
        r = await realpath(root);
      } catch {
        throw new Error(`root ${JSON.stringify(root)} does not exist`);
      }
      if (!(await lstat(r)).isDirectory()) throw new Error(`root ${JSON.stringify(root)} is not a directory`);
      real.push(r);
    }
    return new Jail(real, options);
  }

  /** The deny entry hiding `abs` (absolute, as written or resolved), if any. */
  hidden(abs: string): string | undefined {
    return this.readRules ? hiddenBy(this.readRules, abs) : undefined;
  }

  /**
   * For a walk that starts at a path the jail let through and never follows links: whether
   * to leave `abs` out (with everything under it). Only a rule's own path can change the
   * answer on the way down, so only those are looked at.
   */
  skipInWalk(abs: string): boolean {
    return this.#entries.has(abs) && this.hidden(abs) !== undefined;
  }

  rootOf(real: string): string | undefined {
    // The most specific root wins when roots nest.
    return this.roots.filter((r) => isInside(real, r)).sort((a, b) => b.length - a.length)[0];
  }

  /**
   * Resolves a path argument. Fails with invalid_arguments (malformed or overlong
   * paths, a relative path without a working directory) or permission_denied (outside
   * every root, directly, through `..` or through a symlink; symlink loops).
   */
  async resolve(requested: unknown, workingDirectory: string | undefined): Promise<ResolvedPath> {
    if (typeof requested !== "string" || requested === "") {
      throw new ToolFailure("invalid_arguments", "path must be a non-empty string");
    }
    if (requested.includes("\0")) throw new ToolFailure("invalid_arguments", "path contains a NUL byte");
    let absolute: string;
    if (isAbsolute(requested)) {
      absolute = resolve(requested);
    } else {
      if (!workingDirectory || !isAbsolute(workingDirectory)) {
        throw new ToolFailure(
          "invalid_arguments",
          `relative path ${q(requested)} needs an absolute call_context.working_directory`,
        );
      }
      absolute = resolve(workingDirectory, requested);
    }
    // The lexical check first: a path that names something outside is refused before
    // anything on it is inspected.
    if (!this.roots.some((r) => isInside(absolute, r)) && !(await this.aliasesARoot(absolute))) {
      throw this.outside(requested);
    }
    if (Buffer.byteLength(absolute) > MAX_PATH_LENGTH) {
      throw new ToolFailure("invalid_arguments", `path is longer than ${MAX_PATH_LENGTH} bytes`);
    }
    const { real, exists } = await followLinks(absolute, requested);
    const hidden = this.hidden(absolute) ?? this.hidden(real);
    if (hidden && this.readRules) {
      throw new ToolFailure("permission_denied", hiddenMessage(this.readRules, requested, hidden), {
        details: { setting: "allow_read" },
      });
    }
    const root = this.rootOf(real);
    if (!root) throw this.outside(requested, real !== absolute);
    return { requested, real, root, relative: relative(root, real).split(sep).join("/"), exists };
  }

  // ---- writes -------------------------------------------------------------------------------------

  /**
   * Refuses (permission_denied) a write that would land in a protected path: `file.real`
   * is already free of links, and each protected path is compared as written and as it
   * resolves now (through its own links, dangling ones too), case folded.
   */
  async assertWritable(file: ResolvedPath): Promise<void> {
    const list = this.#options.protectedPaths ? await this.#options.protectedPaths() : [];
    const target = fold(file.real);
    for (const p of list) {
      if (!isAbsolute(p)) continue;
      const forms = [resolve(p)];
      try {
        forms.push((await followLinks(resolve(p), p)).real);
      } catch {
        // Unresolvable (a loop): the path as written still counts.
      }
      if (forms.some((f) => isInside(target, fold(f))))
        throw new ToolFailure(
          "permission_denied",
          `${q(file.requested)} is kernel-owned (it reaches ${short(p)}, the agent's own configuration, policy or state); no tool may write it`,
          { details: { protected_path: p } },
        );
    }
  }

  /**
   * Opens the directory that holds `file`, walking down from its root one component at a
   * time without following links (creating missing directories when `create`). A
   * component that is no longer a plain directory means the tree changed since `file` was
   * resolved: refused, nothing written.
   */
  async openParent(file: ResolvedPath, options: { create: boolean }): Promise<DirHandle> {
    if (file.real === file.root)
      throw new ToolFailure("invalid_arguments", `${q(file.requested)} is a directory`);
    const dir = dirname(file.real);
    const parts = relative(file.root, dir)
      .split(sep)
      .filter((c) => c !== "");
    if (!PROC_FD) return this.#openParentByPath(file, dir, parts, options);
    let handle = await open(file.root, F.O_RDONLY | F.O_DIRECTORY);
    try {
      if (fdPath(handle.fd) !== file.root) throw this.#changed(file, "written");
      for (const part of parts) {
        const at = `${PROC_FD}/${handle.fd}/${part}`;
        let next: FileHandle;
        try {
          next = await open(at, DIR_FLAGS);
        } catch (err) {
          if (errno(err) !== "ENOENT" || !options.create) throw this.#walkFailure(err, file);
          await mkdir(at).catch((e: unknown) => {
            if (errno(e) !== "EEXIST") throw e;
          });
          next = await open(at, DIR_FLAGS).catch((e: unknown) => {
            throw this.#walkFailure(e, file);
          });
        }
        await handle.close();
        handle = next;
      }
      if (fdPath(handle.fd) !== dir) throw this.#changed(file, "written");
      return new DirHandle(dir, handle);
    } catch (err) {
      await handle.close().catch(() => {});
      throw err;
    }
  }

  /** Without /proc: the same walk by path, checked but not race-free (no platform the sandbox runs on). */
  async #openParentByPath(
    file: ResolvedPath,
    dir: string,
    parts: readonly string[],
    options: { create: boolean },
  ): Promise<DirHandle> {
    let at = file.root;
    for (const part of parts) {
      at = join(at, part);
      const st = await lstat(at).catch((err: unknown) => {
        if (errno(err) === "ENOENT" && options.create) return undefined;
        throw this.#walkFailure(err, file);
      });
      if (st === undefined) await mkdir(at);
      else if (!st.isDirectory()) throw this.#changed(file, "written");
    }
    return new DirHandle(dir, undefined);
  }

  /**
   * Checks made right before a file is put in place under `name` of `dir`: the name is
   * absent or a regular file (a link or directory planted there since is refused, though
   * a rename would only replace it), and the directory is still where it was opened.
   */
  async checkBeforeReplace(dir: DirHandle, name: string, file: ResolvedPath): Promise<void> {
    const st = await lstat(dir.at(name)).catch((err: unknown) => {
      if (errno(err) === "ENOENT") return undefined;
      throw err;
    });
    if (st && !st.isFile()) throw this.#changed(file, "written");
    if (!dir.inPlace()) throw this.#changed(file, "written");
  }

  /**
   * Replaces (or creates) `file` with `data` in one step: a fresh temporary file (O_EXCL)
   * in the directory opened by `openParent`, renamed over the name. Readers see the old or
   * the new content, and a hard link to the old file is left untouched.
   */
  async writeFileAtomic(file: ResolvedPath, data: string | Buffer, mode: number | undefined): Promise<void> {
    await this.assertWritable(file);
    const dir = await this.openParent(file, { create: true });
    try {
      const name = basename(file.real);
      const tmp = `.${name}.${randomBytes(6).toString("hex")}.tmp`;
      const handle = await open(dir.at(tmp), CREATE_FLAGS, mode ?? 0o666);
      try {
        try {
          await handle.writeFile(data, typeof data === "string" ? "utf8" : undefined);
          if (mode !== undefined) await handle.chmod(mode);
        } finally {
          await handle.close();
        }
        await this.checkBeforeReplace(dir, name, file);
        await rename(dir.at(tmp), dir.at(name));
      } catch (err) {
        await unlink(dir.at(tmp)).catch(() => {});
        throw err;
      }
    } finally {
      await dir.close();
    }
  }

  /** Creates `name` in `dir` for writing: never follows a link, never opens an existing file. */
  createIn(dir: DirHandle, name: string, mode: number): Promise<FileHandle> {
    return open(dir.at(name), CREATE_FLAGS, mode);
  }

  /** `real` has a hard link made by this process (a backup): reading it is not refused for it. */
  noteOwnLink(real: string): void {
    this.#ownLinks.set(real, (this.#ownLinks.get(real) ?? 0) + 1);
  }

  dropOwnLink(real: string): void {
    const n = (this.#ownLinks.get(real) ?? 0) - 1;
    if (n > 0) this.#ownLinks.set(real, n);
    else this.#ownLinks.delete(real);
  }

  // ---- reads --------------------------------------------------------------------------------------

  /**
   * Opens `file` for reading, once: the last component is not followed (a link planted
   * since the check fails to open), the descriptor is confirmed to be `file.real`, and it
   * must be a directory or a regular file with a single link. Read from `handle` only.
   */
  async openForRead(file: ResolvedPath): Promise<OpenedFile> {
    let handle: FileHandle;
    try {
      handle = await open(file.real, READ_FLAGS);
    } catch (err) {
      throw this.#openFailure(err, file.requested);
    }
    try {
      const st = await handle.stat();
      this.#confirm(handle.fd, st, file.real, file.requested);
      return { handle, stat: st };
    } catch (err) {
      await handle.close().catch(() => {});
      throw err;
    }
  }

  /**
   * The same as `openForRead`, synchronous, by real path (a file found by a walk of a
   * root). Returns the descriptor and its status; the caller closes it.
   */
  openForReadSync(real: string, requested = real): { fd: number; stat: Stats } {
    if (!this.rootOf(real)) throw this.outside(requested);
    let fd: number;
    try {
      fd = openSync(real, READ_FLAGS);
    } catch (err) {
      throw this.#openFailure(err, requested);
    }
    try {
      const st = fstatSync(fd);
      this.#confirm(fd, st, real, requested);
      return { fd, stat: st };
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Opens a directory to list it: not through a link, confirmed to be `real`, inside a root. */
  async openDirectory(real: string, requested = real): Promise<DirHandle> {
    if (!this.rootOf(real)) throw this.outside(requested);
    let handle: FileHandle;
    try {
      handle = await open(real, DIR_FLAGS);
    } catch (err) {
      throw this.#openFailure(err, requested);
    }
    const where = fdPath(handle.fd);
    if (PROC_FD && where !== real) {
      await handle.close().catch(() => {});
      throw this.#moved(requested, where);
    }
    return new DirHandle(real, handle);
  }

  #confirm(fd: number, st: Stats, real: string, requested: string): void {
    if (PROC_FD) {
      const where = fdPath(fd);
      if (where !== real) throw this.#moved(requested, where);
    } else {
      // No way to ask where a descriptor points: the path must still name that very file.
      let same = false;
      try {
        const now = statSync(real);
        same = realpathSync(real) === real && now.ino === st.ino && now.dev === st.dev;
      } catch {
        same = false;
      }
      if (!same) throw this.#moved(requested, undefined);
    }
    if (!st.isFile() && !st.isDirectory())
      throw new ToolFailure("invalid_arguments", `${q(requested)} is not a regular file`);
    if (st.isFile() && st.nlink > 1 + (this.#ownLinks.get(real) ?? 0) && !this.#options.allowHardLinks)
      throw new ToolFailure(
        "permission_denied",
        `${q(requested)} has ${st.nlink} hard links, and another one may be outside the allowed roots, so it is not read ` +
          "(allow_hard_links = true in the provider's configuration allows it)",
        { details: { hard_links: st.nlink } },
      );
  }

  #moved(requested: string, where: string | undefined): ToolFailure {
    if (where !== undefined && this.rootOf(where))
      return new ToolFailure(
        "concurrency_conflict",
        `${q(requested)} was moved while it was opened; try again`,
      );
    return new ToolFailure(
      "permission_denied",
      `${q(requested)} changed while it was opened (a symbolic link on its path was replaced); nothing was read`,
    );
  }

  #changed(file: ResolvedPath, what: "written"): ToolFailure {
    return new ToolFailure(
      "permission_denied",
      `${q(file.requested)} changed while it was being ${what} (a directory or file on its path was replaced, e.g. by a symbolic link); nothing was ${what}`,
    );
  }

  #walkFailure(err: unknown, file: ResolvedPath): Error {
    const code = errno(err);
    if (code === "ELOOP" || code === "ENOTDIR" || code === "EMLINK") return this.#changed(file, "written");
    if (code === "ENOENT")
      return new ToolFailure("not_found", `a parent directory of ${q(file.requested)} does not exist`);
    return err as Error;
  }

  #openFailure(err: unknown, requested: string): Error {
    const code = errno(err);
    // O_NOFOLLOW: the last component became a link after the path was resolved.
    if (code === "ELOOP" || code === "EMLINK")
      return new ToolFailure(
        "permission_denied",
        `${q(requested)} became a symbolic link while it was opened; nothing was read`,
      );
    return err as Error;
  }

  /** True when `absolute` reaches a root through a symlinked ancestor (e.g. /tmp on macOS). */
  private async aliasesARoot(absolute: string): Promise<boolean> {
    let probe = absolute;
    for (;;) {
      try {
        const real = await realpath(probe);
        return this.roots.some((r) => isInside(real, r));
      } catch {
        const parent = dirname(probe);
        if (parent === probe) return false;
        probe = parent;
      }
    }
  }

  private outside(requested: string, viaLink = false): ToolFailure {
    return new ToolFailure(
      "permission_denied",
      `${q(requested)} is outside the allowed roots${viaLink ? " (through a symbolic link)" : ""}`,
      { details: { roots: [...this.roots] } },
    );
  }
}

/**
 * Follows every symlink on `absolute` component by component, as the operating system
 * does: a link's target replaces it (relative to the link's directory, `..` taken from
 * the directory actually reached), links to links and dangling links included. The first
 * component that does not exist ends the walk; the rest is kept as written, normalised
 * (nothing there can redirect yet).
 */
async function followLinks(absolute: string, requested: string): Promise<{ real: string; exists: boolean }> {
  let pending = absolute.split(sep).filter((c) => c !== "" && c !== ".");
  let current: string = sep;
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === "..") {
      current = dirname(current);
      continue;
    }
    const next = current === sep ? sep + name : current + sep + name;
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(next);
    } catch (err) {
      const code = errno(err);
      if (code === "ENOENT" || code === "ENOTDIR") {
        return { real: resolve(next, ...pending), exists: false };
      }
      if (code === "ENAMETOOLONG") throw new ToolFailure("invalid_arguments", "a path component is too long");
      if (code === "EACCES") {
        throw new ToolFailure("permission_denied", `cannot inspect ${q(requested)}`);
      }
      throw err;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) {
        throw new ToolFailure(
          "permission_denied",
          `too many levels of symbolic links resolving ${q(requested)}`,
        );
      }
      const target = await readlink(next);
      pending = [...target.split(sep).filter((c) => c !== "" && c !== "."), ...pending];
      if (isAbsolute(target)) current = sep;
      continue;
    }
    if (!st.isDirectory() && pending.length > 0) {
      throw new ToolFailure("not_found", `${q(requested)}: ${name} is not a directory`);
    }
    current = next;
  }
  return { real: current, exists: true };
}
