// The builds a replay renders with when agent.hcl has moved on: a session names each
// producer by (category, name, version), and replay renders its events with exactly that
// build. When the project now installs another version, the download cache usually still
// holds the old one (`providers prune` keeps builds a retained session was written by);
// this module finds it there, verifies it, and hands it to the kernel as a provider of its
// own. What no cached build provides is reported with the way to download it again.
import { platformKey, type ResolvedProvider } from "@pluggableharness/config";
import {
  type CacheEntry,
  executablePath,
  listEntries,
  providerCacheDir,
  readProducers,
  verifyEntry,
} from "@pluggableharness/registry";
import type { ProducerIdentity, ProducerRecord } from "@pluggableharness/state";

/** A producer identity as a map key. */
export const producerKey = (p: ProducerIdentity): string => `${p.category}\u0000${p.name}\u0000${p.version}`;

export interface ReplayBuild {
  /** What the kernel loads: a forge provider under a name of its own (`<repo>@<version>`). */
  readonly provider: ResolvedProvider;
  /** The identities the build serves (from producers.json, else guessed like prune does). */
  readonly producers: readonly ProducerIdentity[];
}

export interface CachedBuilds {
  readonly builds: ReplayBuild[];
  /** Producers no usable cached build serves. */
  readonly missing: ProducerRecord[];
  /** Why a cached build that would have served a producer was not used (changed on disk). */
  readonly refused: Map<string, string>;
}

/**
 * What a cached build produces. The kernel writes producers.json the first time it runs a
 * build; one it never ran is taken to be named after its repository (with or without the
 * `provider-` prefix) in any category, and the kernel's Render routing (exact name and
 * version) decides the rest.
 */
function identitiesOf(entry: CacheEntry, wanted: readonly ProducerRecord[]): ProducerIdentity[] {
  const own = readProducers(entry.dir);
  if (own) return own.map((p) => ({ category: p.category, name: p.name, version: p.version }));
  const repo = entry.record.source.split("/").at(-1)!;
  const names = new Set([repo, repo.replace(/^provider-/, "")]);
  return wanted
    .filter((w) => names.has(w.name) && w.version === entry.record.version)
    .map((w) => ({ category: w.category, name: w.name, version: w.version }));
}

/**
 * Looks up `wanted` (producers this project does not install) among the cached builds for
 * this platform. Each build used is verified like a locked one (its asset against the
 * checksum it is stored under, its unpacked files against the asset).
 */
export function cachedBuildsFor(
  wanted: readonly ProducerRecord[],
  env: Readonly<Record<string, string | undefined>>,
): CachedBuilds {
  const builds: ReplayBuild[] = [];
  const refused = new Map<string, string>();
  if (wanted.length === 0) return { builds, missing: [], refused };
  const open = new Map(wanted.map((w) => [producerKey(w), w]));
  const platform = platformKey();
  for (const entry of listEntries(providerCacheDir(env))) {
    if (open.size === 0) break;
    if (entry.record.platform !== platform) continue;
    const serves = identitiesOf(entry, [...open.values()]);
    const useful = serves.filter((p) => open.has(producerKey(p)));
    if (useful.length === 0) continue;
    const repo = entry.record.source.split("/").at(-1)!;
    const localName = `${repo}@${entry.record.version}`;
    try {
      verifyEntry(entry, entry.record.checksum, `cached build ${localName}`);
    } catch (err) {
      for (const p of useful) refused.set(producerKey(p), (err as Error).message);
      continue;
    }
    for (const p of useful) {
      open.delete(producerKey(p));
      refused.delete(producerKey(p));
    }
    builds.push({
      provider: {
        localName,
        source: entry.record.source,
        version: entry.record.version,
        executable: executablePath(entry),
        checksum: entry.record.checksum,
        origin: "forge",
        platform,
        installDir: entry.dir,
      },
      producers: serves,
    });
  }
  return { builds, missing: [...open.values()], refused };
}

/** Where a producer came from, as far as this project and the cache can tell. */
export interface ProducerOrigin {
  /** The required_providers entry whose provider has this producer at another version. */
  readonly localName?: string;
  readonly source: string;
}

/**
 * The source a missing producer is published from: a provider the project installs that
 * serves the same (category, name) at another version, else a cached build of another
 * version that does.
 */
export function originOf(
  p: ProducerIdentity,
  installed: ReadonlyMap<string, readonly ProducerIdentity[]>,
  resolved: readonly ResolvedProvider[],
  env: Readonly<Record<string, string | undefined>>,
): ProducerOrigin | undefined {
  for (const [localName, producers] of installed) {
    if (!producers.some((q) => q.category === p.category && q.name === p.name)) continue;
    const r = resolved.find((x) => x.localName === localName);
    if (r) return { localName, source: r.source };
  }
  for (const entry of listEntries(providerCacheDir(env))) {
    if (readProducers(entry.dir)?.some((q) => q.category === p.category && q.name === p.name))
      return { source: entry.record.source };
  }
  return undefined;
}

/** How to get a build back into the cache, for the error a replay ends with. */
export function howToGet(p: ProducerRecord, origin: ProducerOrigin | undefined): string {
  if (!origin)
    return `    no provider this project installs, and no cached build, is named ${p.name}: install the provider that publishes it, at version ${p.version}`;
  if (!origin.source.includes("/") || origin.source.startsWith("pluggableharness/"))
    return `    it shipped with the agent itself (${origin.source}); run the agent release that included ${p.name} ${p.version}`;
  const name = origin.localName ?? "<name>";
  return (
    `    get it back: in agent.hcl's required_providers set \`${name} = { source = "${origin.source}", version = "${p.version}" }\` ` +
    `and run \`agent providers upgrade ${name}\` (it downloads that build into the cache); ` +
    "then restore your constraint and upgrade again: the cached build stays for replay"
  );
}
