// The web UI's HTTP server, on loopback only. Each browser tab opens one Server-Sent
// Events stream (GET /events), which is one frontend connection to the kernel: the
// frontend protocol's ServerEvents go out as their protobuf JSON form, one per SSE
// message, and the tab's ClientEvents come back as JSON in POST /send, naming the
// stream they belong to. The page, its script and the markdown library are static
// files. Every request passes the guard (guard.ts): Host, Origin and the token.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fromJson, type JsonValue, toJsonString } from "@bufbuild/protobuf";
import { ClientEventSchema, ServerEventSchema } from "@pluggableharness/protocol/frontend";
import type { FrontendConnection } from "./connection.ts";
import { check, cookieName, sameToken } from "./guard.ts";

export interface WebUiOptions {
  /** Opens one frontend connection to the kernel (one per browser tab). */
  readonly connect: () => FrontendConnection;
  /** Loopback address to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Default 0: any free port. */
  readonly port?: number;
  /** Default: 32 random bytes, new for every server. */
  readonly token?: string;
  /** Diagnostics (never given the token). */
  readonly log?: (message: string) => void;
}

export interface WebUi {
  readonly port: number;
  readonly token: string;
  /** The address that opens the UI (carries the token), optionally on one session. */
  url(sessionId?: string): string;
  close(): Promise<void>;
}

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), "static");
const require = createRequire(import.meta.url);

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

function loadAssets(): Map<string, Asset> {
  const own = (name: string, type: string): Asset => ({ type, body: readFileSync(join(STATIC_DIR, name)) });
  const markedDir = dirname(require.resolve("marked/package.json"));
  return new Map([
    ["/", own("index.html", "text/html; charset=utf-8")],
    ["/app.js", own("app.js", "text/javascript; charset=utf-8")],
    ["/render.js", own("render.js", "text/javascript; charset=utf-8")],
    ["/app.css", own("app.css", "text/css; charset=utf-8")],
    [
      "/vendor/marked.js",
      { type: "text/javascript; charset=utf-8", body: readFileSync(join(markedDir, "lib", "marked.esm.js")) },
    ],
  ]);
}

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

const LOOPBACK = new Set(["127.0.0.1", "::1"]);
const MAX_BODY = 16 * 1024 * 1024;

interface Stream {
  readonly conn: FrontendConnection;
  readonly res: ServerResponse;
}

export async function startWebUi(options: WebUiOptions): Promise<WebUi> {
  const host = options.host === "localhost" || options.host === undefined ? "127.0.0.1" : options.host;
  if (!LOOPBACK.has(host)) throw new Error(`the web UI listens on loopback only, not "${host}"`);
  const token = options.token ?? randomBytes(32).toString("base64url");
  if (token.length < 16) throw new Error("the web UI token must be at least 16 characters");
  const assets = loadAssets();
  const streams = new Map<string, Stream>();
  const log = options.log ?? (() => {});
  let port = 0;

  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, extra = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, "content-type": type, ...extra });
    res.end(body);
  };

  const openStream = (res: ServerResponse) => {
    const id = randomBytes(16).toString("hex");
    const conn = options.connect();
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
    });
    res.write(`event: hello\ndata: ${JSON.stringify({ connection: id })}\n\n`);
    streams.set(id, { conn, res });
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
    keepAlive.unref();
    const end = () => {
      clearInterval(keepAlive);
      streams.delete(id);
      conn.close();
      res.end();
    };
    res.on("close", end);
    void (async () => {
      try {
        for await (const ev of conn.events) {
          res.write(`data: ${toJsonString(ServerEventSchema, ev)}\n\n`);
        }
      } catch (err) {
        log(`event stream failed: ${(err as Error).message}`);
      } finally {
        end();
      }
    })();
  };

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) {
          reject(new Error("the request is too large"));
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      req.on("error", reject);
    });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const mutating = req.method !== "GET" && req.method !== "HEAD";
    const queryToken = url.pathname === "/" ? (url.searchParams.get("token") ?? undefined) : undefined;
    const refused = check(req, { port, token, mutating, queryToken });
    if (refused) {
      send(res, refused.status, "text/plain; charset=utf-8", `${refused.reason}\n`);
      return;
    }
    if (queryToken !== undefined && sameToken(queryToken, token)) {
      // The token leaves the address bar (and history) at once; the cookie carries it from now on.
      const session = url.searchParams.get("session");
      res.writeHead(303, {
        ...SECURITY_HEADERS,
        "set-cookie": `${cookieName(port)}=${token}; HttpOnly; SameSite=Strict; Path=/`,
        location: session && /^[0-9A-Za-z]{1,64}$/.test(session) ? `/#session=${session}` : "/",
      });
      res.end();
      return;
    }
    if (req.method === "GET" && url.pathname === "/events") return openStream(res);
    if (req.method === "POST" && url.pathname === "/send") {
      if (!(req.headers["content-type"] ?? "").startsWith("application/json")) {
        send(res, 415, "text/plain; charset=utf-8", "send JSON\n");
        return;
      }
      let body: { connection?: unknown; event?: unknown };
      try {
        body = JSON.parse(await readBody(req)) as typeof body;
      } catch (err) {
        send(res, 400, "text/plain; charset=utf-8", `${(err as Error).message}\n`);
        return;
      }
      const stream = typeof body.connection === "string" ? streams.get(body.connection) : undefined;
      if (!stream) {
        send(res, 404, "text/plain; charset=utf-8", "no such event stream (reload the page)\n");
        return;
      }
      try {
        const event = fromJson(ClientEventSchema, body.event as JsonValue);
        stream.conn.send(event);
      } catch (err) {
        send(res, 400, "text/plain; charset=utf-8", `not a ClientEvent: ${(err as Error).message}\n`);
        return;
      }
      send(res, 204, "text/plain; charset=utf-8", "");
      return;
    }
    const asset = req.method === "GET" ? assets.get(url.pathname) : undefined;
    if (asset) {
      send(res, 200, asset.type, asset.body);
      return;
    }
    send(res, 404, "text/plain; charset=utf-8", "not found\n");
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log(`request failed: ${(err as Error).message}`);
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  port = typeof address === "object" && address ? address.port : 0;
  const base = host.includes(":") ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  return {
    port,
    token,
    url: (sessionId) =>
      `${base}/?token=${encodeURIComponent(token)}${sessionId ? `&session=${encodeURIComponent(sessionId)}` : ""}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of streams.values()) {
          s.conn.close();
          s.res.end();
        }
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
