// The web UI's request guard on its own: Host must name the server, Origin (when sent,
// and always for a change) must be the server's own, and the token must match.
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { check, cookieName } from "../src/guard.ts";

const TOKEN = "t0ken-of-the-server-0123456789ab";
const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
const ok = { host: "127.0.0.1:4000", authorization: `Bearer ${TOKEN}` };
const guard = (headers: Record<string, string>, mutating = false, queryToken?: string) =>
  check(req(headers), { port: 4000, token: TOKEN, mutating, queryToken });

describe("the web UI guard", () => {
  it("lets the owner in by bearer token, cookie or the page load's query token", () => {
    expect(guard(ok)).toBeUndefined();
    expect(guard({ host: "localhost:4000", cookie: `a=b; ${cookieName(4000)}=${TOKEN}` })).toBeUndefined();
    expect(guard({ host: "[::1]:4000" }, false, TOKEN)).toBeUndefined();
    expect(
      guard({ ...ok, origin: "http://127.0.0.1:4000", "sec-fetch-site": "same-origin" }, true),
    ).toBeUndefined();
  });

  it("refuses a missing or wrong token, and another server's cookie", () => {
    expect(guard({ host: "127.0.0.1:4000" })?.status).toBe(401);
    expect(guard({ host: "127.0.0.1:4000", authorization: "Bearer nope" })?.status).toBe(401);
    expect(guard({ host: "127.0.0.1:4000" }, false, `${TOKEN}x`)?.status).toBe(401);
    expect(guard({ host: "127.0.0.1:4000", cookie: `${cookieName(4001)}=${TOKEN}` })?.status).toBe(401);
  });

  it("refuses a foreign Host (DNS rebinding), whatever the token", () => {
    for (const host of ["evil.example:4000", "127.0.0.1:4001", "127.0.0.1", "", "0.0.0.0:4000"]) {
      expect(guard({ ...ok, host })?.status).toBe(421);
    }
  });

  it("refuses a foreign Origin or site, and a change without an Origin", () => {
    for (const origin of ["http://evil.example", "http://127.0.0.1:4001", "https://127.0.0.1:4000", "null"]) {
      expect(guard({ ...ok, origin })?.status).toBe(403);
    }
    expect(guard({ ...ok, "sec-fetch-site": "cross-site" })?.status).toBe(403);
    expect(guard({ ...ok, "sec-fetch-site": "same-site" })?.status).toBe(403);
    expect(guard(ok, true)?.status).toBe(403);
  });
});
