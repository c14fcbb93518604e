// The fake forge: one loopback HTTP server for the APIs and the mirror, and a second one
// standing for GitHub's asset storage (downloads redirect there, so a test can see that
// no token follows the redirect). Every request is recorded with its headers.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeForgeOptions {
  /** Tokens the forge accepts (GITHUB_TOKEN / GITLAB_TOKEN / the mirror's auth). */
  githubToken?: string;
  gitlabToken?: string;
  mirrorToken?: string;
}

export interface PublishOptions {
  /** "github.com/<owner>/<repo>" or "gitlab.com/<group>/<repo>". */
  source: string;
  tag: string;
  assets: Readonly<Record<string, Uint8Array | string>>;
  /** Needs the forge token to be listed or downloaded. */
  private?: boolean;
  draft?: boolean;
  prerelease?: boolean;
  /** Also serve it from the mirror (under `/mirror/<source>/`). Default false. */
  mirror?: boolean;
}

export interface RecordedRequest {
  server: "forge" | "storage";
  method: string;
  path: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

interface StoredAsset {
  id: number;
  name: string;
  data: Uint8Array;
}

interface StoredRelease {
  id: number;
  tag: string;
  draft: boolean;
  prerelease: boolean;
  assets: StoredAsset[];
}

interface Repo {
  private: boolean;
  mirrored: boolean;
  releases: StoredRelease[];
}

export interface FakeForge {
  /** The forge server's origin. */
  readonly url: string;
  /** For AGENT_GITHUB_API_URL. */
  readonly githubApi: string;
  /** For AGENT_GITLAB_API_URL. */
  readonly gitlabApi: string;
  /** A registry_mirror URL serving published releases marked `mirror`. */
  readonly mirrorUrl: string;
  /** The storage server downloads are redirected to. */
  readonly storageUrl: string;
  readonly requests: RecordedRequest[];
  publish(options: PublishOptions): void;
  /** Replaces an asset's bytes on the forge (a tampered release), keeping everything else. */
  replaceAsset(source: string, tag: string, name: string, data: Uint8Array | string): void;
  /** Stops answering: every later connection is refused (the machine is offline). */
  close(): Promise<void>;
}

const bytes = (d: Uint8Array | string) => (typeof d === "string" ? new TextEncoder().encode(d) : d);

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${port}`);
    });
  });
}

export async function startFakeForge(options: FakeForgeOptions = {}): Promise<FakeForge> {
  const repos = new Map<string, Repo>();
  const requests: RecordedRequest[] = [];
  const signed = new Map<string, StoredAsset>();
  let nextId = 1;
  const forge = createServer((req, res) => handle(req, res));
  const storage = createServer((req, res) => {
    record("storage", req);
    const url = new URL(req.url ?? "/", "http://x");
    const m = /^\/blob\/([0-9a-f]+)$/.exec(url.pathname);
    const asset = m ? signed.get(`${m[1]}:${url.searchParams.get("sig")}`) : undefined;
    if (!asset) return send(res, 403, { message: "bad signature" });
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": asset.data.byteLength,
    });
    res.end(asset.data);
  });
  const url = await listen(forge);
  const storageUrl = await listen(storage);

  function record(server: RecordedRequest["server"], req: IncomingMessage) {
    requests.push({ server, method: req.method ?? "GET", path: req.url ?? "/", headers: { ...req.headers } });
  }

  function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(text);
  }

  function sendBytes(res: ServerResponse, data: Uint8Array) {
    res.writeHead(200, { "content-type": "application/octet-stream", "content-length": data.byteLength });
    res.end(data);
  }

  function bearer(req: IncomingMessage): string | undefined {
    const h = req.headers.authorization;
    const m = typeof h === "string" ? /^(?:Bearer|token)\s+(.+)$/i.exec(h) : null;
    return m?.[1];
  }

  /** GitHub answers 404 to a private repository without a valid token, 401 to a bad one. */
  function githubAccess(req: IncomingMessage, res: ServerResponse, repo: Repo | undefined): boolean {
    const token = bearer(req);
    if (token !== undefined && token !== options.githubToken) {
      send(res, 401, { message: "Bad credentials" });
      return false;
    }
    if (!repo || (repo.private && token === undefined)) {
      send(res, 404, { message: "Not Found" });
      return false;
    }
    return true;
  }

  function gitlabAccess(req: IncomingMessage, res: ServerResponse, repo: Repo | undefined): boolean {
    const token = req.headers["private-token"];
    if (token !== undefined && token !== options.gitlabToken) {
      send(res, 401, { message: "401 Unauthorized" });
      return false;
    }
    if (!repo || (repo.private && token === undefined)) {
      send(res, 404, { message: "404 Project Not Found" });
      return false;
    }
    return true;
  }

  function page<T>(req: IncomingMessage, res: ServerResponse, all: T[], base: string): T[] {
    const u = new URL(req.url ?? "/", url);
    const per = Math.min(100, Number(u.searchParams.get("per_page") ?? "30") || 30);
    const n = Math.max(1, Number(u.searchParams.get("page") ?? "1") || 1);
    const slice = all.slice((n - 1) * per, n * per);
    if (n * per < all.length) res.setHeader("link", `<${base}?per_page=${per}&page=${n + 1}>; rel="next"`);
    return slice;
  }

  function handle(req: IncomingMessage, res: ServerResponse) {
    record("forge", req);
    const u = new URL(req.url ?? "/", url);
    const path = decodeURIComponent(u.pathname);
    const ghList = /^\/github\/repos\/([^/]+)\/([^/]+)\/releases$/.exec(path);
    const ghAsset = /^\/github\/repos\/([^/]+)\/([^/]+)\/releases\/assets\/(\d+)$/.exec(path);
    const glList = /^\/gitlab\/api\/v4\/projects\/(.+)\/releases$/.exec(path);
    const glDownload = /^\/gitlab\/(.+)\/-\/releases\/([^/]+)\/downloads\/([^/]+)$/.exec(path);

    // GitHub: GET /github/repos/:owner/:repo/releases
    if (ghList) {
      const m = ghList;
      const source = `github.com/${m[1]}/${m[2]}`;
      const repo = repos.get(source);
      if (!githubAccess(req, res, repo)) return;
      const newest = [...repo!.releases].reverse();
      const list = page(req, res, newest, `${url}/github/repos/${m[1]}/${m[2]}/releases`);
      return send(
        res,
        200,
        list.map((r) => ({
          id: r.id,
          tag_name: r.tag,
          name: r.tag,
          draft: r.draft,
          prerelease: r.prerelease,
          assets: r.assets.map((a) => ({
            id: a.id,
            name: a.name,
            size: a.data.byteLength,
            url: `${url}/github/repos/${m[1]}/${m[2]}/releases/assets/${a.id}`,
            browser_download_url: `${url}/github-web/${m[1]}/${m[2]}/releases/download/${r.tag}/${a.name}`,
          })),
        })),
      );
    }
    // GitHub: GET /github/repos/:owner/:repo/releases/assets/:id (octet-stream: redirect to storage)
    if (ghAsset) {
      const m = ghAsset;
      const repo = repos.get(`github.com/${m[1]}/${m[2]}`);
      if (!githubAccess(req, res, repo)) return;
      const asset = repo!.releases.flatMap((r) => r.assets).find((a) => a.id === Number(m[3]));
      if (!asset) return send(res, 404, { message: "Not Found" });
      if (req.headers.accept !== "application/octet-stream") {
        return send(res, 200, { id: asset.id, name: asset.name, size: asset.data.byteLength });
      }
      const key = randomBytes(8).toString("hex");
      const sig = randomBytes(12).toString("hex");
      signed.set(`${key}:${sig}`, asset);
      res.writeHead(302, { location: `${storageUrl}/blob/${key}?sig=${sig}` });
      return res.end();
    }
    // GitLab: GET /gitlab/api/v4/projects/:id/releases
    if (glList) {
      const m = glList;
      const project = m[1]!;
      const source = `gitlab.com/${project}`;
      const repo = repos.get(source);
      if (!gitlabAccess(req, res, repo)) return;
      const newest = [...repo!.releases].filter((r) => !r.draft).reverse();
      const list = page(
        req,
        res,
        newest,
        `${url}/gitlab/api/v4/projects/${encodeURIComponent(project)}/releases`,
      );
      return send(
        res,
        200,
        list.map((r) => ({
          tag_name: r.tag,
          name: r.tag,
          upcoming_release: false,
          assets: {
            sources: [],
            links: r.assets.map((a) => ({
              id: a.id,
              name: a.name,
              url: `${url}/gitlab/${project}/-/releases/${r.tag}/downloads/${a.name}`,
              direct_asset_url: `${url}/gitlab/${project}/-/releases/${r.tag}/downloads/${a.name}`,
              link_type: "package",
            })),
          },
        })),
      );
    }
    // GitLab: GET /gitlab/<project>/-/releases/:tag/downloads/:name
    if (glDownload) {
      const m = glDownload;
      const repo = repos.get(`gitlab.com/${m[1]}`);
      if (!gitlabAccess(req, res, repo)) return;
      const asset = repo!.releases.find((r) => r.tag === m[2])?.assets.find((a) => a.name === m[3]);
      if (!asset) return send(res, 404, { message: "404 Not Found" });
      return sendBytes(res, asset.data);
    }
    // Mirror: GET /mirror/<source>/index.json and /mirror/<source>/<tag>/<name>
    if (path.startsWith("/mirror/")) {
      if (options.mirrorToken !== undefined && bearer(req) !== options.mirrorToken) {
        return send(res, 401, { message: "mirror credentials required" });
      }
      const rest = path.slice("/mirror/".length);
      if (rest.endsWith("/index.json")) {
        const repo = repos.get(rest.slice(0, -"/index.json".length));
        if (!repo?.mirrored) return send(res, 404, { message: "not mirrored" });
        return send(res, 200, {
          releases: repo.releases
            .filter((r) => !r.draft)
            .map((r) => ({ tag: r.tag, assets: r.assets.map((a) => a.name) })),
        });
      }
      const parts = rest.split("/");
      const name = parts.pop()!;
      const tag = parts.pop()!;
      const repo = repos.get(parts.join("/"));
      const asset = repo?.mirrored
        ? repo.releases.find((r) => r.tag === tag)?.assets.find((a) => a.name === name)
        : undefined;
      if (!asset) return send(res, 404, { message: "not mirrored" });
      return sendBytes(res, asset.data);
    }
    send(res, 404, { message: "Not Found" });
  }

  const closeServer = (s: Server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });

  return {
    url,
    githubApi: `${url}/github`,
    gitlabApi: `${url}/gitlab/api/v4`,
    mirrorUrl: `${url}/mirror`,
    storageUrl,
    requests,
    publish(p) {
      const repo = repos.get(p.source) ?? { private: false, mirrored: false, releases: [] };
      repo.private = p.private ?? repo.private;
      repo.mirrored = p.mirror ?? repo.mirrored;
      repo.releases = repo.releases.filter((r) => r.tag !== p.tag);
      repo.releases.push({
        id: nextId++,
        tag: p.tag,
        draft: p.draft ?? false,
        prerelease: p.prerelease ?? false,
        assets: Object.entries(p.assets).map(([name, data]) => ({ id: nextId++, name, data: bytes(data) })),
      });
      repos.set(p.source, repo);
    },
    replaceAsset(source, tag, name, data) {
      const asset = repos
        .get(source)
        ?.releases.find((r) => r.tag === tag)
        ?.assets.find((a) => a.name === name);
      if (!asset) throw new Error(`no asset ${name} in ${source} ${tag}`);
      asset.data = bytes(data);
    },
    async close() {
      await Promise.all([closeServer(forge), closeServer(storage)]);
    },
  };
}
