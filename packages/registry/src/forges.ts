// Where a source address's releases are listed and downloaded from: the GitHub or GitLab
// Releases API (API base configurable for GitHub Enterprise / self-managed GitLab), or a
// registry_mirror from the global config (longest matching prefix, else its default).
// A forge token (GITHUB_TOKEN, GITLAB_TOKEN) goes only to that forge's API origin; a
// mirror gets only its own `auth`, never a forge token.
import { type GlobalConfig, mirrorFor, type Secret } from "@pluggableharness/config";
import { RegistryError } from "./errors.ts";
import { type Credential, type Fetch, get, getJson } from "./http.ts";

export interface ReleaseAsset {
  name: string;
  /** Where to GET it. */
  url: string;
  /** Extra request headers (GitHub's asset API wants Accept: application/octet-stream). */
  headers?: Record<string, string>;
}

export interface Release {
  tag: string;
  draft: boolean;
  prerelease: boolean;
  assets: ReleaseAsset[];
}

export interface ReleaseSource {
  /** For messages: "GitHub (https://api.github.com)", "mirror https://…". */
  readonly describe: string;
  /** The repository's name, which goreleaser names its archives after. */
  readonly project: string;
  listReleases(): Promise<Release[]>;
  download(asset: ReleaseAsset, limit: number, what: string): Promise<Uint8Array>;
}

export interface ForgeOptions {
  env: Readonly<Record<string, string | undefined>>;
  global?: GlobalConfig;
  fetch?: Fetch;
  userAgent?: string;
}

const LIST_LIMIT = 16 * 1024 * 1024;
const MAX_PAGES = 20;
const PER_PAGE = 100;

export const DEFAULT_GITHUB_API = "https://api.github.com";
export const DEFAULT_GITLAB_API = "https://gitlab.com/api/v4";

/** The release source for a forge address (`github.com/o/r`, `gitlab.com/g/…/r`). */
export function releaseSourceFor(source: string, options: ForgeOptions): ReleaseSource {
  const mirror = options.global ? mirrorFor(options.global, source) : undefined;
  if (mirror) {
    const rest = mirror.prefix === undefined ? source : source.slice(mirror.prefix.length);
    return new MirrorSource(joinUrl(mirror.url, rest), source, mirror.auth, options);
  }
  const [host, ...path] = source.split("/");
  if (host === "github.com") return new GitHubSource(path[0]!, path[1]!, options);
  if (host === "gitlab.com") return new GitLabSource(path.join("/"), options);
  throw new RegistryError("not_found", `"${source}" is not on a forge this agent can list releases from.`);
}

function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

function apiBase(value: string | undefined, fallback: string): string {
  const v = value?.trim();
  return (v === undefined || v === "" ? fallback : v).replace(/\/+$/, "");
}

function bearer(origin: string, token: string | undefined, from: string): Credential | undefined {
  if (token === undefined || token.trim() === "") return undefined;
  return { origin, header: ["Authorization", `Bearer ${token.trim()}`], from, secret: token.trim() };
}

/** Follows RFC 8288 `Link: <…>; rel="next"`. */
function nextLink(link: string | null): string | undefined {
  if (!link) return undefined;
  for (const part of link.split(",")) {
    const m = /<([^>]+)>\s*;\s*rel="?next"?/.exec(part);
    if (m) return m[1];
  }
  return undefined;
}

function asArray(json: unknown, where: string): Record<string, unknown>[] {
  if (!Array.isArray(json))
    throw new RegistryError("bad_response", `${where} did not answer a list of releases.`);
  return json.filter((x): x is Record<string, unknown> => typeof x === "object" && x !== null);
}

class GitHubSource implements ReleaseSource {
  readonly describe: string;
  readonly project: string;
  readonly #base: string;
  readonly #repo: string;
  readonly #cred: Credential | undefined;
  readonly #options: ForgeOptions;

  constructor(owner: string, repo: string, options: ForgeOptions) {
    this.#base = apiBase(options.env["AGENT_GITHUB_API_URL"], DEFAULT_GITHUB_API);
    this.#repo = `${owner}/${repo}`;
    this.project = repo;
    this.describe = `GitHub (${this.#base})`;
    this.#cred = bearer(new URL(this.#base).origin, options.env["GITHUB_TOKEN"], "GITHUB_TOKEN");
    this.#options = options;
  }

  #headers(accept: string): Record<string, string> {
    return {
      Accept: accept,
      "X-GitHub-Api-Version": "2022-11-28",
      "User-Agent": this.#options.userAgent ?? "pluggableharness-agent",
    };
  }

  async listReleases(): Promise<Release[]> {
    const out: Release[] = [];
    let url: string | undefined = `${this.#base}/repos/${this.#repo}/releases?per_page=${PER_PAGE}`;
    for (let page = 0; url !== undefined && page < MAX_PAGES; page++) {
      const { json, res } = await getJson(url, {
        headers: this.#headers("application/vnd.github+json"),
        ...(this.#cred ? { credential: this.#cred } : {}),
        credentialHint: "GITHUB_TOKEN",
        limit: LIST_LIMIT,
        what: `the releases of github.com/${this.#repo}`,
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      });
      for (const r of asArray(json, this.describe)) {
        const assets = Array.isArray(r["assets"]) ? (r["assets"] as Record<string, unknown>[]) : [];
        out.push({
          tag: String(r["tag_name"] ?? ""),
          draft: r["draft"] === true,
          prerelease: r["prerelease"] === true,
          assets: assets
            .filter((a) => typeof a["name"] === "string" && typeof a["url"] === "string")
            .map((a) => ({
              name: a["name"] as string,
              // The API URL works for public and private repositories alike (with a token).
              url: a["url"] as string,
              headers: { Accept: "application/octet-stream" },
            })),
        });
      }
      url = nextLink(res.headers.get("link"));
    }
    return out;
  }

  async download(asset: ReleaseAsset, limit: number, what: string): Promise<Uint8Array> {
    const res = await get(asset.url, {
      headers: { ...this.#headers("application/octet-stream"), ...asset.headers },
      ...(this.#cred ? { credential: this.#cred } : {}),
      credentialHint: "GITHUB_TOKEN",
      limit,
      what,
      timeoutMs: 300_000,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
    return res.body;
  }
}

class GitLabSource implements ReleaseSource {
  readonly describe: string;
  readonly project: string;
  readonly #base: string;
  readonly #path: string;
  readonly #cred: Credential | undefined;
  readonly #options: ForgeOptions;

  constructor(path: string, options: ForgeOptions) {
    this.#base = apiBase(options.env["AGENT_GITLAB_API_URL"], DEFAULT_GITLAB_API);
    this.#path = path;
    this.project = path.split("/").at(-1)!;
    this.describe = `GitLab (${this.#base})`;
    const token = options.env["GITLAB_TOKEN"]?.trim();
    this.#cred =
      token === undefined || token === ""
        ? undefined
        : {
            origin: new URL(this.#base).origin,
            header: ["PRIVATE-TOKEN", token],
            from: "GITLAB_TOKEN",
            secret: token,
          };
    this.#options = options;
  }

  async listReleases(): Promise<Release[]> {
    const out: Release[] = [];
    const id = encodeURIComponent(this.#path);
    let url: string | undefined = `${this.#base}/projects/${id}/releases?per_page=${PER_PAGE}`;
    for (let page = 0; url !== undefined && page < MAX_PAGES; page++) {
      const { json, res } = await getJson(url, {
        headers: { "User-Agent": this.#options.userAgent ?? "pluggableharness-agent" },
        ...(this.#cred ? { credential: this.#cred } : {}),
        credentialHint: "GITLAB_TOKEN",
        limit: LIST_LIMIT,
        what: `the releases of gitlab.com/${this.#path}`,
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      });
      for (const r of asArray(json, this.describe)) {
        const assets = (r["assets"] as { links?: Record<string, unknown>[] } | undefined)?.links ?? [];
        out.push({
          tag: String(r["tag_name"] ?? ""),
          draft: r["upcoming_release"] === true,
          prerelease: false,
          assets: assets
            .filter(
              (a) =>
                typeof a["name"] === "string" &&
                (typeof a["direct_asset_url"] === "string" || typeof a["url"] === "string"),
            )
            .map((a) => ({ name: a["name"] as string, url: (a["direct_asset_url"] ?? a["url"]) as string })),
        });
      }
      const next = res.headers.get("x-next-page");
      url =
        nextLink(res.headers.get("link")) ??
        (next ? `${this.#base}/projects/${id}/releases?per_page=${PER_PAGE}&page=${next}` : undefined);
    }
    return out;
  }

  async download(asset: ReleaseAsset, limit: number, what: string): Promise<Uint8Array> {
    const res = await get(asset.url, {
      ...(this.#cred ? { credential: this.#cred } : {}),
      credentialHint: "GITLAB_TOKEN",
      limit,
      what,
      timeoutMs: 300_000,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
    return res.body;
  }
}

/**
 * A registry mirror: static files under `<url>/<source path>/` — `index.json` listing the
 * releases (`{"releases": [{"tag": "v1.2.3", "assets": ["<name>", …]}]}`) and each
 * release's assets at `<tag>/<name>` (a static file server or object store can serve it).
 */
class MirrorSource implements ReleaseSource {
  readonly describe: string;
  readonly project: string;
  readonly #base: string;
  readonly #cred: Credential | undefined;
  readonly #options: ForgeOptions;

  constructor(base: string, source: string, auth: Secret | undefined, options: ForgeOptions) {
    this.#base = base.replace(/\/+$/, "");
    this.project = source.split("/").at(-1)!;
    this.describe = `mirror ${this.#base}`;
    this.#cred = bearer(new URL(this.#base).origin, auth?.reveal(), auth?.envName ?? "registry_mirror auth");
    this.#options = options;
  }

  async listReleases(): Promise<Release[]> {
    const { json } = await getJson(`${this.#base}/index.json`, {
      ...(this.#cred ? { credential: this.#cred } : {}),
      limit: LIST_LIMIT,
      what: `the mirror index of ${this.project}`,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
    const releases = (json as { releases?: unknown }).releases;
    if (!Array.isArray(releases))
      throw new RegistryError("bad_response", `${this.#base}/index.json has no "releases" list.`);
    return releases
      .filter(
        (r): r is { tag: string; assets?: unknown } =>
          typeof r === "object" && r !== null && typeof (r as { tag?: unknown }).tag === "string",
      )
      .map((r) => ({
        tag: r.tag,
        draft: false,
        prerelease: false,
        assets: (Array.isArray(r.assets) ? r.assets : [])
          .filter((n): n is string => typeof n === "string")
          .map((n) => ({
            name: n,
            url: `${this.#base}/${encodeURIComponent(r.tag)}/${encodeURIComponent(n)}`,
          })),
      }));
  }

  async download(asset: ReleaseAsset, limit: number, what: string): Promise<Uint8Array> {
    const res = await get(asset.url, {
      ...(this.#cred ? { credential: this.#cred } : {}),
      limit,
      what,
      timeoutMs: 300_000,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
    return res.body;
  }
}
