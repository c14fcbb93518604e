// `agent plugin build`: a TypeScript plugin project becomes release assets the forge
// resolver installs. The code is bundled by esbuild into one ESM file (the SDK and every
// dependency inlined; `@pluggableharness/*` comes from this agent's installation unless
// the project has its own copy), next to a POSIX sh launcher that runs it on the agent's
// Node (AGENT_NODE, which the runtime sets for every plugin) or `node` on PATH. Because
// the bundle is platform-independent, each platform's goreleaser-named archive holds the
// same two files; the checksum file lists them in sha256sum's format.
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { createTar } from "nanotar";
import semver from "semver";

export const DEFAULT_PLATFORMS = ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"] as const;

export interface PluginBuildOptions {
  /** The plugin project (holds package.json). */
  dir: string;
  /** The agent installation whose packages/ hold the SDK. */
  installationRoot: string;
  /** Output directory (default <dir>/dist). */
  out?: string;
  platforms?: readonly string[];
  /** Only the unpacked build in <out>/dev (for dev_overrides and `agent conform`). */
  devOnly?: boolean;
}

export interface PluginBuildResult {
  name: string;
  version: string;
  /** <out>/dev/<name>: the launcher to point dev_overrides or `agent conform` at. */
  devExecutable: string;
  /** <out>/release/*: the archives and the checksum file, to attach to the v<version> release. */
  assets: string[];
  checksumFile?: string;
  bundleBytes: number;
}

export class PluginBuildError extends Error {}

interface PluginManifest {
  name: string;
  version: string;
  main: string;
}

function readManifest(dir: string): PluginManifest {
  const file = join(dir, "package.json");
  let pkg: { name?: unknown; version?: unknown; pluggableharness?: { main?: unknown } };
  try {
    pkg = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new PluginBuildError(`${file}: ${(err as Error).message}`);
  }
  if (typeof pkg.name !== "string" || pkg.name === "") throw new PluginBuildError(`${file} has no "name".`);
  const name = pkg.name.replace(/^@[^/]+\//, "");
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name))
    throw new PluginBuildError(`${file}: "${pkg.name}" cannot name an executable.`);
  if (typeof pkg.version !== "string" || semver.valid(pkg.version) !== pkg.version) {
    throw new PluginBuildError(
      `${file}: "version" must be a semver version such as 0.1.0 (it becomes the release tag v<version>).`,
    );
  }
  const main = typeof pkg.pluggableharness?.main === "string" ? pkg.pluggableharness.main : "src/main.ts";
  if (!existsSync(join(dir, main)))
    throw new PluginBuildError(
      `${join(dir, main)} does not exist (set pluggableharness.main in package.json).`,
    );
  return { name, version: pkg.version, main };
}

/** Where an `@pluggableharness/<pkg>[/sub]` import points inside the installation. */
function sdkTarget(root: string, specifier: string): string | undefined {
  const m = /^@pluggableharness\/([^/]+)(\/.+)?$/.exec(specifier);
  if (!m) return undefined;
  const pkgDir = join(root, "packages", m[1]!);
  let exportsMap: Record<string, string>;
  try {
    exportsMap = (
      JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { exports: Record<string, string> }
    ).exports;
  } catch {
    return undefined;
  }
  const sub = `.${m[2] ?? ""}`;
  if (typeof exportsMap[sub] === "string") return join(pkgDir, exportsMap[sub]);
  for (const [key, target] of Object.entries(exportsMap)) {
    if (!key.endsWith("/*") || !sub.startsWith(key.slice(0, -1))) continue;
    return join(pkgDir, target.replace("*", sub.slice(key.length - 1)));
  }
  return undefined;
}

// CommonJS dependencies call require() for Node built-ins. The meta property is spelt
// apart because scripts/bundle.ts rewrites that literal in the CLI's own sources.
const META = "import.meta";
const BANNER = `import { createRequire as __phCreateRequire } from "node:module";\nconst require = __phCreateRequire(${META}.url);`;

export function launcherScript(name: string, version: string): string {
  return [
    "#!/bin/sh",
    `# ${name} ${version}, a PluggableHarness plugin built by \`agent plugin build\`.`,
    "# Runs the bundle next to this file on the agent's Node (AGENT_NODE, set for every",
    "# plugin the agent starts), else on the first `node` on PATH (Node.js 24 or newer).",
    'here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) || exit 1',
    `exec "\${AGENT_NODE:-node}" "$here/${name}.mjs" "$@"`,
    "",
  ].join("\n");
}

export async function buildPlugin(options: PluginBuildOptions): Promise<PluginBuildResult> {
  const dir = resolve(options.dir);
  const manifest = readManifest(dir);
  const out = options.out ? resolve(dir, options.out) : join(dir, "dist");
  const root = options.installationRoot;
  const { build } = await import("esbuild");
  let code: Uint8Array;
  try {
    const result = await build({
      entryPoints: [join(dir, manifest.main)],
      absWorkingDir: dir,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node24",
      write: false,
      minifySyntax: true,
      minifyWhitespace: true,
      legalComments: "none",
      banner: { js: BANNER },
      // The SDK's own dependencies (grpc-js, protobuf-es) come from the installation.
      nodePaths: [join(root, "node_modules")],
      logLevel: "silent",
      plugins: [
        {
          name: "pluggableharness-sdk",
          setup(b) {
            b.onResolve({ filter: /^@pluggableharness\// }, (args) => {
              const name = args.path.split("/").slice(0, 2).join("/");
              if (existsSync(join(dir, "node_modules", ...name.split("/")))) return undefined;
              const target = sdkTarget(root, args.path);
              if (target === undefined) {
                return {
                  errors: [{ text: `${args.path} is not part of the PluggableHarness SDK in ${root}` }],
                };
              }
              return { path: target };
            });
          },
        },
      ],
    });
    code = result.outputFiles[0]!.contents;
  } catch (err) {
    const errors = (
      err as { errors?: { text: string; location?: { file: string; line: number; column: number } }[] }
    ).errors;
    const text = errors?.length
      ? errors
          .map((e) =>
            e.location
              ? `${isAbsolute(e.location.file) ? relative(dir, e.location.file) : e.location.file}:${e.location.line}:${e.location.column + 1}: ${e.text}`
              : e.text,
          )
          .join("\n")
      : (err as Error).message;
    throw new PluginBuildError(`The plugin does not bundle:\n${text}`);
  }

  const launcher = launcherScript(manifest.name, manifest.version);
  const devDir = join(out, "dev");
  rmSync(devDir, { recursive: true, force: true });
  mkdirSync(devDir, { recursive: true });
  const devExecutable = join(devDir, manifest.name);
  writeFileSync(join(devDir, `${manifest.name}.mjs`), code);
  writeFileSync(devExecutable, launcher);
  chmodSync(devExecutable, 0o755);
  const result: PluginBuildResult = {
    name: manifest.name,
    version: manifest.version,
    devExecutable,
    assets: [],
    bundleBytes: code.byteLength,
  };
  if (options.devOnly) return result;

  const releaseDir = join(out, "release");
  rmSync(releaseDir, { recursive: true, force: true });
  mkdirSync(releaseDir, { recursive: true });
  // Reproducible archives: fixed times and owners, files in a fixed order.
  const mtime = Number(process.env["SOURCE_DATE_EPOCH"] ?? "0") * 1000;
  const attrs = { mtime, uid: 0, gid: 0, user: "", group: "" };
  const extras = ["README.md", "LICENSE"].filter((f) => existsSync(join(dir, f)));
  const tar = createTar([
    { name: manifest.name, data: new TextEncoder().encode(launcher), attrs: { ...attrs, mode: "755" } },
    { name: `${manifest.name}.mjs`, data: code, attrs: { ...attrs, mode: "644" } },
    ...extras.map((f) => ({ name: f, data: readFileSync(join(dir, f)), attrs: { ...attrs, mode: "644" } })),
  ]);
  const archive = gzipSync(tar, { level: 9 });
  const lines: string[] = [];
  for (const platform of options.platforms ?? DEFAULT_PLATFORMS) {
    if (!/^[a-z0-9]+_[a-z0-9]+$/.test(platform))
      throw new PluginBuildError(`"${platform}" is not an <os>_<arch> platform such as linux_amd64.`);
    const assetName = `${manifest.name}_${manifest.version}_${platform}.tar.gz`;
    const path = join(releaseDir, assetName);
    writeFileSync(path, archive);
    result.assets.push(path);
    lines.push(`${createHash("sha256").update(archive).digest("hex")}  ${assetName}\n`);
  }
  const checksumFile = join(releaseDir, `${manifest.name}_${manifest.version}_checksums.txt`);
  writeFileSync(checksumFile, lines.sort().join(""));
  result.assets.push(checksumFile);
  result.checksumFile = checksumFile;
  mkdirSync(dirname(checksumFile), { recursive: true });
  return result;
}
