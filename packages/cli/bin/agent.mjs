#!/usr/bin/env node
// The `agent` executable. Plain JavaScript, so starting it needs no type stripping; it
// turns on Node's compile cache for everything loaded after it, then runs the CLI's
// prebuilt bundle when that is up to date with its sources (scripts/bundle.ts), else
// the TypeScript sources.
import { enableCompileCache } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const cacheHome = process.env.XDG_CACHE_HOME?.startsWith("/")
  ? process.env.XDG_CACHE_HOME
  : join(homedir(), ".cache");
try {
  enableCompileCache(join(cacheHome, "agent", "node-compile-cache"));
} catch {
  // a cache is an optimisation only
}

const root = fileURLToPath(new URL("../../..", import.meta.url));
const source = fileURLToPath(new URL("../src/bin.ts", import.meta.url));
let target = source;
if (process.env.AGENT_NO_BUNDLES !== "1") {
  const { freshBundle } = await import("@pluggableharness/runtime/bundles");
  target = freshBundle(source, root)?.path ?? source;
}
await import(pathToFileURL(target).href);
