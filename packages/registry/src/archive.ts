// Reading a release asset: a goreleaser tar.gz or zip, or a bare executable. Only regular
// files and directories are accepted; a path that is absolute, climbs out (`..`), repeats
// or holds a link, device or other special entry makes the whole archive unsafe. Sizes
// are bounded (a decompression bomb stops at the limit).
import { gunzipSync } from "node:zlib";
import { unzipSync } from "fflate";
import { parseTar } from "nanotar";
import type { AssetFormat } from "./assets.ts";
import { RegistryError } from "./errors.ts";

export interface ArchiveFile {
  /** POSIX relative path. */
  path: string;
  /** Whether the archive marks it executable (a zip carries no modes: false). */
  executable: boolean;
  data: Uint8Array;
}

/** Uncompressed bytes one asset may hold. */
export const MAX_UNPACKED = 1024 * 1024 * 1024;
const MAX_ENTRIES = 10_000;

function safePath(raw: string, asset: string): string | undefined {
  const name = raw.replace(/^(\.\/)+/, "").replace(/\/+$/, "");
  if (name === "" || name === ".") return undefined;
  if (
    name.startsWith("/") ||
    name.includes("\\") ||
    name.includes("\0") ||
    /^[A-Za-z]:/.test(name) ||
    name.split("/").some((s) => s === ".." || s === "." || s === "")
  ) {
    throw new RegistryError("bad_archive", `${asset} holds an unsafe path ${JSON.stringify(raw)}; refused.`);
  }
  return name;
}

/** The files of an asset, checked. `binaryName` names a bare executable asset's file. */
export function readArchive(
  bytes: Uint8Array,
  format: AssetFormat,
  asset: string,
  binaryName: string,
): ArchiveFile[] {
  if (format === "binary") return [{ path: binaryName, executable: true, data: bytes }];
  const files: ArchiveFile[] = [];
  const seen = new Set<string>();
  let total = 0;
  const add = (path: string, executable: boolean, data: Uint8Array) => {
    if (seen.has(path)) throw new RegistryError("bad_archive", `${asset} holds ${path} twice; refused.`);
    seen.add(path);
    total += data.byteLength;
    if (total > MAX_UNPACKED || files.length >= MAX_ENTRIES)
      throw new RegistryError(
        "bad_archive",
        `${asset} unpacks to more than ${MAX_UNPACKED / 1048576} MiB or ${MAX_ENTRIES} files; refused.`,
      );
    files.push({ path, executable, data });
  };
  if (format === "zip") {
    let entries: Record<string, Uint8Array>;
    try {
      entries = unzipSync(bytes, {
        filter: (f) => {
          total += f.originalSize;
          if (total > MAX_UNPACKED)
            throw new RegistryError(
              "bad_archive",
              `${asset} unpacks to more than ${MAX_UNPACKED / 1048576} MiB; refused.`,
            );
          return true;
        },
      });
    } catch (err) {
      if (err instanceof RegistryError) throw err;
      throw new RegistryError(
        "bad_archive",
        `${asset} is not a readable zip archive: ${(err as Error).message}.`,
      );
    }
    total = 0;
    for (const [name, data] of Object.entries(entries)) {
      if (name.endsWith("/")) {
        safePath(name, asset);
        continue;
      }
      const path = safePath(name, asset);
      if (path !== undefined) add(path, false, data);
    }
    return files;
  }
  let tar: Uint8Array;
  try {
    tar = gunzipSync(bytes, { maxOutputLength: MAX_UNPACKED });
  } catch (err) {
    throw new RegistryError(
      "bad_archive",
      `${asset} is not a readable tar.gz archive: ${(err as Error).message}.`,
    );
  }
  let items: import("nanotar").ParsedTarFileItem[];
  try {
    // A copy with its own ArrayBuffer: nanotar reads `.buffer` from offset 0, and Node's
    // Buffers may be views into a shared pool.
    items = parseTar(new Uint8Array(tar));
  } catch (err) {
    throw new RegistryError(
      "bad_archive",
      `${asset} is not a readable tar archive: ${(err as Error).message}.`,
    );
  }
  for (const item of items) {
    const type = item.type ?? "file";
    if (type === "extendedHeader" || type === "globalExtendedHeader") continue;
    if (type === "directory") {
      safePath(item.name, asset);
      continue;
    }
    if (type !== "file" && type !== "contiguousFile") {
      throw new RegistryError(
        "bad_archive",
        `${asset} holds ${JSON.stringify(item.name)}, a ${type} entry; only regular files are installed.`,
      );
    }
    const path = safePath(item.name, asset);
    if (path === undefined) continue;
    const mode = Number.parseInt(item.attrs?.mode ?? "644", 8);
    add(path, (mode & 0o111) !== 0, item.data ?? new Uint8Array());
  }
  return files;
}

/**
 * The plugin executable among the files: the one named after the project (goreleaser
 * names the binary after the repository), at the top or in one wrapping directory, else
 * the only executable file at the top.
 */
export function findExecutable(files: readonly ArchiveFile[], project: string, asset: string): string {
  const names = new Set([project, `${project}.exe`]);
  const depth = (p: string) => p.split("/").length;
  const named = files.filter((f) => depth(f.path) <= 2 && names.has(f.path.split("/").at(-1)!));
  named.sort((a, b) => depth(a.path) - depth(b.path));
  if (named[0]) return named[0].path;
  const top = files.filter((f) => depth(f.path) === 1 && f.executable);
  if (top.length === 1) return top[0]!.path;
  throw new RegistryError(
    "bad_archive",
    `${asset} holds no executable named ${project}${top.length > 1 ? ` (and several executables: ${top.map((f) => f.path).join(", ")})` : ""}.`,
  );
}
