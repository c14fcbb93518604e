// Without the kernel's ExecEnvironment (an older kernel, a test harness that does not
// serve it) a local server gets the bridge's own environment, which the launcher already
// reduced to an allowlist, less the plugin runtime's variables.
export function ownEnvironmentFallback(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue;
    if (k.startsWith("PLUGIN_") || k === "PLUGGABLEHARNESS_PLUGIN" || k.startsWith("NODE_")) continue;
    env[k] = v;
  }
  return env;
}
