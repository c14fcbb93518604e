// The CLI as a user gets it: `npm run pack:cli`'s tarball, `npm install -g` into a scratch
// prefix. Packed and installed once per test run, whichever test file asks first; the
// others wait for it (a directory lock under the run's scratch directory, which the
// global setup makes and removes). Tests of the product as installed run this `agent`
// with a user's PATH: Node 24 and the prefix, nothing of this repository.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { inject } from "vitest";
import { packCli } from "../../../scripts/pack-cli.ts";
import { REPO_ROOT } from "./helpers.ts";

export interface Installed {
  /** The installed `agent` (prefix/bin/agent). */
  readonly bin: string;
  /** The installed package's root (…/node_modules/@pluggableharness/cli). */
  readonly root: string;
  readonly prefix: string;
  readonly tarball: string;
  /** The directory of the Node 24 this run uses. */
  readonly nodeDir: string;
  /** `base` with a user's PATH: Node 24, then the prefix's bin, then the system's. */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
}

const WAIT_MS = 300_000;

export async function installedAgent(): Promise<Installed> {
  const dir = inject("installedAgentDir");
  const nodeDir = dirname(process.execPath);
  const prefix = join(dir, "prefix");
  const ready = join(dir, "ready.json");
  const failed = join(dir, "failed.txt");
  let owner = false;
  try {
    mkdirSync(join(dir, "lock"));
    owner = true;
  } catch {
    // another test file is installing it
  }
  if (owner) {
    try {
      const tarball = await packCli(REPO_ROOT, join(dir, "pack"));
      // npm on Node 24, offline-first from the cache `npm ci` filled.
      execFileSync(
        "npm",
        ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", tarball],
        { cwd: dir, env: { ...process.env, PATH: `${nodeDir}:${process.env["PATH"] ?? ""}` }, stdio: "pipe" },
      );
      writeFileSync(ready, JSON.stringify({ tarball }));
    } catch (e) {
      writeFileSync(failed, String((e as { stderr?: Buffer }).stderr ?? e));
      throw e;
    }
  }
  for (const end = Date.now() + WAIT_MS; !existsSync(ready); ) {
    if (existsSync(failed))
      throw new Error(`installing the packed CLI failed:\n${readFileSync(failed, "utf8")}`);
    if (Date.now() > end) throw new Error("the packed CLI was not installed within 300 s");
    await new Promise((r) => setTimeout(r, 250));
  }
  const { tarball } = JSON.parse(readFileSync(ready, "utf8")) as { tarball: string };
  const bin = join(prefix, "bin", "agent");
  return {
    bin,
    root: join(prefix, "lib", "node_modules", "@pluggableharness", "cli"),
    prefix,
    tarball,
    nodeDir,
    env: (base) => ({ ...base, PATH: `${nodeDir}:${join(prefix, "bin")}:/usr/bin:/bin` }),
  };
}
