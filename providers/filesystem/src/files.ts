// File access shared by the operations: resolving through the jail with the right
// error categories, reading text safely and writing atomically.
import type { FileHandle } from "node:fs/promises";
import { KeyedMutex, looksBinary, type ResolvedPath, ToolFailure } from "@pluggableharness/tool-kit";
import { settings } from "./settings.ts";

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

/** Up to `n` bytes from the start of an open file (fewer if it is shorter now). */
export async function readUpTo(handle: FileHandle, n: number): Promise<Buffer> {
  const data = Buffer.alloc(n);
  let got = 0;
  while (got < n) {
    const { bytesRead } = await handle.read(data, got, n - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return data.subarray(0, got);
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
    // One descriptor, checked to be the resolved file (jail.ts), read to the end.
    const { handle, stat: st } = await settings().jail.openForRead(file);
    try {
      if (st.isDirectory()) throw new ToolFailure("invalid_arguments", `${file.requested} is a directory`);
      const max = settings().maxFileBytes;
      if (st.size > max) {
        throw new ToolFailure(
          "invalid_arguments",
          `${file.requested} is ${st.size} bytes, over the ${max}-byte limit`,
        );
      }
      const data = await readUpTo(handle, st.size);
      if (looksBinary(data)) throw new ToolFailure("invalid_arguments", `${file.requested} is a binary file`);
      const text = data.toString("utf8");
      if (!Buffer.from(text, "utf8").equals(data)) {
        throw new ToolFailure("invalid_arguments", `${file.requested} is not valid UTF-8 text`);
      }
      return { text, mode: st.mode & 0o7777 };
    } finally {
      await handle.close();
    }
  });
}

/**
 * Replaces the file's content in one step (temporary file in the same directory, then
 * rename), keeping the mode of the file it replaces. Readers see the old or the new
 * content, never a mix, and a hard link to the old inode is left untouched. The jail
 * refuses kernel-owned targets and reaches the directory without following links.
 */
export async function writeAtomically(
  file: ResolvedPath,
  text: string,
  mode: number | undefined,
): Promise<void> {
  await guard(file.requested, () => settings().jail.writeFileAtomic(file, text, mode));
}
