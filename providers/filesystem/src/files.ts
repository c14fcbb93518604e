// File access shared by the operations: resolving through the jail with the right
// error categories, reading text safely and writing atomically.
import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { KeyedMutex, looksBinary, type ResolvedPath, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./state.ts";

/**
 * Mutations of one file run one at a time, keyed on the resolved path: the kernel's
 * key is the literal `path` argument, and "a.txt", "./a.txt" and a symlink to it are
 * different arguments naming the same file.
 */
export const fileLocks = new KeyedMutex();

export function resolvePath(path: unknown, workingDirectory: string | undefined): Promise<ResolvedPath> {
  return settings().jail.resolve(path, workingDirectory);
}

function fsFailure(err: unknown, path: string): ToolFailure {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case "ENOENT":
      return new ToolFailure("not_found", `${path} does not exist`);
    case "EACCES":
    case "EPERM":
      return new ToolFailure("permission_denied", `the operating system denied access to ${path}`);
    case "EISDIR":
      return new ToolFailure("invalid_arguments", `${path} is a directory`);
    case "ENOTDIR":
      return new ToolFailure("not_found", `a parent of ${path} is not a directory`);
    case "ENOSPC":
    case "EROFS":
    case "EDQUOT":
      return new ToolFailure("execution_failed", `cannot write ${path}: ${code}`);
    default:
      return new ToolFailure("execution_failed", `${path}: ${(err as Error).message}`, {
        details: { code: code ?? "" },
      });
  }
}

export async function guard<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ToolFailure) throw err;
    throw fsFailure(err, path);
  }
}

export interface ExistingText {
  text: string;
  mode: number;
}

/**
 * The current content of a file that is about to be changed; undefined when it does not
 * exist. Binary or non-UTF-8 files are refused, since a text edit would corrupt them.
 */
export async function readTextForChange(file: ResolvedPath): Promise<ExistingText | undefined> {
  if (!file.exists) return undefined;
  return guard(file.requested, async () => {
    const st = await stat(file.real);
    if (st.isDirectory()) throw new ToolFailure("invalid_arguments", `${file.requested} is a directory`);
    const max = settings().maxFileBytes;
    if (st.size > max) {
      throw new ToolFailure(
        "invalid_arguments",
        `${file.requested} is ${st.size} bytes, over the ${max}-byte limit`,
      );
    }
    const data = await readFile(file.real);
    if (looksBinary(data)) throw new ToolFailure("invalid_arguments", `${file.requested} is a binary file`);
    const text = data.toString("utf8");
    if (!Buffer.from(text, "utf8").equals(data)) {
      throw new ToolFailure("invalid_arguments", `${file.requested} is not valid UTF-8 text`);
    }
    return { text, mode: st.mode & 0o7777 };
  });
}

/**
 * Replaces the file's content in one step (temporary file in the same directory, then
 * rename), keeping the mode of the file it replaces. Readers see the old or the new
 * content, never a mix, and a hard link to the old inode is left untouched.
 */
export async function writeAtomically(
  file: ResolvedPath,
  text: string,
  mode: number | undefined,
): Promise<void> {
  await guard(file.requested, async () => {
    const dir = dirname(file.real);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.${basename(file.real)}.${randomBytes(6).toString("hex")}.tmp`);
    const handle = await open(tmp, "wx", mode ?? 0o666);
    try {
      await handle.writeFile(text, "utf8");
      if (mode !== undefined) await handle.chmod(mode);
    } finally {
      await handle.close();
    }
    try {
      await rename(tmp, file.real);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
  });
}
