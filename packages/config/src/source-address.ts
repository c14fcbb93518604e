// Provider source addresses. agent.hcl accepts git-forge addresses
// (`github.com/<owner>/<repo>`, `gitlab.com/<group>/.../<repo>`) and the short
// first-party form `pluggableharness/<name>`.

export const FIRST_PARTY_OWNER = "pluggableharness";

/** Every first-party provider shipped with an installation, by name. */
export const FIRST_PARTY_PROVIDERS = [
  "anthropic",
  "openai",
  "google",
  "xai",
  "openai-compatible",
  "filesystem",
  "search",
  "exec",
  "git",
  "web",
  "user",
  "task",
  "commands",
  "widgets",
  "project-context",
  "workspace-context",
  "memory",
  "compactor",
  "tui",
  "web-ui",
  "mcp",
  "agent",
  "lsp",
] as const;

export type FirstPartyName = (typeof FIRST_PARTY_PROVIDERS)[number];

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Why `source` is not an accepted address, or undefined when it is. */
export function checkSourceAddress(source: string): string | undefined {
  const parts = source.split("/");
  if (parts.some((p) => p === "")) return `"${source}" has an empty path segment.`;
  if (/^[a-z]+:/.test(source))
    return `"${source}": write the address without a scheme, e.g. "github.com/owner/provider-name".`;
  if (parts.length === 2 && parts[0] === FIRST_PARTY_OWNER) {
    return SEGMENT.test(parts[1]!) ? undefined : `"${parts[1]}" is not a valid provider name.`;
  }
  const host = parts[0]!;
  if (host !== "github.com" && host !== "gitlab.com") {
    return `"${source}" is not a git-forge address: use github.com/<owner>/<repo>, gitlab.com/<group>/<repo> or ${FIRST_PARTY_OWNER}/<name>.`;
  }
  const minParts = 3;
  if (parts.length < minParts || (host === "github.com" && parts.length !== 3)) {
    return `"${source}" must name a repository: ${host}/<owner>/<repo>.`;
  }
  const bad = parts.slice(1).find((p) => !SEGMENT.test(p));
  return bad === undefined ? undefined : `"${bad}" is not a valid path segment in "${source}".`;
}

/** The first-party provider a source names, if any (both the long and the short form). */
export function firstPartyName(source: string): FirstPartyName | undefined {
  const lower = source.toLowerCase();
  let name: string | undefined;
  const long = /^github\.com\/pluggableharness\/provider-([a-z0-9-]+)$/.exec(lower);
  if (long) name = long[1];
  const short = /^pluggableharness\/([a-z0-9-]+)$/.exec(lower);
  if (short) name = short[1];
  return (FIRST_PARTY_PROVIDERS as readonly string[]).includes(name ?? "")
    ? (name as FirstPartyName)
    : undefined;
}

export function firstPartySource(name: FirstPartyName): string {
  return `github.com/${FIRST_PARTY_OWNER}/provider-${name}`;
}

/**
 * Whether a source is resolved from a git forge's releases (`github.com/…`, `gitlab.com/…`)
 * rather than shipped with the installation.
 */
export function isForgeSource(source: string): boolean {
  if (firstPartyName(source) !== undefined) return false;
  const host = source.split("/")[0]!.toLowerCase();
  return host === "github.com" || host === "gitlab.com";
}
