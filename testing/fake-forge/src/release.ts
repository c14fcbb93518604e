// goreleaser-shaped releases for tests: one `<project>_<version>_<os>_<arch>.tar.gz` per
// platform and `<project>_<version>_checksums.txt` listing them in sha256sum's format.
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { createTar } from "nanotar";

export interface ReleaseFile {
  path: string;
  data: string | Uint8Array;
  /** Octal mode, e.g. "755" (default "644"). */
  mode?: string;
}

export const DEFAULT_PLATFORMS = ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"] as const;

export function tarGz(files: readonly ReleaseFile[]): Uint8Array {
  const tar = createTar(
    files.map((f) => ({
      name: f.path,
      data: typeof f.data === "string" ? new TextEncoder().encode(f.data) : f.data,
      attrs: { mode: f.mode ?? "644", mtime: 0, uid: 0, gid: 0, user: "", group: "" },
    })),
  );
  return gzipSync(tar);
}

export function checksumFile(assets: Readonly<Record<string, Uint8Array>>): string {
  return Object.keys(assets)
    .sort()
    .map((name) => `${createHash("sha256").update(assets[name]!).digest("hex")}  ${name}\n`)
    .join("");
}

/** The assets of one release: an archive per platform plus the checksum file. */
export function goreleaserAssets(options: {
  project: string;
  version: string;
  platforms?: readonly string[];
  files: (platform: string) => readonly ReleaseFile[];
}): Record<string, Uint8Array> {
  const archives: Record<string, Uint8Array> = {};
  for (const p of options.platforms ?? DEFAULT_PLATFORMS) {
    archives[`${options.project}_${options.version}_${p}.tar.gz`] = tarGz(options.files(p));
  }
  return {
    ...archives,
    [`${options.project}_${options.version}_checksums.txt`]: new TextEncoder().encode(checksumFile(archives)),
  };
}
