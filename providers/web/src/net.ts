// One HTTP GET with hard limits: total time, body size (after decompression), redirect
// count, an optional per-hop URL check, and a DNS guard that refuses private, loopback
// and link-local addresses unless allowed (so a fetched URL cannot reach the machine's
// own network services or cloud metadata endpoints).
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
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
}

export interface GetResponse {
  url: string;
  status: number;
  headers: IncomingMessage["headers"];
  body: Buffer;
  /** The body was cut at maxBytes. */
  truncated: boolean;
}

function v4Private(ip: string): boolean {
  const [a, b] = ip.split(".").map(Number) as [number, number];
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a >= 224
  );
}

/** Loopback, private, link-local, carrier-grade NAT, multicast and unspecified addresses. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 4) return v4Private(ip);
  const v6 = ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v6);
  if (mapped) return v4Private(mapped[1]!);
  return (
    v6 === "::" ||
    v6 === "::1" ||
    v6.startsWith("fc") ||
    v6.startsWith("fd") ||
    v6.startsWith("fe8") ||
    v6.startsWith("fe9") ||
    v6.startsWith("fea") ||
    v6.startsWith("feb") ||
    v6.startsWith("ff")
  );
}

class BlockedAddressError extends Error {
  readonly code = "EBLOCKED";
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

function guardedLookup(hostname: string, options: { all?: boolean }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const list = addresses as LookupAddress[];
    if (list.some((a) => isPrivateAddress(a.address))) {
      return callback(new BlockedAddressError(`${hostname} resolves to a private network address`), []);
    }
    if (options.all) return callback(null, list);
    callback(null, list[0]!.address, list[0]!.family);
  });
}

function failureOf(err: unknown, url: URL, timedOut: boolean): ToolFailure {
  if (err instanceof ToolFailure) return err;
  if (timedOut) return new ToolFailure("timeout", `no complete answer from ${url.host} in time`);
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "EBLOCKED") {
    return new ToolFailure(
      "permission_denied",
      `${url.hostname} is on a private network; fetching it is not allowed`,
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
      if (!opts.allowPrivateNetwork && isIP(url.hostname.replace(/^\[|\]$/g, "")) !== 0) {
        if (isPrivateAddress(url.hostname.replace(/^\[|\]$/g, ""))) {
          reject(new BlockedAddressError("private address"));
          return;
        }
      }
      const req = mod.get(
        url,
        {
          headers: opts.headers,
          signal,
          ...(opts.allowPrivateNetwork ? {} : { lookup: guardedLookup as never }),
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
            body.on("data", (c: Buffer) => {
              if (truncated) return;
              const room = opts.maxBytes - size;
              if (c.length >= room) {
                chunks.push(c.subarray(0, room));
                size += room;
                truncated = true;
                res.destroy();
                body.destroy();
                resolve({
                  url: url.href,
                  status,
                  headers: res.headers,
                  body: Buffer.concat(chunks),
                  truncated,
                });
                return;
              }
              chunks.push(c);
              size += c.length;
            });
            body.on("end", () =>
              resolve({
                url: url.href,
                status,
                headers: res.headers,
                body: Buffer.concat(chunks),
                truncated,
              }),
            );
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
