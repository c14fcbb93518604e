// The roots jail: a path argument is resolved against the call's working directory,
// normalised, then every symlink on it is followed by hand (dangling ones included, so
// that creating a file through a link cannot land outside). Only a fully resolved path
// inside a configured root is ever handed to the operating system. A path in a
// credential store (credentials.ts) is refused too, as written and as resolved.
import { lstat, readlink, realpath } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
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

function isInside(path: string, root: string): boolean {
  if (path === root) return true;
  return path.startsWith(root.endsWith(sep) ? root : root + sep);
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code;
}

export class Jail {
  readonly roots: readonly string[];
  /** Paths refused even inside a root (credential stores); none when undefined. */
  readonly readRules: ReadRules | undefined;

  /** Every deny_read/allow_read entry, for the walkers' per-entry check. */
  private readonly entries: ReadonlySet<string>;

  private constructor(roots: readonly string[], readRules: ReadRules | undefined) {
    this.roots = roots;
    this.readRules = readRules;
    this.entries = new Set([...(readRules?.deny ?? []), ...(readRules?.allow ?? [])]);
  }

  /**
   * Canonicalises configured roots (absolute, existing directories). Throws an Error
   * naming the first bad root.
   */
  static async create(roots: readonly string[], opts: { readRules?: ReadRules } = {}): Promise<Jail> {
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
    return new Jail(real, opts.readRules);
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
    return this.entries.has(abs) && this.hidden(abs) !== undefined;
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
          `relative path ${JSON.stringify(short(requested))} needs an absolute call_context.working_directory`,
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
      `${JSON.stringify(short(requested))} is outside the allowed roots${viaLink ? " (through a symbolic link)" : ""}`,
      { details: { roots: [...this.roots] } },
    );
  }
}

function short(p: string): string {
  return p.length > 200 ? `${p.slice(0, 200)}…` : p;
}

/**
 * Follows every symlink on `absolute` component by component. Components that do not
 * exist are kept as written (they contain no links yet).
 */
async function followLinks(absolute: string, requested: string): Promise<{ real: string; exists: boolean }> {
  let pending = absolute.split(sep).filter((c) => c !== "");
  let current: string = sep;
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    const next = current === sep ? sep + name : current + sep + name;
    let st: Awaited<ReturnType<typeof lstat>>;
    try {
      st = await lstat(next);
    } catch (err) {
      const code = errno(err);
      if (code === "ENOENT" || code === "ENOTDIR") {
        return { real: [next, ...pending].join(sep), exists: false };
      }
      if (code === "ENAMETOOLONG") throw new ToolFailure("invalid_arguments", "a path component is too long");
      if (code === "EACCES") {
        throw new ToolFailure("permission_denied", `cannot inspect ${JSON.stringify(short(requested))}`);
      }
      throw err;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) {
        throw new ToolFailure(
          "permission_denied",
          `too many levels of symbolic links resolving ${JSON.stringify(short(requested))}`,
        );
      }
      const target = await readlink(next);
      const joined = resolve(isAbsolute(target) ? target : resolve(current, target), ...pending);
      pending = joined.split(sep).filter((c) => c !== "");
      current = sep;
      continue;
    }
    if (!st.isDirectory() && pending.length > 0) {
      throw new ToolFailure("not_found", `${JSON.stringify(short(requested))}: ${name} is not a directory`);
    }
    current = next;
  }
  return { real: current, exists: true };
}
