// The web provider's agent.hcl block.
import type { JsonObject } from "@bufbuild/protobuf";
import { type ConfigField, configError, type Diagnostic } from "@pluggableharness/tool-kit";

export const CONFIG: readonly ConfigField[] = [
  {
    name: "allowed_domains",
    type: "list_string",
    description: "If set, web_fetch only fetches these hosts and their subdomains (redirects included).",
  },
  {
    name: "allow_private_network",
    type: "bool",
    default: false,
    description: "Let web_fetch reach loopback, private and link-local addresses (off by default).",
  },
  {
    name: "fetch_timeout_ms",
    type: "number",
    default: 20_000,
    description: "Deadline of one web_fetch, redirects included.",
  },
  {
    name: "max_bytes",
    type: "number",
    default: 5 * 1024 * 1024,
    description: "Most response bytes web_fetch reads.",
  },
  {
    name: "max_chars",
    type: "number",
    default: 100_000,
    description: "Most characters of page text web_fetch returns.",
  },
  {
    name: "user_agent",
    type: "string",
    default: "PluggableHarness-web/0.1",
    description: "User-Agent header sent by web_fetch.",
  },
  {
    name: "search_api_key",
    type: "string",
    sensitive: true,
    description: 'Brave Search API subscription token, written as env("..."); web_search fails without it.',
  },
  {
    name: "search_base_url",
    type: "string",
    default: "https://api.search.brave.com",
    description: "Base URL of the Brave Search API (change it for a proxy or a test server).",
  },
  { name: "search_timeout_ms", type: "number", default: 10_000, description: "Deadline of one web_search." },
];

export interface Settings {
  allowedDomains: string[] | undefined;
  allowPrivateNetwork: boolean;
  fetchTimeoutMs: number;
  maxBytes: number;
  maxChars: number;
  userAgent: string;
  searchApiKey: string | undefined;
  searchBaseUrl: URL;
  searchTimeoutMs: number;
}

export let settings: Settings = {
  allowedDomains: undefined,
  allowPrivateNetwork: false,
  fetchTimeoutMs: 20_000,
  maxBytes: 5 * 1024 * 1024,
  maxChars: 100_000,
  userAgent: "PluggableHarness-web/0.1",
  searchApiKey: undefined,
  searchBaseUrl: new URL("https://api.search.brave.com"),
  searchTimeoutMs: 10_000,
};

export function configure(values: JsonObject): Diagnostic[] {
  const problems: Diagnostic[] = [];
  const positive = (name: string) => {
    const v = values[name] as number;
    if (!Number.isInteger(v) || v < 1)
      problems.push(configError([name], `${name} must be a positive integer`));
    return v;
  };
  const fetchTimeoutMs = positive("fetch_timeout_ms");
  const maxBytes = positive("max_bytes");
  const maxChars = positive("max_chars");
  const searchTimeoutMs = positive("search_timeout_ms");
  let searchBaseUrl: URL | undefined;
  try {
    searchBaseUrl = new URL(values["search_base_url"] as string);
    if (searchBaseUrl.protocol !== "https:" && searchBaseUrl.protocol !== "http:") throw new Error("scheme");
  } catch {
    problems.push(configError(["search_base_url"], "search_base_url must be an http(s) URL"));
  }
  // An omitted attribute arrives as its zero value "" (the schema bridge's rule): unset.
  const rawKey = values["search_api_key"] as string | undefined;
  const key = rawKey === undefined || rawKey === "" ? undefined : rawKey;
  if (key !== undefined && key.trim() === "")
    problems.push(configError(["search_api_key"], "search_api_key is blank"));
  const domains = values["allowed_domains"] as string[] | undefined;
  if (problems.length > 0) return problems;
  settings = {
    allowedDomains: domains?.map((d) => d.toLowerCase().replace(/^\*?\./, "")),
    allowPrivateNetwork: values["allow_private_network"] as boolean,
    fetchTimeoutMs,
    maxBytes,
    maxChars,
    userAgent: values["user_agent"] as string,
    searchApiKey: key,
    searchBaseUrl: searchBaseUrl!,
    searchTimeoutMs,
  };
  return [];
}

/** A host matches a domain when it is the domain or one of its subdomains. */
export function hostAllowed(host: string, domains: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  return domains.some((d) => h === d || h.endsWith(`.${d}`));
}
