#!/usr/bin/env node
// What the `agent` executable runs once bin/agent.mjs has checked the Node version. Plain
// JavaScript, so starting it needs no type stripping; it turns on Node's compile cache for
// everything loaded after it, starts the plugin processes the previous `agent run` here
// began with (runtime prelaunch.ts), then runs the CLI's prebuilt bundle when that is up
// to date with its sources (scripts/bundle.ts), else the TypeScript sources.
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

// `agent run` counts Ctrl-C/SIGTERM from the first moment: loading the CLI takes a while,
// and a headless run interrupted then must still end with its result record (exit 4).
// The CLI's own handler (src/signals.ts) takes the count over; a second signal exits 130.
if (process.argv[2] === "run") {
  const early = { count: 0, dispose: () => {} };
  const onSignal = () => {
    if (++early.count > 1) process.exit(130);
  };
  early.dispose = () => {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  globalThis[Symbol.for("pluggableharness.earlySignals")] = early;
}

/** `agent run` flags that choose which plugins a run starts with; undefined: do not guess. */
function runSelection(argv) {
  if (argv[0] !== "run") return undefined;
  const flags = {};
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--resume" || a === "-c" || a === "--continue" || a.startsWith("--resume=")) return undefined;
    for (const name of ["profile", "model"]) {
      if (a === `--${name}`) flags[name] = argv[++i];
      else if (a.startsWith(`--${name}=`)) flags[name] = a.slice(name.length + 3);
    }
  }
  return flags;
}

const selection = process.env.AGENT_NO_PRELAUNCH === "1" ? undefined : runSelection(process.argv.slice(2));
if (selection) {
  try {
    const p = await import("@pluggableharness/runtime/prelaunch");
    const file = p.prelaunchPlanFile(process.env, process.cwd(), selection);
    p.setPrelaunchPlanFile(file);
    const plan = p.readPrelaunchPlan(file);
    if (plan) p.prelaunch(plan, process.env);
  } catch {
    // prelaunching only saves time
  }
}

const root = fileURLToPath(new URL("../../..", import.meta.url));
const source = fileURLToPath(new URL("../src/bin.ts", import.meta.url));
let target = source;
if (process.env.AGENT_NO_BUNDLES !== "1") {
  const { freshBundle } = await import("@pluggableharness/runtime/bundles");
  target = freshBundle(source, root)?.path ?? source;
}
await import(pathToFileURL(target).href);
