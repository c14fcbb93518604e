// The install step: every required provider that lives on a git forge is resolved to an
// exact version (the lock file's, or the newest release satisfying the constraint),
// downloaded once into the cache after its checksum matched the release's checksum file
// (and the lock file's, when it has one), and verified against the lock on every use.
// First-party providers and dev_overrides are not touched here (config/resolve.ts).
import {
  type AgentConfig,
  type ConfigDiagnostic,
  formatConstraints,
  type GlobalConfig,
  isForgeSource,
  type LockEntry,
  type LockFile,
  platformKey,
  type RequiredProvider,
  type ResolvedProvider,
  satisfies,
} from "@pluggableharness/config";
import semver from "semver";
import { findExecutable, readArchive } from "./archive.ts";
import { parseChecksumFile, pickAsset, pickChecksumFile, platformsOf } from "./assets.ts";
import { executablePath, findEntry, providerCacheDir, sha256, storeEntry, verifyEntry } from "./cache.ts";
import { RegistryError } from "./errors.ts";
import { type Release, type ReleaseSource, releaseSourceFor } from "./forges.ts";
import type { Fetch } from "./http.ts";

/** The largest asset downloaded. */
export const MAX_ASSET_BYTES = 512 * 1024 * 1024;
const MAX_CHECKSUM_FILE = 4 * 1024 * 1024;

export type InstallMode =
  /** Keep locked versions; install what the cache lacks (agent run, validate). */
  | "use"
  /** Also add entries for new providers and the checksums of every published platform (providers lock, init). */
  | "lock"
  /** Pick the newest version satisfying the constraint again (providers upgrade). */
  | "upgrade";

export interface InstallOptions {
  config: Pick<AgentConfig, "requiredProviders">;
  env: Readonly<Record<string, string | undefined>>;
  global?: GlobalConfig;
  lock: LockFile | undefined;
  mode: InstallMode;
  /** With mode "upgrade": only these local names (default: all). */
  only?: readonly string[];
  /** Local names served by a dev_overrides executable: never resolved here. */
  devOverrides?: Readonly<Record<string, string>>;
  platform?: string;
  cacheRoot?: string;
  fetch?: Fetch;
  now?: Date;
  /** Progress, one line each ("Installed …"). */
  progress?: (line: string) => void;
  userAgent?: string;
}

export interface InstallOutcome {
  /** The forge providers, installed and verified. */
  providers: ResolvedProvider[];
  /** Lock entries of the forge providers as they should now be recorded. */
  entries: LockEntry[];
  /** Whether `entries` differ from the lock's. */
  changed: boolean;
  diagnostics: ConfigDiagnostic[];
}

/** Whether a required provider is resolved by this package. */
export function needsForge(
  req: RequiredProvider,
  devOverrides: Readonly<Record<string, string>> = {},
): boolean {
  return devOverrides[req.localName] === undefined && isForgeSource(req.source);
}

const stamp = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, "Z");

function diag(req: RequiredProvider, err: unknown): ConfigDiagnostic {
  const e = err instanceof RegistryError ? err : new RegistryError("bad_response", (err as Error).message);
  const category =
    e.code === "no_matching_version"
      ? "version_constraint"
      : e.code === "checksum_mismatch" || e.code === "lock_mismatch"
        ? "lock_mismatch"
        : "provider_install";
  return {
    severity: "error",
    category,
    summary: `Cannot install provider "${req.localName}"`,
    detail: e.message,
    file: req.range.filename,
    line: req.range.start.line,
    column: req.range.start.column,
    range: req.range,
  };
}

interface Listed {
  release: Release;
  version: string;
}

function versionOf(tag: string): string | undefined {
  const v = tag.trim().replace(/^v/, "");
  return semver.valid(v) === v ? v : undefined;
}

/** Releases with a semver tag, newest first (drafts never). */
function listed(releases: readonly Release[]): Listed[] {
  const seen = new Set<string>();
  const out: Listed[] = [];
  for (const r of releases) {
    const v = versionOf(r.tag);
    if (r.draft || v === undefined || seen.has(v)) continue;
    seen.add(v);
    out.push({ release: r, version: v });
  }
  return out.sort((a, b) => semver.rcompare(a.version, b.version));
}

function choose(req: RequiredProvider, releases: readonly Listed[], where: string): Listed {
  const ok = releases.filter((r) => {
    // A release the forge flags as a pre-release is picked only when named exactly.
    if (r.release.prerelease && !req.constraints.some((c) => c.op === "=" && semver.eq(c.version, r.version)))
      return false;
    return satisfies(r.version, req.constraints);
  });
  if (ok[0]) return ok[0];
  const have = releases.map((r) => r.version);
  throw new RegistryError(
    "no_matching_version",
    have.length === 0
      ? `${req.source} has no release with a semver tag (v1.2.3) on ${where}.`
      : `No release of ${req.source} satisfies "${formatConstraints(req.constraints)}" (agent.hcl asks for it); ${where} has ${have.slice(0, 10).join(", ")}${have.length > 10 ? `, and ${have.length - 10} older` : ""}.`,
  );
}

/** The release's checksums, keyed by platform, for the asset the installer would pick. */
async function publishedChecksums(
  source: ReleaseSource,
  req: RequiredProvider,
  found: Listed,
): Promise<{ byPlatform: Record<string, string>; byAsset: Map<string, string> }> {
  const file = pickChecksumFile(found.release.assets, source.project, found.version);
  if (!file) {
    throw new RegistryError(
      "no_checksum",
      `${req.source} ${found.version} publishes no checksum file (goreleaser's ${source.project}_${found.version}_checksums.txt); without one nothing is installed.`,
    );
  }
  const text = new TextDecoder().decode(
    await source.download(file, MAX_CHECKSUM_FILE, `the checksum file of ${req.source} ${found.version}`),
  );
  const byAsset = parseChecksumFile(text);
  const byPlatform: Record<string, string> = {};
  for (const platform of platformsOf(found.release.assets.map((a) => a.name))) {
    const asset = pickAsset(found.release.assets, platform, source.project);
    const hex = asset && byAsset.get(asset.name);
    if (hex) byPlatform[platform] = `sha256:${hex}`;
  }
  return { byPlatform, byAsset };
}

export async function installProviders(options: InstallOptions): Promise<InstallOutcome> {
  const platform = options.platform ?? platformKey();
  const cacheRoot = options.cacheRoot ?? providerCacheDir(options.env);
  const now = options.now ?? new Date();
  const providers: ResolvedProvider[] = [];
  const entries: LockEntry[] = [];
  const diagnostics: ConfigDiagnostic[] = [];
  let changed = false;
  const wanted = options.config.requiredProviders.filter((r) => needsForge(r, options.devOverrides));
  await Promise.all(
    wanted.map(async (req) => {
      try {
        const r = await installOne(req, { ...options, platform, cacheRoot, now });
        providers.push(r.provider);
        entries.push(r.entry);
        if (r.changed) changed = true;
      } catch (err) {
        diagnostics.push(diag(req, err));
      }
    }),
  );
  const byName = (a: { localName?: string; name?: string }, b: typeof a) =>
    (a.localName ?? a.name)! < (b.localName ?? b.name)! ? -1 : 1;
  providers.sort(byName);
  entries.sort(byName);
  return { providers, entries, changed, diagnostics };
}

async function installOne(
  req: RequiredProvider,
  options: InstallOptions & { platform: string; cacheRoot: string; now: Date },
): Promise<{ provider: ResolvedProvider; entry: LockEntry; changed: boolean }> {
  const { platform, cacheRoot } = options;
  const source = releaseSourceFor(req.source, {
    env: options.env,
    ...(options.global ? { global: options.global } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.userAgent ? { userAgent: options.userAgent } : {}),
  });
  const previous = options.lock?.providers.find((e) => e.name === req.localName);
  const upgrading =
    options.mode === "upgrade" &&
    (options.only === undefined || options.only.length === 0 || options.only.includes(req.localName));
  let locked = previous !== undefined && !upgrading ? previous : undefined;
  if (locked && locked.source !== req.source) {
    if (options.mode === "use") {
      throw new RegistryError(
        "lock_mismatch",
        `The lock file records source "${locked.source}" for "${req.localName}", but agent.hcl now says "${req.source}". Run \`agent providers lock\` to resolve the new source.`,
      );
    }
    locked = undefined;
  }
  if (locked && !satisfies(locked.version, req.constraints)) {
    throw new RegistryError(
      "lock_mismatch",
      `The lock file pins ${req.source} ${locked.version}, which does not satisfy "${formatConstraints(req.constraints)}" in agent.hcl. Run \`agent providers upgrade ${req.localName}\` to pick a version that does.`,
    );
  }

  let releases: Listed[] | undefined;
  const list = async () => {
    releases ??= listed(await source.listReleases());
    return releases;
  };
  let found: Listed | undefined;
  let published: Awaited<ReturnType<typeof publishedChecksums>> | undefined;
  const release = async (): Promise<Listed> => {
    if (found) return found;
    const all = await list();
    if (locked) {
      found = all.find((r) => r.version === locked!.version);
      if (!found)
        throw new RegistryError(
          "not_found",
          `The lock file pins ${req.source} ${locked.version}, but ${source.describe} has no release tagged v${locked.version} (any more).`,
        );
    } else {
      found = choose(req, all, source.describe);
    }
    return found;
  };
  const checksums = async () => {
    published ??= await publishedChecksums(source, req, await release());
    return published;
  };

  let version: string;
  let recorded: Record<string, string>;
  if (locked) {
    version = locked.version;
    recorded = { ...locked.checksums };
    if (options.mode !== "use") {
      // Fill in platforms the release publishes; every already recorded one must agree.
      const pub = (await checksums()).byPlatform;
      for (const [p, sum] of Object.entries(recorded)) {
        if (pub[p] !== undefined && pub[p] !== sum) {
          throw new RegistryError(
            "lock_mismatch",
            `${req.source} ${version}'s checksum file now lists ${pub[p]} for ${p}, but the lock file records ${sum}: the release was changed after it was locked. Nothing was installed.`,
          );
        }
      }
      recorded = { ...pub, ...recorded };
    }
  } else {
    const f = await release();
    version = f.version;
    recorded = (await checksums()).byPlatform;
  }

  const expected = recorded[platform];
  if (expected === undefined) {
    if (locked && options.mode === "use") {
      throw new RegistryError(
        "lock_mismatch",
        `The lock file has no checksum of ${req.source} ${version} for ${platform} (it has ${Object.keys(recorded).join(", ") || "none"}). Run \`agent providers lock\` to add this platform's checksum from the release.`,
      );
    }
    const f = await release();
    throw new RegistryError(
      "no_asset",
      `${req.source} ${version} publishes no build for ${platform}; it has ${platformsOf(f.release.assets.map((a) => a.name)).join(", ") || "no platform builds"}.`,
    );
  }

  const label = `Provider "${req.localName}"`;
  let entry = findEntry(cacheRoot, req.source, version, platform, expected);
  if (entry) {
    verifyEntry(entry, expected, label);
  } else {
    const f = await release();
    const asset = pickAsset(f.release.assets, platform, source.project)!;
    const pub = (await checksums()).byAsset.get(asset.name);
    if (pub === undefined) {
      throw new RegistryError(
        "no_checksum",
        `${req.source} ${version}'s checksum file does not list ${asset.name}; refused.`,
      );
    }
    if (`sha256:${pub}` !== expected) {
      throw new RegistryError(
        "lock_mismatch",
        `${req.source} ${version}'s checksum file lists sha256:${pub} for ${asset.name} (${platform}), but the lock file records ${expected}: the release was changed after it was locked. Refused.`,
      );
    }
    options.progress?.(`Downloading ${req.source} ${version} (${platform}) from ${source.describe}`);
    const bytes = await source.download(asset, MAX_ASSET_BYTES, `${asset.name} of ${req.source} ${version}`);
    const digest = sha256(bytes);
    if (digest !== pub) {
      throw new RegistryError(
        "checksum_mismatch",
        `${asset.name} (${req.source} ${version}, ${platform}) downloaded from ${source.describe} has checksum sha256:${digest}, but the release's checksum file lists sha256:${pub}. Refused; nothing was cached.`,
      );
    }
    const files = readArchive(bytes, asset.format, asset.name, source.project);
    const executable = findExecutable(files, source.project, asset.name);
    entry = storeEntry(
      cacheRoot,
      {
        source: req.source,
        version,
        platform,
        checksum: expected,
        asset: asset.name,
        assetFormat: asset.format,
        executable,
      },
      bytes,
      files,
      options.now,
    );
    verifyEntry(entry, expected, label);
    options.progress?.(`Installed ${req.source} ${version} (${platform}) for provider "${req.localName}"`);
  }

  const same =
    previous !== undefined &&
    previous.source === req.source &&
    previous.version === version &&
    JSON.stringify(sorted(previous.checksums)) === JSON.stringify(sorted(recorded));
  const lockEntry: LockEntry = {
    name: req.localName,
    source: req.source,
    version,
    resolved_at: same ? previous.resolved_at : stamp(options.now),
    checksums: sorted(recorded),
  };
  return {
    provider: {
      localName: req.localName,
      source: req.source,
      version,
      executable: executablePath(entry),
      checksum: expected,
      origin: "forge",
      platform,
      installDir: entry.dir,
    },
    entry: lockEntry,
    changed: !same,
  };
}

function sorted(r: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
}
