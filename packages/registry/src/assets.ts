// goreleaser's asset conventions: archive names carry the platform as `<os>_<arch>`
// (`provider-x_1.2.3_linux_amd64.tar.gz` by default, `provider-x_Linux_x86_64.tar.gz`
// from `goreleaser init`'s template), and one checksum file per release lists every
// asset as `<sha256>  <name>` (sha256sum's format).

/** How an asset is packed. */
export type AssetFormat = "tar.gz" | "zip" | "binary";

const OS: Readonly<Record<string, string>> = {
  linux: "linux",
  darwin: "darwin",
  macos: "darwin",
  windows: "windows",
  freebsd: "freebsd",
  openbsd: "openbsd",
  netbsd: "netbsd",
};

const ARCH: Readonly<Record<string, string>> = {
  amd64: "amd64",
  x86_64: "amd64",
  x64: "amd64",
  arm64: "arm64",
  aarch64: "arm64",
  "386": "386",
  i386: "386",
  x86: "386",
  arm: "arm",
  armv6: "arm",
  armv7: "arm",
  riscv64: "riscv64",
  ppc64le: "ppc64le",
  s390x: "s390x",
};

/** Files published next to archives that are never an installable build. */
const NOT_A_BUILD =
  /\.(sha256|sha512|sig|asc|pem|cert|sbom|spdx|json|txt|deb|rpm|apk|msi|pkg|dmg|sh|md|intoto\.jsonl)$/i;

export interface PlatformAsset {
  /** "<os>_<arch>" in Go's naming, the lock file's key. */
  platform: string;
  format: AssetFormat;
}

/**
 * The platform and format of an asset name, or undefined when the name is not a build
 * (a checksum file, a signature, a package for a system installer).
 */
export function parseAssetName(name: string): PlatformAsset | undefined {
  if (NOT_A_BUILD.test(name) || /checksums?|sha256sums/i.test(name)) return undefined;
  let stem = name;
  let format: AssetFormat = "binary";
  for (const [ext, f] of [
    [".tar.gz", "tar.gz"],
    [".tgz", "tar.gz"],
    [".zip", "zip"],
    [".exe", "binary"],
  ] as const) {
    if (stem.toLowerCase().endsWith(ext)) {
      stem = stem.slice(0, -ext.length);
      format = f;
      break;
    }
  }
  if (format === "binary" && /\.(tar|gz|xz|bz2|zst|7z|rar)$/i.test(stem)) return undefined;
  const parts = stem.split(/[_-]/);
  // An amd64 micro-architecture level (`_v1` .. `_v4`): only the baseline runs everywhere.
  if (parts.length > 2 && /^v[1-4]$/.test(parts.at(-1)!)) {
    if (parts.at(-1) !== "v1" || ARCH[parts.at(-2)!.toLowerCase()] !== "amd64") return undefined;
    parts.pop();
  }
  if (parts.length < 3) return undefined;
  const arch = ARCH[parts.at(-1)!.toLowerCase()];
  const os = OS[parts.at(-2)!.toLowerCase()];
  if (arch === undefined || os === undefined) return undefined;
  return { platform: `${os}_${arch}`, format };
}

const FORMAT_PREFERENCE: readonly AssetFormat[] = ["tar.gz", "zip", "binary"];

/**
 * The build of `platform` among a release's asset names: the one named after the project
 * (goreleaser's default name is the repository's), then the preferred format.
 */
export function pickAsset<T extends { name: string }>(
  assets: readonly T[],
  platform: string,
  project: string,
): (T & PlatformAsset) | undefined {
  const candidates = assets
    .map((a) => ({ asset: a, parsed: parseAssetName(a.name) }))
    .filter((c) => c.parsed?.platform === platform);
  candidates.sort((a, b) => {
    const own = (c: typeof a) => (c.asset.name.toLowerCase().startsWith(`${project.toLowerCase()}_`) ? 0 : 1);
    return (
      own(a) - own(b) ||
      FORMAT_PREFERENCE.indexOf(a.parsed!.format) - FORMAT_PREFERENCE.indexOf(b.parsed!.format) ||
      (a.asset.name < b.asset.name ? -1 : 1)
    );
  });
  const best = candidates[0];
  return best ? { ...best.asset, ...best.parsed! } : undefined;
}

/** Every platform the release publishes a build for. */
export function platformsOf(names: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const n of names) {
    const p = parseAssetName(n);
    if (p) out.add(p.platform);
  }
  return [...out].sort();
}

/** The release's checksum file: goreleaser's `<project>_<version>_checksums.txt`, `checksums.txt`, or `SHA256SUMS`. */
export function pickChecksumFile<T extends { name: string }>(
  assets: readonly T[],
  project: string,
  version: string,
): T | undefined {
  const ranked = assets
    .filter((a) => /(^|[_.-])checksums\.txt$|^sha256sums(\.txt)?$/i.test(a.name))
    .sort((a, b) => {
      const rank = (n: string) =>
        n === `${project}_${version}_checksums.txt` ? 0 : n.startsWith(`${project}_`) ? 1 : 2;
      return rank(a.name) - rank(b.name);
    });
  return ranked[0];
}

/** Parses sha256sum output (`<hex>  <name>` or `<hex> *<name>`): asset name -> lowercase hex. */
export function parseChecksumFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([0-9a-fA-F]{64})\s+\*?(.+)$/.exec(line);
    if (!m) continue;
    const name = m[2]!.trim().replace(/^\.\//, "");
    out.set(name, m[1]!.toLowerCase());
  }
  return out;
}
