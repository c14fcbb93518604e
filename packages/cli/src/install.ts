// Resolving a project's providers the way `agent run` does, for the commands that need
// them without starting a session (validate, providers, replay, providers lock/upgrade,
// init): git-forge providers through the install step (downloading what the cache
// lacks, verified against the lock), then first-party ones and dev overrides.
import {
  type AgentConfig,
  type ConfigDiagnostic,
  devOverridePaths,
  type GlobalConfig,
  type LockFile,
  loadGlobalConfig,
  type ResolvedProvider,
  readLockFile,
  renderLockFile,
  resolveProviders,
  updateLock,
  writeLockFile,
} from "@pluggableharness/config";
import { type InstallMode, installProviders, needsForge } from "@pluggableharness/registry";
import { installationRoot } from "./inspect.ts";
import { type Io, line } from "./io.ts";

export interface ProjectProviders {
  global: GlobalConfig;
  lock: LockFile | undefined;
  resolved: ResolvedProvider[];
  /** The lock as it should be after this resolution (written when asked). */
  nextLock: LockFile;
  /** Whether nextLock differs from the file's content. */
  lockChanged: boolean;
  diagnostics: ConfigDiagnostic[];
}

export interface ResolveProjectOptions {
  mode: InstallMode;
  only?: readonly string[];
  /** Print download progress on stderr (default true). */
  progress?: boolean;
}

export async function resolveProject(
  io: Io,
  projectDir: string,
  config: AgentConfig,
  options: ResolveProjectOptions,
): Promise<ProjectProviders> {
  const diagnostics: ConfigDiagnostic[] = [];
  const g = loadGlobalConfig({ env: io.env });
  if (!g.ok)
    return {
      global: { devOverrides: {} },
      lock: undefined,
      resolved: [],
      nextLock: { providers: [] },
      lockChanged: false,
      diagnostics: g.diagnostics,
    };
  const global = g.config;
  const devOverrides = devOverridePaths(global);
  const read = readLockFile(projectDir);
  if (!read.ok)
    return {
      global,
      lock: undefined,
      resolved: [],
      nextLock: { providers: [] },
      lockChanged: false,
      diagnostics: read.diagnostics,
    };
  const lock = read.lock;
  const installed: Record<string, ResolvedProvider> = {};
  let entries: Parameters<typeof updateLock>[3] =
    lock?.providers.filter((e) =>
      config.requiredProviders.some((r) => r.localName === e.name && needsForge(r, devOverrides)),
    ) ?? [];
  if (config.requiredProviders.some((r) => needsForge(r, devOverrides))) {
    const outcome = await installProviders({
      config,
      env: io.env,
      global,
      lock,
      mode: options.mode,
      ...(options.only ? { only: options.only } : {}),
      devOverrides,
      ...(options.progress === false ? {} : { progress: (l: string) => line(io.err, l) }),
    });
    diagnostics.push(...outcome.diagnostics);
    for (const p of outcome.providers) installed[p.localName] = p;
    entries = outcome.entries;
  }
  const r = resolveProviders(config, { installationRoot: installationRoot(), devOverrides, installed });
  // A forge provider that failed to install is reported once, by the install step.
  diagnostics.push(
    ...r.diagnostics.filter(
      (d) => d.category !== "provider_install" || !diagnostics.some((x) => x.range === d.range),
    ),
  );
  const nextLock = updateLock(lock, r.providers, new Date(), entries);
  const lockChanged = lock === undefined || renderLockFile(nextLock) !== renderLockFile(lock);
  return { global, lock, resolved: r.providers, nextLock, lockChanged, diagnostics };
}

/** Writes the lock file; returns its path. */
export function saveLock(projectDir: string, lock: LockFile): string {
  return writeLockFile(projectDir, lock);
}
