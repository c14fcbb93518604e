// Who may talk to the web UI: only this machine's user, holding the token. Every request
// must name the server itself in Host (a DNS-rebinding page reaches 127.0.0.1 under a
// foreign name, so its Host gives it away), may carry only the server's own Origin (a
// foreign page's fetch is refused even before the token is looked at), and must carry
// the token: as the `token` query parameter of the page load (exchanged at once for an
// HttpOnly, SameSite=Strict cookie), as that cookie, or as `Authorization: Bearer`.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export type Refusal = { readonly status: 401 | 403 | 421; readonly reason: string };

/** The Host values that name this server: its loopback address and port. */
export function allowedHosts(port: number): Set<string> {
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);
}

export function cookieName(port: number): string {
  // Cookies are per host, not per port: two servers on 127.0.0.1 must not share one.
  return `agent_token_${port}`;
}

export function sameToken(given: string | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export interface GuardOptions {
  readonly port: number;
  readonly token: string;
  /** The request changes something (POST): an Origin header is then required, not only checked. */
  readonly mutating: boolean;
  /** The token as given in the URL, for the page load that exchanges it for the cookie. */
  readonly queryToken?: string | undefined;
}

/** undefined when the request may proceed; otherwise why not. */
export function check(req: IncomingMessage, o: GuardOptions): Refusal | undefined {
  const hosts = allowedHosts(o.port);
  const host = req.headers.host ?? "";
  if (!hosts.has(host))
    return { status: 421, reason: `this server answers only to ${[...hosts].join(", ")}` };
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const ok = origin.startsWith("http://") && hosts.has(origin.slice("http://".length));
    if (!ok) return { status: 403, reason: "cross-origin requests are refused" };
  } else if (o.mutating) {
    return { status: 403, reason: "a request that changes something must carry its Origin" };
  }
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    return { status: 403, reason: "cross-site requests are refused" };
  }
  const auth = req.headers.authorization;
  const bearer = typeof auth === "string" && auth.startsWith("Bearer ") ? auth.slice(7) : undefined;
  const given = bearer ?? o.queryToken ?? cookie(req, cookieName(o.port));
  if (!sameToken(given, o.token)) return { status: 401, reason: "a valid token is required" };
  return undefined;
}
