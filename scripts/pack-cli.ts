// Packs the `agent` command as an installable npm package, @pluggableharness/cli:
// `npm install -g <the tarball>` and `agent` works in any directory on Node 24.
//
// An installed package lives under node_modules, where Node refuses to strip types, so it
// runs only prebuilt JavaScript: the CLI's and every first-party provider's bundle (their
// manifests marked `release`, so the bundle alone is checked; runtime bundles.ts) and
// bin/start.mjs bundled with the runtime helpers it imports. The package keeps the
// repository's layout, because bundled code finds its package.json (versions) and the
// first-party providers relative to where its sources were. TypeScript sources ship too:
// the providers' entry names are how agent.hcl's first-party sources resolve, and
// `agent plugin build` bundles an author's plugin with the SDK's sources; the SDK's own
// npm dependencies (and esbuild) are the package's dependencies. The bundles' source maps
// stay behind (40 MB of the 54; a stack trace from an installed copy names bundle lines).
//
// Usage: node scripts/pack-cli.ts [--out DIR]   (prints the tarball's path last)
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { FIRST_PARTY_SHIPPED } from "../packages/config/src/resolve.ts";
import {
  type BundleManifest,
  bundlePathFor,
  checkBundle,
  sha256File,
} from "../packages/runtime/src/bundles.ts";
import { buildBundle, entries } from "./bundle.ts";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const posix = (p: string) => p.split(sep).join("/");

/** The SDK packages `agent plugin build` bundles into an author's plugin. */
const SDK = ["plugin-sdk", "tool-kit", "model-kit", "protocol", "goplugin", "openai-wire"];

interface Pkg {
  name: string;
  version: string;
  description?: string;
  license?: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  /**
   * Dependencies a provider's bundle cannot hold: programs it runs as processes of their
   * own (`spawns`) and packages whose files it reads at run time (`reads`: the web UI
   * serves marked's browser build).
   */
  pluggableharness?: { spawns?: string[]; reads?: string[] };
}

const readPkg = (dir: string): Pkg => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Pkg;

/** What the installed package depends on: esbuild and the SDK's third-party dependencies. */
function dependencies(root: string): Record<string, string> {
  const rootPkg = readPkg(root);
  const deps: Record<string, string> = {
    esbuild: rootPkg.devDependencies!["esbuild"]!,
    // For the editor's view of a scaffolded plugin (its tsconfig's typeRoots).
    "@types/node": rootPkg.devDependencies!["@types/node"]!,
  };
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    for (const [dep, version] of Object.entries(readPkg(join(root, "packages", name)).dependencies ?? {})) {
      if (dep.startsWith("@pluggableharness/")) visit(dep.slice("@pluggableharness/".length));
      else deps[dep] = version;
    }
  };
  for (const name of SDK) visit(name);
  // Programs a first-party provider starts as separate processes (the lsp provider's
  // language server and its TypeScript), and packages whose files it reads (the web UI's
  // marked), are installed as files beside the bundles.
  for (const name of readdirSync(join(root, "providers")).sort()) {
    let pkg: Pkg;
    try {
      pkg = readPkg(join(root, "providers", name));
    } catch {
      continue;
    }
    const own = pkg.pluggableharness;
    for (const dep of [...(own?.spawns ?? []), ...(own?.reads ?? [])]) deps[dep] = pkg.dependencies![dep]!;
  }
  return Object.fromEntries(Object.entries(deps).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Copies what a package ships: package.json, README.md and src/ (tests and fixtures stay
 * behind). The same list makes a first-party provider's lock checksum, so a lock file
 * written by a clone and by an installed package of the same commit agree.
 */
function copyPackage(root: string, stage: string, rel: string): void {
  const from = join(root, rel);
  if (!existsSync(join(from, "package.json"))) return;
  mkdirSync(join(stage, rel), { recursive: true });
  for (const name of FIRST_PARTY_SHIPPED)
    if (existsSync(join(from, name))) cpSync(join(from, name), join(stage, rel, name), { recursive: true });
}

export async function stagePackage(root: string, stage: string): Promise<string> {
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  for (const group of ["packages", "providers"]) {
    for (const name of readdirSync(join(root, group)).sort()) copyPackage(root, stage, `${group}/${name}`);
  }
  // The bundles, up to date, with release manifests.
  for (const entry of entries(root)) {
    if (!checkBundle(entry, root)) await buildBundle(entry, root);
    const from = bundlePathFor(entry, root)!;
    const to = join(stage, relative(root, from));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
    const manifest = JSON.parse(readFileSync(`${from}.json`, "utf8")) as BundleManifest;
    const st = statSync(to);
    const release: BundleManifest = {
      ...manifest,
      output: { size: st.size, mtimeMs: st.mtimeMs, sha256: sha256File(to) },
      release: true,
    };
    writeFileSync(`${to}.json`, `${JSON.stringify(release, null, 1)}\n`);
  }
  // The executable: the version guard as it is, start.mjs with its runtime imports inlined.
  const bin = join(stage, "packages", "cli", "bin");
  mkdirSync(bin, { recursive: true });
  copyFileSync(join(root, "packages", "cli", "bin", "agent.mjs"), join(bin, "agent.mjs"));
  chmodSync(join(bin, "agent.mjs"), 0o755);
  await build({
    entryPoints: [join(root, "packages", "cli", "bin", "start.mjs")],
    outfile: join(bin, "start.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    absWorkingDir: root,
    logLevel: "warning",
  });
  const cli = readPkg(join(root, "packages", "cli"));
  const rootPkg = readPkg(root);
  const pkg = {
    name: "@pluggableharness/cli",
    version: cli.version,
    description: rootPkg.description,
    type: "module",
    license: rootPkg.license,
    bin: { agent: "packages/cli/bin/agent.mjs" },
    engines: { node: ">=24" },
    dependencies: dependencies(root),
  };
  writeFileSync(join(stage, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  copyFileSync(join(root, "README.md"), join(stage, "README.md"));
  for (const f of ["LICENSE", "NOTICE"])
    if (existsSync(join(root, f))) copyFileSync(join(root, f), join(stage, f));
  return stage;
}

/** Stages and packs; returns the tarball's path. */
export async function packCli(root: string, out: string): Promise<string> {
  const stage = await stagePackage(root, join(out, "package"));
  const npm = process.env["npm_execpath"]?.endsWith("npm-cli.js")
    ? [process.execPath, process.env["npm_execpath"]]
    : ["npm"];
  const printed = execFileSync(npm[0]!, [...npm.slice(1), "pack", "--json", "--pack-destination", out], {
    cwd: stage,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [info] = JSON.parse(printed) as { filename: string }[];
  return join(out, info!.filename);
}

if (import.meta.main) {
  const i = process.argv.indexOf("--out");
  const out = resolve(i > 0 ? process.argv[i + 1]! : join(REPO_ROOT, "dist", "pack"));
  const tarball = await packCli(REPO_ROOT, out);
  console.log(`packed ${posix(relative(process.cwd(), tarball)) || tarball}`);
  console.log(tarball);
}
