// Provider resolution: a first-party source resolves to the package shipped with the
// installation (`<root>/providers/<name>/`, executable `src/main.ts`), a dev_overrides
// entry to the local executable it names, and a git-forge source to the build the
// install step (@pluggableharness/registry) put in the cache and verified; a forge
// source it did not install is an error saying how to install it.

import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { type ConfigDiagnostic, errorAt } from "./diagnostics.ts";
import type { AgentConfig, RequiredProvider } from "./model.ts";
import { FIRST_PARTY_OWNER, FIRST_PARTY_PROVIDERS, firstPartyName, isForgeSource } from "./source-address.ts";
import { closest } from "./suggest.ts";
import { formatConstraints, satisfies } from "./version.ts";

export interface ResolvedProvider {
  localName: string;
  source: string;
  /** The package's version; absent for a dev override (Describe reports it). */
  version?: string;
  /** What the kernel launches. */
  executable: string;
  /**
   * "sha256:<hex>": of the package (first party, see firstPartyChecksum) or of the release
   * asset (forge); absent for a dev override.
   */
  checksum?: string;
  origin: "first_party" | "dev_override" | "forge";
  /** The first-party package directory. */
  packageDir?: string;
  /** Forge: the platform key the asset was built for ("linux_amd64"). */
  platform?: string;
  /** Forge: the verified cache entry the executable lives in. */
  installDir?: string;
  /**
   * How it runs, when decided here: what agent.hcl's required_providers entry says, else a
   * first-party package's own `"pluggableharness": { "isolation": ... }`; always "process"
   * for a dev override. Undefined: the kernel's default (a worker thread for a first-party
   * provider, unless it is a tool provider the kernel would sandbox).
   */
  isolation?: "process" | "worker";
}

export interface ResolveOptions {
  /** The installation root: the directory holding `providers/<name>/`. */
  installationRoot: string;
  /** Local name -> executable path, from the global config. */
  devOverrides?: Readonly<Record<string, string>>;
  /** Forge providers the install step resolved and verified, by local name. */
  installed?: Readonly<Record<string, ResolvedProvider>>;
}

export type ResolveResult =
  | { ok: true; provider: ResolvedProvider }
  | { ok: false; diagnostic: ConfigDiagnostic };

const SUPPORTED_FORMS =
  `Supported today: first-party sources "github.com/${FIRST_PARTY_OWNER}/provider-<name>" or "${FIRST_PARTY_OWNER}/<name>" ` +
  `(names: ${FIRST_PARTY_PROVIDERS.join(", ")}), git-forge releases "github.com/<owner>/<repo>" or "gitlab.com/<group>/<repo>", ` +
  "and a dev_overrides entry in the global config pointing at a local plugin executable.";

/** A first-party source whose name is a typo of a first-party provider's: the likely one. */
function misspeltFirstParty(source: string): string {
  const m = /^(github\.com\/pluggableharness\/provider-|pluggableharness\/)([^/]+)$/i.exec(source);
  const near = m ? closest(m[2]!, FIRST_PARTY_PROVIDERS) : undefined;
  return near ? ` Did you mean "${m![1]}${near}"?` : "";
}

export function resolveProvider(req: RequiredProvider, options: ResolveOptions): ResolveResult {
  const override = options.devOverrides?.[req.localName];
  if (override !== undefined) {
    if (!existsSync(override)) {
      return {
        ok: false,
        diagnostic: errorAt(
          "io",
          "dev_overrides executable not found",
          `The global config points "${req.localName}" at ${override}, which does not exist.`,
          req.range,
        ),
      };
    }
    if (req.isolation === "worker") {
      return {
        ok: false,
        diagnostic: errorAt(
          "invalid_value",
          "Isolation not allowed",
          `"${req.localName}" runs the dev_overrides executable ${override}, which always runs as its own process; only installed first-party providers may run in a worker thread.`,
          req.isolationRange ?? req.range,
        ),
      };
    }
    return {
      ok: true,
      provider: {
        localName: req.localName,
        source: req.source,
        executable: override,
        origin: "dev_override",
        isolation: "process",
      },
    };
  }
  if (isForgeSource(req.source)) {
    const installed = options.installed?.[req.localName];
    if (installed !== undefined) return { ok: true, provider: installed };
    return {
      ok: false,
      diagnostic: errorAt(
        "provider_install",
        `Provider "${req.localName}" is not installed`,
        `"${req.source}" comes from a git forge; \`agent providers lock\` (or \`agent run\`) downloads and verifies it.`,
        req.range,
      ),
    };
  }
  const name = firstPartyName(req.source);
  if (name === undefined) {
    return {
      ok: false,
      diagnostic: errorAt(
        "source_address",
        `Cannot resolve provider "${req.localName}"`,
        `"${req.source}" cannot be resolved.${misspeltFirstParty(req.source)} ${SUPPORTED_FORMS}`,
        req.range,
      ),
    };
  }
  const dir = join(options.installationRoot, "providers", name);
  const manifest = join(dir, "package.json");
  const executable = join(dir, "src", "main.ts");
  if (!existsSync(manifest) || !existsSync(executable)) {
    return {
      ok: false,
      diagnostic: errorAt(
        "source_address",
        `First-party provider "${name}" is not installed`,
        `"${req.source}" names a first-party provider, but this installation has no ${relative(options.installationRoot, existsSync(manifest) ? executable : manifest)}.`,
        req.range,
      ),
    };
  }
  let version: string;
  let packageIsolation: unknown;
  try {
    const pkg = JSON.parse(readFileSync(manifest, "utf8")) as {
      version?: unknown;
      pluggableharness?: { isolation?: unknown };
    };
    if (typeof pkg.version !== "string") throw new Error("no version field");
    version = pkg.version;
    packageIsolation = pkg.pluggableharness?.isolation;
  } catch (e) {
    return {
      ok: false,
      diagnostic: errorAt(
        "io",
        `Cannot read the version of "${name}"`,
        `${manifest}: ${(e as Error).message}`,
        req.range,
      ),
    };
  }
  if (!satisfies(version, req.constraints)) {
    return {
      ok: false,
      diagnostic: errorAt(
        "version_constraint",
        `No acceptable version of "${req.localName}"`,
        `The installation ships ${name} ${version}, which does not satisfy "${formatConstraints(req.constraints)}".`,
        req.range,
      ),
    };
  }
  return {
    ok: true,
    provider: {
      localName: req.localName,
      source: req.source,
      version,
      executable,
      checksum: firstPartyChecksum(dir),
      origin: "first_party",
      packageDir: dir,
      ...(req.isolation
        ? { isolation: req.isolation }
        : packageIsolation === "process" || packageIsolation === "worker"
          ? { isolation: packageIsolation }
          : {}),
    },
  };
}

/** Resolves every required provider, collecting all failures. */
export function resolveProviders(
  config: AgentConfig,
  options: ResolveOptions,
): { providers: ResolvedProvider[]; diagnostics: ConfigDiagnostic[] } {
  const providers: ResolvedProvider[] = [];
  const diagnostics: ConfigDiagnostic[] = [];
  for (const req of config.requiredProviders) {
    const r = resolveProvider(req, options);
    if (r.ok) providers.push(r.provider);
    else diagnostics.push(r.diagnostic);
  }
  return { providers, diagnostics };
}

/**
 * SHA-256 over a plugin package: every file below `dir` except `node_modules`
 * directories, as a manifest of "<sha256 of content>  <relative posix path>\n"
 * lines sorted by path; the checksum is the SHA-256 of that manifest. A symbolic
 * link contributes its target text rather than being followed.
 */
export function packageChecksum(dir: string): string {
  return checksumOf(dir, () => true);
}

/**
 * What a first-party provider ships, so the checksum is the same in a clone of the
 * repository and in an installed package of the same commit: its package.json, README.md
 * and src/ (scripts/pack-cli.ts copies exactly these; tests and fixtures stay behind).
 * A lock file written by either is accepted by the other.
 */
export const FIRST_PARTY_SHIPPED: readonly string[] = ["package.json", "README.md", "src"];

/** packageChecksum over the files a first-party package ships (FIRST_PARTY_SHIPPED). */
export function firstPartyChecksum(dir: string): string {
  return checksumOf(dir, (top) => FIRST_PARTY_SHIPPED.includes(top));
}

function checksumOf(dir: string, keepTop: (name: string) => boolean): string {
  const entries: Array<[string, string]> = [];
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      if (at === dir && !keepTop(name)) continue;
      const full = join(at, name);
      const st = lstatSync(full);
      if (st.isDirectory()) {
        if (name !== "node_modules") walk(full);
        continue;
      }
      const rel = relative(dir, full).split(sep).join("/");
      const content = st.isSymbolicLink() ? Buffer.from(`symlink:${readlinkSync(full)}`) : readFileSync(full);
      entries.push([rel, createHash("sha256").update(content).digest("hex")]);
    }
  };
  walk(dir);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const manifest = entries.map(([rel, hash]) => `${hash}  ${rel}\n`).join("");
  return `sha256:${createHash("sha256").update(manifest).digest("hex")}`;
}
