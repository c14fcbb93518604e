// `agent plugin new` and `agent plugin build`: from nothing to release assets the forge
// resolver installs (see src/plugin/ and packages/plugin-sdk/README.md).
import { relative, resolve } from "node:path";
import { EXIT } from "../exit-codes.ts";
import { installationRoot } from "../inspect.ts";
import { CliError, type Io, line } from "../io.ts";
import { buildPlugin, PluginBuildError } from "../plugin/build.ts";
import {
  SCAFFOLD_CATEGORIES,
  type ScaffoldCategory,
  ScaffoldError,
  scaffoldPlugin,
} from "../plugin/scaffold.ts";

export function runPluginNew(
  io: Io,
  name: string,
  opts: { category?: string; dir?: string; source?: string },
): number {
  const category = (opts.category ?? "tool") as ScaffoldCategory;
  if (!SCAFFOLD_CATEGORIES.includes(category)) {
    throw new CliError(
      `agent plugin new: --category must be one of ${SCAFFOLD_CATEGORIES.join(", ")} (the categories \`agent conform\` checks).`,
      EXIT.USAGE,
    );
  }
  const dir = resolve(io.cwd, opts.dir ?? name);
  const source = opts.source ?? `github.com/OWNER/${name}`;
  try {
    scaffoldPlugin({ name, category, dir, source, installationRoot: installationRoot() });
  } catch (err) {
    if (err instanceof ScaffoldError) throw new CliError(`agent plugin new: ${err.message}`, EXIT.ERROR);
    throw err;
  }
  const rel = relative(io.cwd, dir) || ".";
  line(io.out, `Created ${category} plugin ${name} in ${dir}`);
  line(io.out);
  line(io.out, "Next:");
  line(io.out, `  cd ${rel}`);
  line(io.out, "  npm test               # builds it and runs agent conform on the build");
  line(io.out, "  agent plugin build     # dist/release/: an archive per platform and the checksum file");
  if (opts.source === undefined)
    line(io.out, `  (set pluggableharness.source in package.json: it says github.com/OWNER/${name})`);
  return EXIT.OK;
}

export async function runPluginBuild(
  io: Io,
  dirArg: string | undefined,
  opts: { out?: string; platform?: string[]; dev?: boolean },
): Promise<number> {
  const dir = resolve(io.cwd, dirArg ?? ".");
  const started = performance.now();
  let result: Awaited<ReturnType<typeof buildPlugin>>;
  try {
    result = await buildPlugin({
      dir,
      installationRoot: installationRoot(),
      ...(opts.out ? { out: opts.out } : {}),
      ...(opts.platform?.length ? { platforms: opts.platform.flatMap((p) => p.split(",")) } : {}),
      ...(opts.dev ? { devOnly: true } : {}),
    });
  } catch (err) {
    if (err instanceof PluginBuildError) throw new CliError(`agent plugin build: ${err.message}`, EXIT.ERROR);
    throw err;
  }
  const ms = Math.round(performance.now() - started);
  line(
    io.out,
    `Built ${result.name} ${result.version} (${(result.bundleBytes / 1024).toFixed(0)} KiB bundle) in ${ms} ms`,
  );
  line(io.out, `  dev build: ${result.devExecutable}`);
  for (const a of result.assets) line(io.out, `  ${relative(io.cwd, a)}`);
  if (result.assets.length > 0) {
    line(io.out);
    line(
      io.out,
      `Publish: tag v${result.version} and attach every file of ${relative(io.cwd, resolve(dir, opts.out ?? "dist", "release"))}/`,
    );
    line(
      io.out,
      `  e.g. gh release create v${result.version} ${relative(io.cwd, resolve(dir, opts.out ?? "dist", "release"))}/*`,
    );
  }
  return EXIT.OK;
}
