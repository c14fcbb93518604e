// Builds one single-file ESM bundle per first-party entry point (every provider's
// src/main.ts and the CLI's src/bin.ts) into dist/bundles/, each with a manifest of its
// inputs that packages/runtime/src/bundles.ts checks before preferring the bundle over
// the sources. Runs on install (the root `prepare` script), so `npm ci` leaves the
// bundles ready; a failed or missing bundle only means the sources run instead.
//
// Usage: node scripts/bundle.ts [--check]   (--check: exit 1 if any bundle is stale)
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";
import {
  BUNDLE_MANIFEST_FORMAT,
  type BundleManifest,
  bundlePathFor,
  checkBundle,
  inputsDigest,
  sha256File,
} from "../packages/runtime/src/bundles.ts";

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const posix = (p: string) => p.split(sep).join("/");

/** Every first-party entry point worth bundling. */
export function entries(root: string = REPO_ROOT): string[] {
  const out: string[] = [];
  const providers = join(root, "providers");
  for (const name of readdirSync(providers).sort()) {
    const main = join(providers, name, "src", "main.ts");
    try {
      if (statSync(main).isFile()) out.push(main);
    } catch {
      // a provider still being written
    }
  }
  out.push(join(root, "packages", "cli", "src", "bin.ts"));
  return out;
}

/**
 * `import.meta.url` of a source file, as seen from the bundle: the bundled code still
 * reads files next to its sources (package.json for its version), so each module keeps
 * its own location relative to the bundle, which stays inside the installation.
 */
function sourceLocations(outfile: string): Plugin {
  return {
    name: "source-locations",
    setup(b) {
      b.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
        const text = readFileSync(args.path, "utf8");
        if (args.path.includes(`${sep}node_modules${sep}`) || !text.includes("import.meta.url")) {
          return { contents: text, loader: "ts" };
        }
        const rel = posix(relative(dirname(outfile), args.path));
        const url = `new URL(${JSON.stringify(rel)}, import.meta.url).href`;
        return { contents: text.replaceAll("import.meta.url", url), loader: "ts" };
      });
    },
  };
}

/**
 * The OpenTelemetry gRPC exporters' ES builds load grpc-js through a `require` made with
 * `createRequire(import.meta.url)` (rolldown's runtime helper), which a bundler cannot
 * follow: in a bundle that call would load a second grpc-js from node_modules (or none,
 * installed), whose credentials and metadata the bundled client rejects. The helper is
 * replaced by one that hands out the bundled grpc-js, the only module they ask it for.
 */
function bundledRequire(): Plugin {
  return {
    name: "bundled-require",
    setup(b) {
      b.onLoad({ filter: /[\\/]@opentelemetry[\\/].*_virtual[\\/]_rolldown[\\/]runtime\.mjs$/ }, () => ({
        contents: [
          'import * as grpc from "@grpc/grpc-js";',
          "export function __require(id) {",
          '  if (id === "@grpc/grpc-js") return grpc;',
          '  throw new Error(id + " is not in the bundle (scripts/bundle.ts, bundledRequire)");',
          "}",
        ].join("\n"),
        loader: "js",
      }));
    },
  };
}

// CommonJS dependencies (grpc-js) call require() for Node built-ins.
const BANNER =
  'import { createRequire as __phCreateRequire } from "node:module";\n' +
  "const require = __phCreateRequire(import.meta.url);";

/** Bundles `entry` (a file under `root`) and writes its manifest; returns the bundle's path. */
export async function buildBundle(entry: string, root: string = REPO_ROOT): Promise<string> {
  const outfile = bundlePathFor(entry, root)!;
  mkdirSync(dirname(outfile), { recursive: true });
  const result = await build({
    entryPoints: [entry],
    // Written in place: until the manifest below is rewritten, the old manifest's stamp of
    // the output no longer matches, so a half-written bundle is never used.
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    // Whitespace and syntax minified, names kept (error names are set explicitly, never
    // read from constructors): ~10% less start-up CPU for the whole `agent run -p` tree
    // than unminified with esbuild's keepNames. The source map beside each bundle serves
    // `node --enable-source-maps` when a stack trace needs reading.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: "linked",
    banner: { js: BANNER },
    // esbuild (`agent plugin build`) finds its native binary relative to its own files, so
    // it is loaded from node_modules at run time, never inlined.
    external: ["esbuild"],
    metafile: true,
    absWorkingDir: root,
    logLevel: "warning",
    plugins: [bundledRequire(), sourceLocations(outfile)],
  });
  const inputs: Record<string, { size: number; mtimeMs: number; sha256: string }> = {};
  for (const rel of Object.keys(result.metafile!.inputs)) {
    const abs = join(root, rel);
    const st = statSync(abs);
    inputs[posix(relative(root, abs))] = { size: st.size, mtimeMs: st.mtimeMs, sha256: sha256File(abs) };
  }
  // This script is an input too: a change to how bundles are built (options, externals)
  // makes every bundle stale (for bundles of this repository's root).
  const self = fileURLToPath(import.meta.url);
  if (!relative(root, self).startsWith("..")) {
    const st = statSync(self);
    inputs[posix(relative(root, self))] = { size: st.size, mtimeMs: st.mtimeMs, sha256: sha256File(self) };
  }
  // Files read at run time next to the sources (versions) are inputs too.
  for (const rel of Object.keys(inputs)) {
    const pkg = join(root, dirname(rel), "..", "package.json");
    const pkgRel = posix(relative(root, pkg));
    if (rel.includes("node_modules/") || pkgRel.startsWith("..") || inputs[pkgRel]) continue;
    try {
      const st = statSync(pkg);
      inputs[pkgRel] = { size: st.size, mtimeMs: st.mtimeMs, sha256: sha256File(pkg) };
    } catch {
      // not a package root
    }
  }
  const st = statSync(outfile);
  const manifest: BundleManifest = {
    format: BUNDLE_MANIFEST_FORMAT,
    entry: posix(relative(root, entry)),
    inputs,
    digest: inputsDigest(inputs),
    output: { size: st.size, mtimeMs: st.mtimeMs, sha256: sha256File(outfile) },
  };
  writeFileSync(`${outfile}.json`, `${JSON.stringify(manifest, null, 1)}\n`);
  return outfile;
}

async function main(root: string): Promise<void> {
  const check = process.argv.includes("--check");
  const started = performance.now();
  let stale = 0;
  for (const entry of entries(root)) {
    const rel = posix(relative(root, entry));
    if (check) {
      if (!checkBundle(entry, root)) {
        stale++;
        console.log(`stale: ${rel}`);
      }
      continue;
    }
    const out = await buildBundle(entry, root);
    console.log(
      `bundled ${rel} -> ${posix(relative(root, out))} (${(statSync(out).size / 1024).toFixed(0)} KiB)`,
    );
  }
  if (check) process.exitCode = stale > 0 ? 1 : 0;
  else console.log(`bundles built in ${(performance.now() - started).toFixed(0)} ms`);
}

if (import.meta.main) await main(REPO_ROOT);
