// The download cache: `$XDG_CACHE_HOME/agent/providers/<source>/<version>/<os_arch>/<sha256>/`
// holds one verified release asset as downloaded, its unpacked files under `pkg/`, and
// `install.json` saying which file is the executable. Entries are written to a temporary
// directory and renamed into place, so a reader sees a whole entry or none.
//
// Verification, on every use: the asset's SHA-256 must be the one the directory is keyed
// by (which the lock file pins), and `pkg/` must hold exactly the asset's files, byte for
// byte, with the executable still executable. Anything else is a refusal naming the file.
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, relative, sep } from "node:path";
import { type ArchiveFile, readArchive } from "./archive.ts";
import type { AssetFormat } from "./assets.ts";
import { RegistryError } from "./errors.ts";

export const INSTALL_RECORD = "install.json";
export const PRODUCERS_RECORD = "producers.json";
const PKG = "pkg";
const RECORD_FORMAT = 1;

export interface InstallRecord {
  format: number;
  source: string;
  version: string;
  platform: string;
  /** "sha256:<hex>" of the asset. */
  checksum: string;
  asset: string;
  assetFormat: AssetFormat;
  /** The executable, relative to pkg/ (POSIX). */
  executable: string;
  installedAt: string;
}

/** A producer identity a build described itself with (written by the kernel once it ran). */
export interface CachedProducer {
  category: number;
  name: string;
  version: string;
}

export interface CacheEntry {
  dir: string;
  record: InstallRecord;
}

/** `$XDG_CACHE_HOME/agent/providers` (`~/.cache/agent/providers`). */
export function providerCacheDir(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const xdg = env["XDG_CACHE_HOME"];
  const base =
    xdg !== undefined && xdg !== "" && isAbsolute(xdg) ? xdg : join(env["HOME"] || homedir(), ".cache");
  return join(base, "agent", "providers");
}

export const sha256 = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");
const hexOf = (checksum: string) => checksum.replace(/^sha256:/, "");

export function entryDir(
  root: string,
  source: string,
  version: string,
  platform: string,
  checksum: string,
): string {
  return join(root, ...source.split("/"), version, platform, hexOf(checksum));
}

export function executablePath(entry: CacheEntry): string {
  return join(entry.dir, PKG, ...entry.record.executable.split("/"));
}

/** Writes a verified asset into the cache (an existing whole entry is kept). */
export function storeEntry(
  root: string,
  record: Omit<InstallRecord, "format" | "installedAt">,
  asset: Uint8Array,
  files: readonly ArchiveFile[],
  now: Date = new Date(),
): CacheEntry {
  const dir = entryDir(root, record.source, record.version, record.platform, record.checksum);
  if (existsSync(join(dir, INSTALL_RECORD))) return { dir, record: readRecord(dir) };
  const tmpRoot = join(root, ".tmp");
  mkdirSync(tmpRoot, { recursive: true, mode: 0o700 });
  const tmp = join(tmpRoot, `${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    mkdirSync(join(tmp, PKG), { recursive: true });
    writeFileSync(join(tmp, record.asset), asset, { mode: 0o644 });
    for (const f of files) {
      const target = join(tmp, PKG, ...f.path.split("/"));
      mkdirSync(dirname(target), { recursive: true });
      const exec = f.executable || f.path === record.executable;
      writeFileSync(target, f.data, { mode: exec ? 0o755 : 0o644 });
      chmodSync(target, exec ? 0o755 : 0o644);
    }
    const full: InstallRecord = { format: RECORD_FORMAT, ...record, installedAt: now.toISOString() };
    writeFileSync(join(tmp, INSTALL_RECORD), `${JSON.stringify(full, null, 2)}\n`);
    mkdirSync(dirname(dir), { recursive: true });
    try {
      renameSync(tmp, dir);
    } catch (err) {
      // Another process stored the same entry first: theirs is as good as ours.
      if (!existsSync(join(dir, INSTALL_RECORD))) throw err;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, record: readRecord(dir) };
}

function readRecord(dir: string): InstallRecord {
  const file = join(dir, INSTALL_RECORD);
  let r: InstallRecord;
  try {
    r = JSON.parse(readFileSync(file, "utf8")) as InstallRecord;
  } catch (err) {
    throw new RegistryError(
      "checksum_mismatch",
      `${file} is unreadable (${(err as Error).message}); remove ${dir} to download the provider again.`,
    );
  }
  if (r.format !== RECORD_FORMAT || typeof r.executable !== "string" || typeof r.asset !== "string") {
    throw new RegistryError(
      "checksum_mismatch",
      `${file} is not an install record this agent wrote; remove ${dir} to download the provider again.`,
    );
  }
  return r;
}

/** The cached entry for exactly this build, if there is one (not yet verified). */
export function findEntry(
  root: string,
  source: string,
  version: string,
  platform: string,
  checksum: string,
): CacheEntry | undefined {
  const dir = entryDir(root, source, version, platform, checksum);
  if (!existsSync(join(dir, INSTALL_RECORD))) return undefined;
  return { dir, record: readRecord(dir) };
}

/**
 * Checks a cached entry against `checksum` (from the lock file): the asset's digest, then
 * every unpacked file against the asset's own. Throws a RegistryError naming the file and
 * platform on any difference.
 */
export function verifyEntry(entry: CacheEntry, checksum: string, label: string): void {
  const { dir, record } = entry;
  const refuse = (path: string, why: string) =>
    new RegistryError(
      "checksum_mismatch",
      `${label} (${record.source} ${record.version}, ${record.platform}): ${path} ${why}. ` +
        `The installed copy was changed after it was verified; it will not run. Remove ${dir} to download it again.`,
    );
  const assetPath = join(dir, record.asset);
  let asset: Uint8Array;
  try {
    asset = readFileSync(assetPath);
  } catch {
    throw refuse(assetPath, "is missing");
  }
  const digest = `sha256:${sha256(asset)}`;
  if (digest !== checksum)
    throw refuse(assetPath, `has checksum ${digest}, the lock file records ${checksum}`);
  const files = readArchive(asset, record.assetFormat, record.asset, record.executable);
  const pkg = join(dir, PKG);
  const expected = new Map(files.map((f) => [f.path, f]));
  for (const f of files) {
    const path = join(pkg, ...f.path.split("/"));
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch {
      throw refuse(path, "is missing");
    }
    if (!st.isFile()) throw refuse(path, "is no longer a regular file");
    if (sha256(readFileSync(path)) !== sha256(f.data)) throw refuse(path, "does not match the release asset");
    if ((f.executable || f.path === record.executable) && (st.mode & 0o100) === 0)
      throw refuse(path, "is no longer executable");
  }
  // Nothing may have been added next to the release's files (a module the executable would load).
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const full = join(at, name);
      const st = lstatSync(full);
      if (st.isDirectory()) walk(full);
      else if (!expected.has(relative(pkg, full).split(sep).join("/")))
        throw refuse(full, "is not part of the release asset");
    }
  };
  walk(pkg);
}

/** Every entry in the cache. */
export function listEntries(root: string): CacheEntry[] {
  const out: CacheEntry[] = [];
  const walk = (at: string, depth: number) => {
    if (depth > 12) return;
    let names: string[];
    try {
      names = readdirSync(at);
    } catch {
      return;
    }
    if (names.includes(INSTALL_RECORD)) {
      try {
        out.push({ dir: at, record: readRecord(at) });
      } catch {
        // an unreadable entry is listed by prune as damaged through its directory only
      }
      return;
    }
    for (const n of names) {
      if (n === ".tmp") continue;
      const full = join(at, n);
      try {
        if (statSync(full).isDirectory()) walk(full, depth + 1);
      } catch {
        // vanished
      }
    }
  };
  walk(root, 0);
  return out.sort((a, b) => (a.dir < b.dir ? -1 : 1));
}

export function readProducers(dir: string): CachedProducer[] | undefined {
  try {
    const v = JSON.parse(readFileSync(join(dir, PRODUCERS_RECORD), "utf8")) as unknown;
    return Array.isArray(v) ? (v as CachedProducer[]) : undefined;
  } catch {
    return undefined;
  }
}

export function writeProducers(dir: string, producers: readonly CachedProducer[]): void {
  const tmp = join(dir, `${PRODUCERS_RECORD}.${process.pid}.tmp`);
  writeFileSync(tmp, `${JSON.stringify(producers)}\n`);
  renameSync(tmp, join(dir, PRODUCERS_RECORD));
}

/** Deletes one entry and the directories it leaves empty up to the cache root. */
export function removeEntry(root: string, dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  let at = dirname(dir);
  while (at.startsWith(root) && at !== root) {
    try {
      if (readdirSync(at).length > 0) break;
      rmSync(at, { recursive: true });
    } catch {
      break;
    }
    at = dirname(at);
  }
}
