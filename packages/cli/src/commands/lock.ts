// `agent providers lock` and `agent providers upgrade [names…]`: resolve every
// required_providers entry and write `.agent/agent.lock.hcl`. `lock` keeps the versions
// the file already pins (adding new providers and the checksums of every platform the
// release publishes, each checked against what is already recorded); `upgrade` picks the
// newest release that satisfies the constraint again. Both install this platform's build.
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  CONFIG_FILE,
  errorsOf,
  formatDiagnostics,
  type LockEntry,
  type LockFile,
  loadProjectConfig,
} from "@pluggableharness/config";
import { EXIT } from "../exit-codes.ts";
import { resolveProject, saveLock } from "../install.ts";
import { CliError, type Io, line } from "../io.ts";
import { projectOf } from "../project.ts";

export interface LockOptions {
  dir?: string;
}

export async function runLock(
  io: Io,
  mode: "lock" | "upgrade",
  names: readonly string[],
  opts: LockOptions,
): Promise<number> {
  const dir = projectOf(io, opts.dir).dir;
  if (!existsSync(join(dir, CONFIG_FILE))) {
    throw new CliError(
      `agent providers ${mode}: ${dir} has no agent.hcl (\`agent init\` writes one).`,
      EXIT.ERROR,
    );
  }
  const loaded = loadProjectConfig(dir, { env: io.env });
  if (!loaded.ok) throw new CliError(formatDiagnostics(loaded.diagnostics), EXIT.ERROR);
  const unknown = names.filter((n) => !loaded.config.requiredProviders.some((r) => r.localName === n));
  if (unknown.length > 0) {
    throw new CliError(
      `agent providers upgrade: ${unknown.map((n) => `"${n}"`).join(", ")} ${unknown.length === 1 ? "is" : "are"} not in required_providers (${loaded.config.requiredProviders.map((r) => r.localName).join(", ")}).`,
      EXIT.USAGE,
    );
  }
  return lockProject(io, dir, loaded.config, mode, names);
}

/** Resolves and writes the lock; prints one line per provider. Shared with `agent init`. */
export async function lockProject(
  io: Io,
  dir: string,
  config: Parameters<typeof resolveProject>[2],
  mode: "lock" | "upgrade",
  names: readonly string[] = [],
): Promise<number> {
  const r = await resolveProject(io, dir, config, { mode, ...(names.length > 0 ? { only: names } : {}) });
  const errors = errorsOf(r.diagnostics);
  if (errors.length > 0) {
    line(io.err, formatDiagnostics(errors));
    line(io.err, "The lock file was not changed.");
    return EXIT.ERROR;
  }
  for (const w of r.diagnostics) line(io.err, formatDiagnostics([w]));
  const file = r.lockChanged || r.lock === undefined ? saveLock(dir, r.nextLock) : r.lock.file!;
  line(io.out, `${r.lockChanged ? "Wrote" : "Unchanged:"} ${file}`);
  for (const e of r.nextLock.providers) line(io.out, `  ${describeEntry(e, r.lock)}`);
  return EXIT.OK;
}

function describeEntry(e: LockEntry, previous: LockFile | undefined): string {
  const old = previous?.providers.find((p) => p.name === e.name);
  const platforms = Object.keys(e.checksums);
  const was = old === undefined ? " (new)" : old.version !== e.version ? ` (was ${old.version})` : "";
  const where =
    platforms.length === 1 && platforms[0] === "any"
      ? "ships with the agent"
      : `${platforms.length} platform${platforms.length === 1 ? "" : "s"}: ${platforms.join(", ")}`;
  return `${e.name}  ${e.source} ${e.version}${was}  ${where}`;
}
