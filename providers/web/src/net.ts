// One HTTP GET with hard limits: total time, body size (after decompression), redirect
// count, an optional per-hop URL check, and a DNS guard that refuses private, loopback
// and link-local addresses unless allowed (so a fetched URL cannot reach the machine's
// own network services or cloud metadata endpoints).
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { IncomingMessage } from "node:http";
import { BlockList, isIP } from "node:net";
import type { Readable } from "node:stream";
import { ToolFailure } from "@pluggableharness/tool-kit";

export interface GetOptions {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  headers: Record<string, string>;
  allowPrivateNetwork: boolean;
  signal: AbortSignal;
  /** Checks each URL (the first and every redirect target); throws to refuse it. */
  checkUrl?: (url: URL) => void;
  /** DNS (tests inject a fake one); default: the system resolver, one lookup per hop. */
  resolve?: Resolver;
  /** Exact addresses the guard lets through (tests: the loopback site standing in for the internet). */
  allowAddresses?: readonly string[];
}

export interface GetResponse {
  url: string;
  status: number;
  headers: IncomingMessage["headers"];
  body: Buffer;
  /** The body was cut at maxBytes. */
  truncated: boolean;
}

// ---- the address guard ------------------------------------------------------------
//
// Every address a request would connect to is checked against a net.BlockList of the
// ranges no fetched URL may reach: loopback, private, link-local, CGNAT, multicast,
// reserved and documentation ranges. IPv6 forms that carry an IPv4 address (IPv4-mapped,
// IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are checked by the IPv4 inside
// them; Teredo and local-use NAT64 prefixes are refused outright.

const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["::", 96], // IPv4-compatible (deprecated)
  ["64:ff9b:1::", 48], // local-use NAT64
  ["100::", 64], // discard
  ["2001::", 32], // Teredo
  ["2001:db8::", 32], // documentation
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, "ipv6");
}

/** The eight 16-bit groups of an IPv6 address (already validated by isIP). */
function hextets(ip: string): number[] {
  let text = ip.toLowerCase();
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const h = head ? head.split(":") : [];
  const t = tail === undefined ? [] : tail ? tail.split(":") : [];
  const fill = tail === undefined ? [] : Array.from({ length: 8 - h.length - t.length }, () => "0");
  return [...h, ...fill, ...t].map((x) => Number.parseInt(x, 16));
}

function v4Of(high: number, low: number): string {
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any. */
export function embeddedIPv4(ip: string): string | undefined {
  const g = hextets(ip);
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return v4Of(g[6]!, g[7]!); // ::ffff:a.b.c.d
  if (zero(0, 6) && (g[6]! !== 0 || g[7]! > 1)) return v4Of(g[6]!, g[7]!); // ::a.b.c.d
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return v4Of(g[6]!, g[7]!); // NAT64
  if (g[0] === 0x2002) return v4Of(g[1]!, g[2]!); // 6to4
  return undefined;
}

/** Why `ip` may not be reached, or undefined when it may. */
export function blockedAddress(ip: string): string | undefined {
  const bare = ip.replace(/^\[|\]$/g, "");
  const family = isIP(bare.split("%")[0]!);
  if (family === 4)
    return BLOCKED.check(bare, "ipv4") ? `${bare} is a loopback, private or reserved address` : undefined;
  if (family !== 6) return `${ip} is not an IP address`;
  const plain = bare.split("%")[0]!;
  const inner = embeddedIPv4(plain);
  if (inner !== undefined && BLOCKED.check(inner, "ipv4")) {
    return `${bare} carries ${inner}, a loopback, private or reserved address`;
  }
  if (BLOCKED.check(plain, "ipv6")) return `${bare} is a loopback, private, link-local or reserved address`;
  return undefined;
}

/** Loopback, private, link-local, carrier-grade NAT, multicast, reserved (in any IPv6 form). */
export function isPrivateAddress(ip: string): boolean {
  return blockedAddress(ip) !== undefined;
}

class BlockedAddressError extends Error {
  readonly code = "EBLOCKED";
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
      err ? reject(err) : resolve(addresses),
    ),
  );

/**
 * Resolves `hostname` once and checks every answer; the request then connects to the
 * checked address and nothing else (no second lookup a rebinding DNS server could answer
 * differently).
 */
async function pinnedAddress(url: URL, opts: GetOptions): Promise<LookupAddress> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host);
  const addresses =
    literal !== 0 ? [{ address: host, family: literal }] : await (opts.resolve ?? systemResolver)(host);
  if (addresses.length === 0) throw Object.assign(new Error(`no address for ${host}`), { code: "ENOTFOUND" });
  if (!opts.allowPrivateNetwork) {
    for (const a of addresses) {
      if (opts.allowAddresses?.includes(a.address)) continue;
      const why = blockedAddress(a.address);
      if (why) throw new BlockedAddressError(`${url.hostname} resolves to ${a.address}: ${why}`);
    }
  }
  return addresses[0]!;
}

function failureOf(err: unknown, url: URL, timedOut: boolean): ToolFailure {
  if (err instanceof ToolFailure) return err;
  if (timedOut) return new ToolFailure("timeout", `no complete answer from ${url.host} in time`);
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EBLOCKED") {
    return new ToolFailure(
      "permission_denied",
      `${url.hostname} is on a private network; fetching it is not allowed (${(err as Error).message})`,
    );
  }
  if (code === "ENOTFOUND" || code === "EAI_NONAME")
    return new ToolFailure("not_found", `the host ${url.hostname} does not exist`);
  if (code === "EAI_AGAIN")
    return new ToolFailure("execution_failed", `DNS lookup of ${url.hostname} failed`, { retryable: true });
  return new ToolFailure("execution_failed", `cannot fetch ${url.host}: ${code ?? (err as Error).message}`, {
    retryable: code === "ECONNRESET" || code === "ECONNREFUSED" || code === "ETIMEDOUT",
    details: { code: code ?? "" },
  });
}

async function decoded(res: IncomingMessage): Promise<Readable> {
  const encoding = String(res.headers["content-encoding"] ?? "").toLowerCase();
  if (encoding === "" || encoding === "identity") return res;
  const zlib = await import("node:zlib");
  const stream =
    encoding === "gzip" || encoding === "x-gzip"
      ? zlib.createGunzip()
      : encoding === "deflate"
        ? zlib.createInflate()
        : encoding === "br"
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!stream) return res;
  res.pipe(stream);
  res.on("error", (e) => stream.destroy(e));
  return stream;
}

function once(url: URL, opts: GetOptions, signal: AbortSignal): Promise<GetResponse> {
  return new Promise((resolve, reject) => {
    void (async () => {
      const mod = url.protocol === "https:" ? await import("node:https") : await import("node:http");
      const pinned = await pinnedAddress(url, opts);
      // The socket connects to the address just checked: the lookup hook hands it back
      // instead of resolving again.
      const lookup = (
        _host: string,
        options: { all?: boolean },
        cb: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
      ) => (options.all ? cb(null, [pinned]) : cb(null, pinned.address, pinned.family));
      const req = mod.get(
        url,
        {
          headers: opts.headers,
          signal,
          lookup: lookup as never,
          agent: false,
        },
        (res) => {
          void (async () => {
            const status = res.statusCode ?? 0;
            if (status >= 300 && status < 400 && res.headers.location) {
              res.resume();
              resolve({
                url: url.href,
                status,
                headers: res.headers,
                body: Buffer.alloc(0),
                truncated: false,
              });
              return;
            }
            const body = await decoded(res);
            const chunks: Buffer[] = [];
            let size = 0;
            let truncated = false;
            const done = () =>
              resolve({
                url: url.href,
                status,
                headers: res.headers,
                body: Buffer.concat(chunks),
                truncated,
              });
            body.on("data", (c: Buffer) => {
              if (truncated) return;
              const room = opts.maxBytes - size;
              if (c.length >= room) {
                chunks.push(c.subarray(0, room));
                size += room;
                truncated = true;
                res.destroy();
                body.destroy();
                done();
                return;
              }
              chunks.push(c);
              size += c.length;
            });
            body.on("end", done);
            body.on("error", (e) => (truncated ? undefined : reject(e)));
          })().catch(reject);
        },
      );
      req.on("error", reject);
    })().catch(reject);
  });
}

/** GETs `url`, following redirects; failures are classified ToolFailures. */
export async function httpGet(start: URL, opts: GetOptions): Promise<GetResponse> {
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, opts.timeoutMs);
  const onAbort = () => ac.abort();
  opts.signal.addEventListener("abort", onAbort, { once: true });
  let url = start;
  try {
    for (let hop = 0; ; hop++) {
      if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw new ToolFailure(
          "invalid_arguments",
          `only http and https URLs can be fetched, not ${url.protocol}`,
        );
      }
      opts.checkUrl?.(url);
      const res = await once(url, opts, ac.signal);
      if (res.status >= 300 && res.status < 400 && res.headers.location) {
        if (hop >= opts.maxRedirects) {
          throw new ToolFailure("execution_failed", `more than ${opts.maxRedirects} redirects`);
        }
        url = new URL(res.headers.location, url);
        continue;
      }
      return res;
    }
  } catch (err) {
    throw failureOf(err, url, timedOut);
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener("abort", onAbort);
  }
}
