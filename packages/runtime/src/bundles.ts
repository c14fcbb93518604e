// Prebuilt single-file bundles of first-party entry points (scripts/bundle.ts writes them
// on install). A bundle starts much faster than its TypeScript sources: no module
// resolution across a hundred files, no type stripping. It is used only while it is up
// to date: its manifest records every input file's size, mtime and SHA-256, and an
// input whose size or mtime changed is hashed again; any difference, a missing file or
// an unreadable manifest means "stale", and the caller runs the source entry instead.
//
// An installed package (scripts/pack-cli.ts) marks its manifests `release`: there the
// bundle is the program, and only the bundle file itself is checked.
//
// Layout: the bundle of `<root>/<path>/main.ts` is `<root>/dist/bundles/<path>/main.mjs`,
// with its manifest next to it as `main.mjs.json`.
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";

export const BUNDLE_DIR = join("dist", "bundles");
export const BUNDLE_MANIFEST_FORMAT = 1;

export interface BundleInput {
  readonly size: number;
  readonly mtimeMs: number;
  readonly sha256: string;
}

export interface BundleManifest {
  readonly format: number;
  /** The source entry, relative to the installation root (POSIX separators). */
  readonly entry: string;
  /** Input file (relative to the root, POSIX separators) -> what it was when bundled. */
  readonly inputs: Readonly<Record<string, BundleInput>>;
  /** SHA-256 over every input's path and hash: identifies the code the bundle holds. */
  readonly digest: string;
  /** The bundle file itself, so a hand-edited or truncated bundle counts as stale. */
  readonly output: BundleInput;
  /**
   * Written by scripts/pack-cli.ts for an installed package: the bundle is what ships, so
   * only it is checked (inputs stay recorded for the digest; sources are not compared).
   */
  readonly release?: boolean;
}

export interface FreshBundle {
  /** The bundle file to run. */
  readonly path: string;
  /** The manifest's digest of the bundled code. */
  readonly digest: string;
}

const posix = (p: string) => p.split(sep).join("/");

/** Where the bundle of `entry` lives, or undefined when `entry` is outside `root`. */
export function bundlePathFor(entry: string, root: string): string | undefined {
  const rel = relative(root, entry);
  if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) return undefined;
  return join(root, BUNDLE_DIR, rel.replace(/\.(ts|mts|js|mjs)$/, ".mjs"));
}

/** The digest a manifest records: over sorted "<sha256>  <path>" lines. */
export function inputsDigest(inputs: Readonly<Record<string, { sha256: string }>>): string {
  const lines = Object.keys(inputs)
    .sort()
    .map((p) => `${inputs[p]!.sha256}  ${p}\n`)
    .join("");
  return `sha256:${createHash("sha256").update(lines).digest("hex")}`;
}

export function sha256File(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/**
 * Inputs confirmed unchanged in this process (bundles share most of theirs). Global, so
 * the copy of this module bin/agent.mjs loads and the copy inside the CLI bundle share it.
 */
const CONFIRMED = Symbol.for("pluggableharness.runtime.bundle-inputs");
const shared = globalThis as { [CONFIRMED]?: Map<string, string> };
shared[CONFIRMED] ??= new Map();
const confirmed: Map<string, string> = shared[CONFIRMED];

/** Whether one recorded input still has the same content. */
function unchanged(file: string, input: BundleInput): boolean {
  const stamp = `${input.size}:${input.mtimeMs}:${input.sha256}`;
  if (confirmed.get(file) === stamp) return true;
  const ok = compare(file, input);
  if (ok) confirmed.set(file, stamp);
  return ok;
}

function compare(file: string, input: BundleInput): boolean {
  let st: import("node:fs").Stats;
  try {
    st = statSync(file);
  } catch {
    return false;
  }
  if (st.size !== input.size) return false;
  if (st.mtimeMs === input.mtimeMs) return true;
  // Touched (a checkout, a copy): the content decides.
  try {
    return sha256File(file) === input.sha256;
  } catch {
    return false;
  }
}

const memo = new Map<string, FreshBundle | undefined>();

/**
 * The up-to-date bundle of `entry`, if there is one. Checked once per process and entry:
 * a long-running kernel keeps running what it started with.
 */
export function freshBundle(entry: string, root: string): FreshBundle | undefined {
  const key = `${root}\u0000${entry}`;
  if (memo.has(key)) return memo.get(key);
  const found = checkBundle(entry, root, unchanged);
  memo.set(key, found);
  return found;
}

/** Forgets what freshBundle decided (tests that rebuild or touch bundles). */
export function forgetBundleChecks(): void {
  memo.clear();
  confirmed.clear();
}

/** The uncached check behind freshBundle (each input's stat, and its hash when touched). */
export function checkBundle(
  entry: string,
  root: string,
  same: (file: string, input: BundleInput) => boolean = compare,
): FreshBundle | undefined {
  const path = bundlePathFor(entry, root);
  if (!path) return undefined;
  let manifest: BundleManifest;
  try {
    manifest = JSON.parse(readFileSync(`${path}.json`, "utf8")) as BundleManifest;
  } catch {
    return undefined;
  }
  if (
    manifest.format !== BUNDLE_MANIFEST_FORMAT ||
    manifest.entry !== posix(relative(root, entry)) ||
    typeof manifest.inputs !== "object" ||
    manifest.inputs === null ||
    manifest.digest !== inputsDigest(manifest.inputs)
  ) {
    return undefined;
  }
  if (!manifest.output || !same(path, manifest.output)) return undefined;
  if (manifest.release === true) return { path, digest: manifest.digest };
  for (const [rel, input] of Object.entries(manifest.inputs)) {
    if (!same(join(root, rel), input)) return undefined;
  }
  return { path, digest: manifest.digest };
}

/** What to launch for a first-party entry: its fresh bundle, else the entry itself. */
export function preferBundle(entry: string, root: string): string {
  return freshBundle(entry, root)?.path ?? entry;
}
