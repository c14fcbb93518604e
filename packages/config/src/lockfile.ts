// The lock file, `.agent/agent.lock.hcl`: kernel-written, deterministic, with the
// format version checked on its own before anything else in the file is decoded.
//
// A first-party provider is platform-independent source, so its one checksum is
// recorded under the key "any"; verification looks for the running platform's
// "<os>_<arch>" key first and falls back to "any". A forge provider records the SHA-256
// of the release asset of every platform the release publishes, and only the running
// platform's own key counts for it.

import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type Attribute, evaluate, isObject, parseFile, type Range, writeHcl } from "@pluggableharness/hcl";
import semver from "semver";
import { type Diags, decodeBody, label, readString } from "./decode.ts";
import { type ConfigDiagnostic, errorAt, fileDiag, fromHcl, hasErrors } from "./diagnostics.ts";
import type { ResolvedProvider } from "./resolve.ts";

export const LOCK_FILE = join(".agent", "agent.lock.hcl");
export const LOCK_FILE_VERSION = 1;
export const ANY_PLATFORM = "any";

export interface LockEntry {
  name: string;
  source: string;
  version: string;
  /** RFC 3339, UTC. */
  resolved_at: string;
  /** Platform key ("linux_amd64", or "any") -> "sha256:<hex>". */
  checksums: Record<string, string>;
  range?: Range;
}

export interface LockFile {
  file?: string;
  providers: LockEntry[];
}

export type LockReadResult =
  | { ok: true; lock: LockFile | undefined }
  | { ok: false; diagnostics: ConfigDiagnostic[] };

const CHECKSUM = /^sha256:[0-9a-f]{64}$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Node's platform as the lock file's "<os>_<arch>" key (Go naming). */
export function platformKey(platform: string = process.platform, arch: string = process.arch): string {
  const os = platform === "win32" ? "windows" : platform;
  const a = arch === "x64" ? "amd64" : arch === "ia32" ? "386" : arch;
  return `${os}_${a}`;
}

/** Reads `<projectDir>/.agent/agent.lock.hcl`; a missing file is `lock: undefined`. */
export function readLockFile(projectDir: string): LockReadResult {
  const file = join(projectDir, LOCK_FILE);
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { ok: true, lock: undefined };
    return {
      ok: false,
      diagnostics: [fileDiag("error", "io", file, "Cannot read the lock file", (e as Error).message)],
    };
  }
  return parseLockFile(bytes, file);
}

export function parseLockFile(source: string | Uint8Array, file: string): LockReadResult {
  const parsed = parseFile(source, file);
  // The version is checked first, on whatever parsed, before the rest is looked at.
  const diags: Diags = parsed.diagnostics.map((d) => fromHcl(d, "parse"));
  const versionAttr = parsed.file.body.items.find(
    (i): i is Attribute => i.kind === "Attribute" && i.name === "lock_file_version",
  );
  if (versionAttr !== undefined || !hasErrors(diags)) {
    const versionDiag = checkVersion(versionAttr, file);
    if (versionDiag !== undefined) return { ok: false, diagnostics: [versionDiag] };
  }
  if (hasErrors(diags)) return { ok: false, diagnostics: diags };

  const top = decodeBody(
    parsed.file.body,
    { attributes: ["lock_file_version"], blocks: { provider: { labels: 1 } } },
    parsed.file.range,
    "the lock file",
    diags,
  );
  const providers: LockEntry[] = [];
  for (const b of top.blocks) {
    const { value: name, range } = label(b);
    const what = `lock entry "${name}"`;
    const body = decodeBody(
      b.body,
      {
        attributes: ["source", "version", "resolved_at", "checksums"],
        required: ["source", "version", "resolved_at", "checksums"],
      },
      b.typeRange,
      what,
      diags,
    );
    const str = (n: string) =>
      body.attrs.get(n) ? readString(body.attrs.get(n)!, `${what} ${n}`, diags) : undefined;
    const source = str("source");
    const version = str("version");
    if (version !== undefined && semver.valid(version) === null) {
      diags.push(
        errorAt(
          "lock_file",
          "Invalid locked version",
          `${what}: "${version}" is not an exact version.`,
          body.attrs.get("version")!.expr.range,
        ),
      );
    }
    const resolvedAt = str("resolved_at");
    if (resolvedAt !== undefined && !RFC3339.test(resolvedAt)) {
      diags.push(
        errorAt(
          "lock_file",
          "Invalid timestamp",
          `${what}: resolved_at must be an RFC 3339 timestamp.`,
          body.attrs.get("resolved_at")!.expr.range,
        ),
      );
    }
    const checksumsAttr = body.attrs.get("checksums");
    const checksums: Record<string, string> = {};
    if (checksumsAttr) {
      // Object-constructor syntax yields an object; accept it as a map of strings.
      const r = evaluate(checksumsAttr.expr, {});
      for (const d of r.diagnostics) diags.push(fromHcl(d, "eval"));
      if (r.value !== undefined && !isObject(r.value)) {
        diags.push(
          errorAt(
            "lock_file",
            "Invalid checksums",
            `${what}: checksums must be a map of platform to "sha256:<hex>".`,
            checksumsAttr.expr.range,
          ),
        );
      } else if (r.value !== undefined) {
        for (const [k, v] of Object.entries(r.value)) {
          if (typeof v !== "string" || !CHECKSUM.test(v)) {
            diags.push(
              errorAt(
                "lock_file",
                "Invalid checksum",
                `${what}: the checksum for "${k}" must be "sha256:" and 64 hex digits.`,
                checksumsAttr.expr.range,
              ),
            );
          } else {
            checksums[k] = v;
          }
        }
      }
    }
    if (providers.some((p) => p.name === name)) {
      diags.push(
        errorAt("duplicate", "Duplicate lock entry", `The lock file has two entries for "${name}".`, range),
      );
      continue;
    }
    if (source !== undefined && version !== undefined && resolvedAt !== undefined) {
      providers.push({ name, source, version, resolved_at: resolvedAt, checksums, range });
    }
  }
  if (hasErrors(diags)) return { ok: false, diagnostics: diags };
  return { ok: true, lock: { file, providers } };
}

function checkVersion(attr: Attribute | undefined, file: string): ConfigDiagnostic | undefined {
  if (attr === undefined) {
    return fileDiag(
      "error",
      "lock_file",
      file,
      "Missing lock_file_version",
      "A lock file must start with lock_file_version; delete the file to have it rewritten.",
    );
  }
  const r = evaluate(attr.expr, {});
  const v = r.value;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    return errorAt(
      "lock_file",
      "Invalid lock_file_version",
      "lock_file_version must be a positive whole number.",
      attr.expr.range,
    );
  }
  if (v > LOCK_FILE_VERSION) {
    return errorAt(
      "lock_file",
      "Lock file is newer than this agent",
      `The lock file has format version ${v}; this agent understands up to ${LOCK_FILE_VERSION}. Upgrade the agent; the file was not read further.`,
      attr.expr.range,
    );
  }
  return undefined;
}

/** The lock file text: same input, same bytes (entries sorted by name, keys sorted). */
export function renderLockFile(lock: LockFile): string {
  const entries = [...lock.providers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return writeHcl(
    {
      header: [
        "This file is maintained automatically by the agent.",
        "It pins the providers this project resolved; commit it, do not edit it by hand.",
      ],
      attributes: { lock_file_version: LOCK_FILE_VERSION },
      blocks: entries.map((e) => ({
        type: "provider",
        labels: [e.name],
        attributes: {
          source: e.source,
          version: e.version,
          resolved_at: e.resolved_at,
          checksums: { ...e.checksums },
        },
      })),
    },
    { sortObjectKeys: true },
  );
}

/** Writes the lock file atomically (temporary file, then rename). */
export function writeLockFile(projectDir: string, lock: LockFile): string {
  const file = join(projectDir, LOCK_FILE);
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, renderLockFile(lock));
  renameSync(tmp, file);
  return file;
}

/**
 * Compares what was resolved with the lock: a different source, version or
 * checksum is an error naming the provider. Dev overrides are never locked.
 */
export function verifyLock(
  lock: LockFile,
  resolved: readonly ResolvedProvider[],
  platform = platformKey(),
): ConfigDiagnostic[] {
  const diags: ConfigDiagnostic[] = [];
  const file = lock.file ?? LOCK_FILE;
  for (const p of resolved) {
    if (p.origin === "dev_override") continue;
    const entry = lock.providers.find((e) => e.name === p.localName);
    if (entry === undefined) continue;
    const fail = (summary: string, detail: string) =>
      diags.push(
        entry.range === undefined
          ? fileDiag("error", "lock_mismatch", file, summary, detail)
          : errorAt("lock_mismatch", summary, detail, entry.range),
      );
    if (entry.source !== p.source) {
      fail(
        `Lock mismatch for provider "${p.localName}"`,
        `The lock file records source "${entry.source}", but the configuration now says "${p.source}".`,
      );
      continue;
    }
    if (entry.version !== p.version) {
      fail(
        `Lock mismatch for provider "${p.localName}"`,
        `The lock file pins version ${entry.version}, but ${p.version ?? "an unknown version"} was resolved. Delete the entry to accept the new version.`,
      );
      continue;
    }
    const recorded =
      p.origin === "forge"
        ? entry.checksums[p.platform ?? platform]
        : (entry.checksums[platform] ?? entry.checksums[ANY_PLATFORM]);
    if (recorded === undefined) {
      fail(
        `No locked checksum for provider "${p.localName}"`,
        `The lock file has no checksum for platform ${platform}.`,
      );
    } else if (recorded !== p.checksum) {
      fail(
        `Checksum mismatch for provider "${p.localName}"`,
        `The installed package of "${p.localName}" ${p.version} does not match the checksum in the lock file (recorded ${recorded}, found ${p.checksum}). It may have been modified.`,
      );
    }
  }
  return diags;
}

/**
 * The lock after resolving: entries for every first-party provider resolved now (an entry
 * whose source, version and checksum are unchanged keeps its resolved_at), the forge
 * entries the install step produced, and the previous entry of a provider a dev override
 * stands in for (an override is never locked, and it must not erase what a teammate uses).
 */
export function updateLock(
  previous: LockFile | undefined,
  resolved: readonly ResolvedProvider[],
  now: Date,
  forgeEntries: readonly LockEntry[] = [],
): LockFile {
  const stamp = now.toISOString().replace(/\.\d{3}Z$/, "Z");
  const providers: LockEntry[] = forgeEntries.map(({ range: _range, ...e }) => ({
    ...e,
    checksums: { ...e.checksums },
  }));
  for (const p of resolved) {
    if (p.origin === "dev_override") {
      const old = previous?.providers.find((e) => e.name === p.localName);
      if (old !== undefined && !providers.some((e) => e.name === old.name)) {
        const { range: _range, ...kept } = old;
        providers.push(kept);
      }
      continue;
    }
    if (p.origin !== "first_party" || p.version === undefined || p.checksum === undefined) continue;
    const old = previous?.providers.find((e) => e.name === p.localName);
    const same =
      old !== undefined &&
      old.source === p.source &&
      old.version === p.version &&
      old.checksums[ANY_PLATFORM] === p.checksum;
    providers.push({
      name: p.localName,
      source: p.source,
      version: p.version,
      resolved_at: same ? old.resolved_at : stamp,
      checksums: { [ANY_PLATFORM]: p.checksum },
    });
  }
  return { providers };
}
