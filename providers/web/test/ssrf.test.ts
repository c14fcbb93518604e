// The SSRF corpus: every way of writing a loopback, private, link-local, CGNAT,
// multicast or reserved address — dotted, decimal, hex, octal, short forms, IPv4-mapped
// and -compatible IPv6, NAT64, 6to4, zone ids — is refused before any connection, a
// rebinding DNS server cannot swap the address between check and connect, and every hop
// of a redirect chain is checked again. A loopback server counts connections: it must
// see none from a refused request.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockedAddress, embeddedIPv4, type GetOptions, httpGet, type Resolver } from "../src/net.ts";

let server: Server;
let port = 0;
let connections = 0;
let hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    const m = /^\/to\/(.+)$/.exec(req.url ?? "");
    if (m) {
      res.writeHead(302, { location: decodeURIComponent(m[1]!) });
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("public page");
  });
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "0.0.0.0", r));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

const options = (extra: Partial<GetOptions> = {}): GetOptions => ({
  timeoutMs: 3_000,
  maxBytes: 10_000,
  maxRedirects: 5,
  headers: {},
  allowPrivateNetwork: false,
  signal: new AbortController().signal,
  ...extra,
});

const refusedForms = [
  "127.0.0.1",
  "127.1",
  "127.0.1",
  "2130706433",
  "0x7f000001",
  "0x7f.0.0.1",
  "0177.0.0.1",
  "017700000001",
  "0.0.0.0",
  "0",
  "10.0.0.1",
  "172.16.0.1",
  "172.31.255.255",
  "192.168.0.1",
  "169.254.169.254",
  "100.64.0.1",
  "100.127.255.254",
  "198.18.0.1",
  "224.0.0.1",
  "239.255.255.250",
  "255.255.255.255",
  "240.0.0.1",
  "[::1]",
  "[::]",
  "[0:0:0:0:0:0:0:1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[0:0:0:0:0:ffff:127.0.0.1]",
  "[::ffff:10.0.0.1]",
  "[::ffff:169.254.169.254]",
  "[::ffff:a9fe:a9fe]",
  "[::127.0.0.1]",
  "[64:ff9b::127.0.0.1]",
  "[64:ff9b::a9fe:a9fe]",
  "[64:ff9b:1::1]",
  "[2002:7f00:1::1]",
  "[2002:c0a8:101::1]",
  "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
  "[fc00::1]",
  "[fd12:3456::1]",
  "[fe80::1]",
  "[fec0::1]",
  "[ff02::1]",
  "[100::1]",
];

describe("the address guard", () => {
  it("refuses every form of a non-public address, as URLs write them", async () => {
    expect(refusedForms.length).toBeGreaterThanOrEqual(30);
    connections = 0;
    for (const form of refusedForms) {
      const url = new URL(`http://${form}:${port}/secret`);
      await expect(httpGet(url, options()), form).rejects.toMatchObject({ category: "permission_denied" });
    }
    expect(connections).toBe(0);
  });

  it("lets public addresses through, including IPv6 that merely looks like a mapped form", () => {
    for (const ip of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ]) {
      expect(blockedAddress(ip), ip).toBeUndefined();
    }
    // Zone ids (which URLs cannot carry, but a resolver can answer) do not hide an address.
    expect(blockedAddress("fe80::1%eth0")).toBeDefined();
    expect(blockedAddress("::ffff:127.0.0.1")).toBeDefined();
    expect(embeddedIPv4("::ffff:7f00:1")).toBe("127.0.0.1");
    expect(embeddedIPv4("64:ff9b::a9fe:a9fe")).toBe("169.254.169.254");
    expect(embeddedIPv4("2002:c0a8:101::1")).toBe("192.168.1.1");
  });

  it("refuses a name that resolves to any non-public address, and connects to the one it checked", async () => {
    connections = 0;
    const resolving = (answers: string[][]): Resolver & { calls: number } => {
      const f = Object.assign(
        async () => {
          const a = answers[Math.min(f.calls, answers.length - 1)]!;
          f.calls++;
          return a.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
        },
        { calls: 0 },
      );
      return f;
    };
    // One private answer among public ones is enough to refuse.
    const mixed = resolving([["8.8.8.8", "127.0.0.1"]]);
    await expect(
      httpGet(new URL(`http://mixed.test:${port}/`), options({ resolve: mixed })),
    ).rejects.toMatchObject({
      category: "permission_denied",
    });
    expect(connections).toBe(0);
    // Rebinding: the first answer is the "public" site (the loopback server stands in for
    // it), later answers are private. The name is resolved once and that address is used.
    const rebinding = resolving([["127.0.0.1"], ["10.0.0.1"], ["169.254.169.254"]]);
    const res = await httpGet(
      new URL(`http://rebind.test:${port}/page`),
      options({ resolve: rebinding, allowAddresses: ["127.0.0.1"] }),
    );
    expect(res.body.toString()).toBe("public page");
    expect(rebinding.calls).toBe(1);
    // Same name, now answering private on the first lookup: refused, never connected.
    connections = 0;
    const rebound = resolving([["10.0.0.1"]]);
    await expect(
      httpGet(
        new URL(`http://rebind.test:${port}/page`),
        options({ resolve: rebound, allowAddresses: ["127.0.0.1"] }),
      ),
    ).rejects.toMatchObject({ category: "permission_denied" });
    expect(connections).toBe(0);
  });

  it("checks every hop of a redirect chain again", async () => {
    const site = `http://site.test:${port}`;
    const resolve: Resolver = async (host) => {
      if (host === "site.test") return [{ address: "127.0.0.1", family: 4 }];
      if (host === "internal.test") return [{ address: "10.1.2.3", family: 4 }];
      if (host === "metadata.test") return [{ address: "169.254.169.254", family: 4 }];
      return [{ address: "::1", family: 6 }];
    };
    const opts = options({ resolve, allowAddresses: ["127.0.0.1"] });
    // A chain that stays on the public site works.
    hits = [];
    const ok = await httpGet(
      new URL(`${site}/to/${encodeURIComponent(`${site}/to/${encodeURIComponent(`${site}/end`)}`)}`),
      opts,
    );
    expect(ok.status).toBe(200);
    expect(hits).toHaveLength(3);
    for (const target of [
      `http://[::ffff:127.0.0.2]:${port}/`,
      `http://127.0.0.2:${port}/`,
      `http://internal.test:${port}/`,
      `http://metadata.test/latest/meta-data/`,
      `http://localhost:${port}/`,
      `http://[::1]:${port}/`,
      `http://0x7f000002:${port}/`,
    ]) {
      hits = [];
      const url = new URL(`${site}/to/${encodeURIComponent(`${site}/to/${encodeURIComponent(target)}`)}`);
      await expect(httpGet(url, opts), target).rejects.toMatchObject({ category: "permission_denied" });
      // Only the two public hops were requested.
      expect(hits, target).toHaveLength(2);
    }
  });
});
