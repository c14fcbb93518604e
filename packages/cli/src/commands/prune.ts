// `agent providers prune`: deletes cached forge builds nothing needs. Kept: the builds
// this project's lock file pins, and every build that wrote to a session still on disk
// (replaying it needs that very build), unless --force. Sessions name their producers by
// (category, name, version); a cached build knows its own from the first time the kernel
// ran it (producers.json), else it is matched by its repository name and version.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_FILE, readLockFile } from "@pluggableharness/config";
import {
  type CacheEntry,
  listEntries,
  providerCacheDir,
  readProducers,
  removeEntry,
} from "@pluggableharness/registry";
import { listSessions, openSessionReader } from "@pluggableharness/state";
import { EXIT } from "../exit-codes.ts";
import { type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";

export interface PruneOptions {
  dir?: string;
  force?: boolean;
  dryRun?: boolean;
}

/** Every (name, version) a retained session recorded, with one session id that did. */
function sessionProducers(): Map<string, string> {
  const out = new Map<string, string>();
  const listing = listSessions();
  for (const info of listing.sessions) {
    let reader: ReturnType<typeof openSessionReader> | undefined;
    try {
      reader = openSessionReader(info.sessionId, { log: () => {} });
      for (const p of reader.producers()) {
        const key = `${p.name}\u0000${p.version}`;
        if (!out.has(key)) out.set(key, info.sessionId);
      }
    } catch {
      // an unreadable session protects nothing it cannot name
    } finally {
      reader?.close();
    }
  }
  return out;
}

function sizeOf(dir: string): number {
  let total = 0;
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const full = join(at, name);
      const st = statSync(full);
      if (st.isDirectory()) walk(full);
      else total += st.size;
    }
  };
  try {
    walk(dir);
  } catch {
    // vanished meanwhile
  }
  return total;
}

const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;

/** The session that used this build, if any. */
function usedBy(entry: CacheEntry, producers: Map<string, string>): string | undefined {
  const own = readProducers(entry.dir);
  const repo = entry.record.source.split("/").at(-1)!;
  const names = own?.map((p) => p.name) ?? [repo, repo.replace(/^provider-/, "")];
  for (const name of names) {
    const hit = producers.get(
      `${name}\u0000${own?.find((p) => p.name === name)?.version ?? entry.record.version}`,
    );
    if (hit) return hit;
  }
  return undefined;
}

export function runProvidersPrune(io: Io, opts: PruneOptions): number {
  const root = providerCacheDir(io.env);
  const entries = listEntries(root);
  const dir = projectOf(io, opts.dir).dir;
  const pinned = new Set<string>();
  if (existsSync(join(dir, CONFIG_FILE))) {
    const lock = readLockFile(dir);
    if (lock.ok && lock.lock) {
      for (const e of lock.lock.providers)
        for (const sum of Object.values(e.checksums)) pinned.add(`${e.source}\u0000${e.version}\u0000${sum}`);
    }
  }
  const producers = sessionProducers();
  let removed = 0;
  let freed = 0;
  let kept = 0;
  for (const entry of entries) {
    const r = entry.record;
    const what = `${r.source} ${r.version} (${r.platform})`;
    if (pinned.has(`${r.source}\u0000${r.version}\u0000${r.checksum}`)) {
      kept++;
      line(io.out, `kept     ${what}: pinned by ${join(dir, ".agent", "agent.lock.hcl")}`);
      continue;
    }
    const session = usedBy(entry, producers);
    if (session && !opts.force) {
      kept++;
      line(io.out, `kept     ${what}: session ${session} was written by it (--force deletes it anyway)`);
      continue;
    }
    const size = sizeOf(entry.dir);
    if (!opts.dryRun) removeEntry(root, entry.dir);
    removed++;
    freed += size;
    line(io.out, `${opts.dryRun ? "would remove" : "removed"}  ${what}, ${mib(size)}`);
  }
  line(
    io.out,
    `${opts.dryRun ? "Would remove" : "Removed"} ${removed} cached build${removed === 1 ? "" : "s"} (${mib(freed)}); kept ${kept}.`,
  );
  return EXIT.OK;
}
