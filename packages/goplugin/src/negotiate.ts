// Cookie check and application-protocol version negotiation, as go-plugin plugins do it.
import type { MagicCookie } from "./constants.ts";

/**
 * The host's PLUGIN_PROTOCOL_VERSIONS value: a comma list in any order. Entries that
 * are not positive integers are ignored, like go-plugin does.
 */
export function parseProtocolVersions(value: string | undefined): number[] {
  if (value === undefined || value.trim() === "") return [];
  const out: number[] = [];
  for (const part of value.split(",")) {
    const t = part.trim();
    if (/^[1-9][0-9]{0,8}$/.test(t)) out.push(Number(t));
  }
  return out;
}

export function formatProtocolVersions(versions: readonly number[]): string {
  return versions.join(",");
}

/**
 * The plugin's choice: the highest version both sides speak. With no common version
 * the plugin answers its lowest one and leaves reporting the mismatch to the host;
 * a legacy host that sent nothing gets `fallback` (the plugin's lowest by default).
 */
export function negotiateVersion(hostVersions: readonly number[], pluginVersions: readonly number[]): number {
  if (pluginVersions.length === 0) throw new Error("a plugin must support at least one protocol version");
  const mine = [...pluginVersions].sort((a, b) => a - b);
  const common = mine.filter((v) => hostVersions.includes(v));
  if (common.length > 0) return common[common.length - 1]!;
  return mine[0]!;
}

/** True when the process environment carries the expected cookie. */
export function cookieMatches(env: NodeJS.ProcessEnv, cookie: MagicCookie): boolean {
  return env[cookie.key] === cookie.value;
}

/** The text a plugin started by hand prints before exiting with status 1. */
export function cookieMismatchMessage(cookie: MagicCookie): string {
  return (
    "This binary is a plugin. It is not meant to be run directly: the agent starts it\n" +
    "and talks to it over gRPC. Declare it in agent.hcl instead of running it yourself.\n" +
    `(The ${cookie.key} environment variable is missing or does not match.)\n`
  );
}
