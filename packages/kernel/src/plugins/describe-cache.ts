// The on-disk cache of providers' static descriptions: which categories a provider
// serves, its Describe identities, and its GetSchema / GetCapabilities answers. With an
// entry, the kernel builds tool declarations and validates the configuration without
// launching the plugin, and launches it only when something first calls it.
//
// An entry is keyed by what determines those answers: the provider's source, version and
// package checksum (the lock file's), the digest of the code that actually runs (its
// bundle's manifest digest, or the checksums of the workspace packages it is built from
// when it runs from source), and this kernel's version. Any change gives a new key; the
// entries of the provider's older keys are deleted when the new one is written. Only
// first-party providers are cached (a dev_overrides executable has no checksum).
// Entries hold protobuf bytes (base64) of answers that carry no secrets: descriptions
// are asked for before Configure.
//
// Beside each entry, the digests of configurations the provider's Configure accepted
// (in the sibling directory `<cache>.accepted/`): a dormant provider whose configuration is not among them is launched and
// configured at start, so a block its own checks refuse stops `agent run` as it stops
// `agent validate`, instead of failing at its first call (configDigest: secrets count
// only as set or not). And, for a bridge whose operations come from its configuration
// alone (operations_cacheable), what it answered after Configure, per accepted
// configuration (`<cache>.operations/`), so it too can stay dormant until first use; in
// the same directory, the models a model provider declared once configured, so `agent
// validate` and `agent providers` need not launch it to list them (keptModelsAllowed).
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type DescMessage, equals, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { packageChecksum, type ResolvedProvider } from "@pluggableharness/config";
import { type ProducerRef, ProducerRefSchema } from "@pluggableharness/protocol/common";
import { type ContextCapabilities, ContextCapabilitiesSchema } from "@pluggableharness/protocol/context";
import { type FrontendCapabilities, FrontendCapabilitiesSchema } from "@pluggableharness/protocol/frontend";
import { type MemoryCapabilities, MemoryCapabilitiesSchema } from "@pluggableharness/protocol/memory";
import { type Capabilities, CapabilitiesSchema } from "@pluggableharness/protocol/model";
import { type GetSchemaResponse, GetSchemaResponseSchema } from "@pluggableharness/protocol/tool";
import { type WidgetCapabilities, WidgetCapabilitiesSchema } from "@pluggableharness/protocol/widget";

/** A provider's static answers, live or from the cache. */
export interface ProviderDescription {
  readonly categories: readonly string[];
  readonly producers: Readonly<Record<string, ProducerRef>>;
  readonly toolSchema?: GetSchemaResponse;
  readonly model?: Capabilities;
  readonly context?: ContextCapabilities;
  readonly memory?: MemoryCapabilities;
  readonly frontend?: FrontendCapabilities;
  readonly widget?: WidgetCapabilities;
}

const FORMAT = 1;

interface Entry {
  readonly format: number;
  readonly key: string;
  readonly categories: string[];
  readonly producers: Record<string, string>;
  readonly answers: Record<string, string>;
}

const ANSWERS = {
  toolSchema: GetSchemaResponseSchema,
  model: CapabilitiesSchema,
  context: ContextCapabilitiesSchema,
  memory: MemoryCapabilitiesSchema,
  frontend: FrontendCapabilitiesSchema,
  widget: WidgetCapabilitiesSchema,
} as const;

type AnswerName = keyof typeof ANSWERS;

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const decode = <D extends DescMessage>(schema: D, text: string): MessageShape<D> =>
  fromBinary(schema, Buffer.from(text, "base64"));

/** $XDG_CACHE_HOME/agent/describe (per user). */
export function defaultDescribeCacheDir(env: Readonly<Record<string, string | undefined>>): string {
  const xdg = env["XDG_CACHE_HOME"];
  const base = xdg?.startsWith("/") ? xdg : join(env["HOME"] || homedir(), ".cache");
  return join(base, "agent", "describe");
}

/** A file-name-safe prefix naming the provider, so older entries can be found and removed. */
function filePrefix(source: string): string {
  return `${source.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 80)}--`;
}

const sourceDigests = new Map<string, string>();
const packageChecksums = new Map<string, string>();

function cachedChecksum(dir: string): string {
  let c = packageChecksums.get(dir);
  if (c === undefined) {
    c = packageChecksum(dir);
    packageChecksums.set(dir, c);
  }
  return c;
}

/**
 * The checksums of the workspace packages a first-party provider is built from (its
 * @pluggableharness/* dependencies, transitively): what a change to shared code such as
 * the tool kit changes, where the provider's own checksum would not.
 */
export function workspaceDependencyDigest(packageDir: string, installationRoot: string): string {
  const memo = sourceDigests.get(packageDir);
  if (memo) return memo;
  const seen = new Map<string, string>();
  const visit = (dir: string) => {
    let deps: Record<string, string> = {};
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        dependencies?: Record<string, string>;
      };
      deps = pkg.dependencies ?? {};
    } catch {
      return;
    }
    for (const name of Object.keys(deps).sort()) {
      if (!name.startsWith("@pluggableharness/") || seen.has(name)) continue;
      const depDir = join(installationRoot, "node_modules", name);
      try {
        seen.set(name, cachedChecksum(depDir));
      } catch {
        seen.set(name, "missing");
        continue;
      }
      visit(depDir);
    }
  };
  visit(packageDir);
  const lines = [...seen.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([n, c]) => `${c}  ${n}\n`)
    .join("");
  const digest = `sha256:${createHash("sha256").update(lines).digest("hex")}`;
  sourceDigests.set(packageDir, digest);
  return digest;
}

/**
 * The operations a cacheable bridge (operations_cacheable: the agent and commands
 * providers) answered after Configure, kept per entry and accepted configuration, with the
 * fingerprint of the paths they were read from and the warnings its Configure gave.
 */
export interface KeptOperations {
  readonly schema: GetSchemaResponse;
  readonly fingerprint: string;
  readonly warnings: readonly string[];
}

/** Sizes and modification times of `paths` (a directory's entries included), or "missing". */
export function sourcesFingerprint(paths: readonly string[]): string {
  const stamp = (p: string) => {
    try {
      const st = statSync(p);
      return `${st.size}:${st.mtimeMs}`;
    } catch {
      return "missing";
    }
  };
  const lines: string[] = [];
  for (const path of paths) {
    lines.push(`${path}\u0000${stamp(path)}`);
    let names: string[] = [];
    try {
      if (statSync(path).isDirectory()) names = readdirSync(path).sort();
    } catch {
      // a missing path is stamped as such above
    }
    for (const n of names) lines.push(`${path}/${n}\u0000${stamp(join(path, n))}`);
  }
  return createHash("sha256").update(lines.join("\n")).digest("hex");
}

/**
 * What kept operations (and models) are filed under: the accepted configuration and the
 * project the provider runs in, whose files a default may name (the commands provider
 * reads `.agent/commands` of its working directory): one project's answer never stands in
 * for another's under the same configuration.
 */
export function keptAnswerDigest(accepted: string, projectDir: string): string {
  return createHash("sha256").update(`${accepted}\u0000${projectDir}`).digest("hex");
}

/**
 * Whether a model provider's post-Configure answer may be kept: nothing derived from a
 * secret is written, so only when no sensitive attribute is set, or when the answer is the
 * one it gave before Configure (already in the cache: the configuration changed nothing).
 */
export function keptModelsAllowed(
  configured: Capabilities,
  described: Capabilities | undefined,
  secretSet: boolean,
): boolean {
  if (!secretSet) return true;
  return described !== undefined && equals(CapabilitiesSchema, configured, described);
}

/** Kept operations live beside the cache too: `describe.operations/`. */
const OPERATIONS_SUFFIX = ".operations";

/** Accepted configurations remembered per provider entry. */
const MAX_ACCEPTED = 16;
/** Beside the cache directory (whose listing holds entries only): `describe.accepted/`. */
const ACCEPTED_SUFFIX = ".accepted";

/**
 * What a provider's configuration is, for the accepted record: the decoded values, with
 * each sensitive attribute reduced to whether it is set (no secret, nor a hash of one, is
 * written to disk).
 */
export function configDigest(
  values: Readonly<Record<string, unknown>>,
  sensitive: ReadonlySet<string>,
): string {
  const shown: Record<string, unknown> = {};
  for (const name of Object.keys(values).sort())
    shown[name] = sensitive.has(name) ? values[name] !== "" && values[name] != null : values[name];
  return createHash("sha256").update(JSON.stringify(shown)).digest("hex");
}

export class DescribeCache {
  readonly dir: string;

  constructor(dir: string) {
    this.dir = dir;
  }

  /** The key of a resolved provider running `codeDigest`; undefined when it cannot be cached. */
  static key(resolved: ResolvedProvider, codeDigest: string, kernelVersion: string): string | undefined {
    if (resolved.origin !== "first_party" || !resolved.checksum) return undefined;
    const text = JSON.stringify([
      FORMAT,
      kernelVersion,
      resolved.source,
      resolved.version ?? "",
      resolved.checksum,
      codeDigest,
    ]);
    return createHash("sha256").update(text).digest("hex");
  }

  #file(source: string, key: string): string {
    return join(this.dir, `${filePrefix(source)}${key.slice(0, 32)}.json`);
  }

  /** Accepted configurations live in a directory of their own, one file per entry. */
  #acceptedFile(source: string, key: string): string {
    return join(`${this.dir}${ACCEPTED_SUFFIX}`, `${filePrefix(source)}${key.slice(0, 32)}`);
  }

  #operationsFile(source: string, key: string, digest: string): string {
    return join(
      `${this.dir}${OPERATIONS_SUFFIX}`,
      `${filePrefix(source)}${key.slice(0, 32)}-${digest.slice(0, 32)}.json`,
    );
  }

  /** What the bridge answered after Configure for this accepted configuration, if kept. */
  readOperations(source: string, key: string, digest: string): KeptOperations | undefined {
    try {
      const e = JSON.parse(readFileSync(this.#operationsFile(source, key, digest), "utf8")) as {
        schema: string;
        fingerprint: string;
        warnings: string[];
      };
      return {
        schema: decode(GetSchemaResponseSchema, e.schema),
        fingerprint: e.fingerprint,
        warnings: e.warnings,
      };
    } catch {
      return undefined;
    }
  }

  writeOperations(source: string, key: string, digest: string, kept: KeptOperations): void {
    const file = this.#operationsFile(source, key, digest);
    try {
      mkdirSync(`${this.dir}${OPERATIONS_SUFFIX}`, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      const text = JSON.stringify({
        schema: b64(toBinary(GetSchemaResponseSchema, kept.schema)),
        fingerprint: kept.fingerprint,
        warnings: kept.warnings,
      });
      writeFileSync(tmp, text, { mode: 0o600 });
      renameSync(tmp, file);
    } catch {
      // not kept: the next start launches the bridge to ask
    }
  }

  #modelsFile(source: string, key: string, digest: string): string {
    return this.#operationsFile(source, key, digest).replace(/\.json$/, ".models.json");
  }

  /** The models a model provider declared once configured with this accepted configuration, if kept. */
  readModels(source: string, key: string, digest: string): Capabilities | undefined {
    try {
      const e = JSON.parse(readFileSync(this.#modelsFile(source, key, digest), "utf8")) as { model: string };
      return decode(CapabilitiesSchema, e.model);
    } catch {
      return undefined;
    }
  }

  /** Keeps them (see keptModelsAllowed for when a caller may). */
  writeModels(source: string, key: string, digest: string, caps: Capabilities): void {
    const file = this.#modelsFile(source, key, digest);
    try {
      mkdirSync(`${this.dir}${OPERATIONS_SUFFIX}`, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify({ model: b64(toBinary(CapabilitiesSchema, caps)) }), { mode: 0o600 });
      renameSync(tmp, file);
    } catch {
      // not kept: the next check launches the provider to ask
    }
  }

  /** Forgets what was kept for one configuration (the bridge answered otherwise once launched). */
  dropOperations(source: string, key: string, digest: string): void {
    rmSync(this.#operationsFile(source, key, digest), { force: true });
  }

  /** Whether the provider's Configure accepted a configuration of this digest before. */
  accepted(source: string, key: string, digest: string): boolean {
    try {
      return readFileSync(this.#acceptedFile(source, key), "utf8").split("\n").includes(digest);
    } catch {
      return false;
    }
  }

  /** Records that Configure accepted it (the newest few are kept). */
  accept(source: string, key: string, digest: string): void {
    if (this.accepted(source, key, digest)) return;
    const file = this.#acceptedFile(source, key);
    try {
      let kept: string[] = [];
      try {
        kept = readFileSync(file, "utf8").split("\n").filter(Boolean);
      } catch {
        // the first one
      }
      mkdirSync(`${this.dir}${ACCEPTED_SUFFIX}`, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, `${[...kept.slice(-(MAX_ACCEPTED - 1)), digest].join("\n")}\n`, { mode: 0o600 });
      renameSync(tmp, file);
    } catch {
      // not recorded: the next start configures it once more
    }
  }

  /** The cached description, or undefined on a miss or an unreadable entry. */
  read(source: string, key: string): ProviderDescription | undefined {
    let entry: Entry;
    try {
      entry = JSON.parse(readFileSync(this.#file(source, key), "utf8")) as Entry;
    } catch {
      return undefined;
    }
    if (entry.format !== FORMAT || entry.key !== key) return undefined;
    try {
      const producers: Record<string, ProducerRef> = {};
      for (const [c, text] of Object.entries(entry.producers)) producers[c] = decode(ProducerRefSchema, text);
      const answers: Partial<Record<AnswerName, unknown>> = {};
      for (const [name, text] of Object.entries(entry.answers)) {
        if (!(name in ANSWERS)) return undefined;
        answers[name as AnswerName] = decode(ANSWERS[name as AnswerName], text);
      }
      return { categories: [...entry.categories], producers, ...answers } as ProviderDescription;
    } catch {
      return undefined;
    }
  }

  /** Stores a description (atomically) and drops the provider's entries under other keys. */
  write(source: string, key: string, d: ProviderDescription): void {
    const producers: Record<string, string> = {};
    for (const [c, p] of Object.entries(d.producers)) producers[c] = b64(toBinary(ProducerRefSchema, p));
    const answers: Record<string, string> = {};
    for (const name of Object.keys(ANSWERS) as AnswerName[]) {
      const value = d[name];
      if (value) answers[name] = b64(toBinary(ANSWERS[name] as DescMessage, value as never));
    }
    const entry: Entry = { format: FORMAT, key, categories: [...d.categories], producers, answers };
    const file = this.#file(source, key);
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 });
      renameSync(tmp, file);
      const prefix = filePrefix(source);
      for (const name of readdirSync(this.dir)) {
        if (name.startsWith(prefix) && join(this.dir, name) !== file && name.endsWith(".json")) {
          rmSync(join(this.dir, name), { force: true });
        }
      }
      // What older code accepted or answered says nothing about this code.
      const accepted = `${this.dir}${ACCEPTED_SUFFIX}`;
      for (const name of existsSync(accepted) ? readdirSync(accepted) : []) {
        if (name.startsWith(prefix) && join(accepted, name) !== this.#acceptedFile(source, key)) {
          rmSync(join(accepted, name), { force: true });
        }
      }
      const operations = `${this.dir}${OPERATIONS_SUFFIX}`;
      const current = `${prefix}${key.slice(0, 32)}-`;
      for (const name of existsSync(operations) ? readdirSync(operations) : []) {
        if (name.startsWith(prefix) && !name.startsWith(current))
          rmSync(join(operations, name), { force: true });
      }
    } catch {
      // a cache that cannot be written only costs the next start a launch
    }
  }

  /** Forgets an entry (its provider answered differently once launched). */
  invalidate(source: string, key: string): void {
    rmSync(this.#file(source, key), { force: true });
    rmSync(this.#acceptedFile(source, key), { force: true });
    const operations = `${this.dir}${OPERATIONS_SUFFIX}`;
    const current = `${filePrefix(source)}${key.slice(0, 32)}-`;
    for (const name of existsSync(operations) ? readdirSync(operations) : []) {
      if (name.startsWith(current)) rmSync(join(operations, name), { force: true });
    }
  }
}
