// The served kernel's endpoint: FrontendService.Attach (the frontend protocol, the same
// adapter a frontend plugin dials on the go-plugin broker) on a unix socket only this
// user can open, and optionally on loopback TCP, where every call must carry the
// server's random token (`authorization: Bearer <token>`; compared in constant time).
// Nothing else is served: a frontend can do exactly what the frontend protocol allows.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, rmSync } from "node:fs";
import { connect } from "node:net";
import {
  type handleBidiStreamingCall,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  status,
} from "@grpc/grpc-js";
import { attachHandler, type FrontendPort, type KernelLogger } from "@pluggableharness/kernel";
import { type ClientEvent, FrontendService, type ServerEvent } from "@pluggableharness/protocol/frontend";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";

/** Large renders (a whole file's diff) must fit in one message. */
export const GRPC_OPTIONS = {
  "grpc.max_receive_message_length": 64 * 1024 * 1024,
  "grpc.max_send_message_length": 64 * 1024 * 1024,
};

export interface EndpointOptions {
  readonly socket: string;
  /** Listen on loopback TCP too (port 0: any free port). */
  readonly tcp?: { readonly host: string; readonly port: number };
  readonly log: KernelLogger;
}

export interface Endpoint {
  readonly socket: string;
  readonly tcp?: { readonly host: string; readonly port: number; readonly token: string };
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/** Refuses any TCP host that is not loopback: the endpoint is for this machine's user only. */
export function loopbackHost(host: string): string {
  if (!LOOPBACK.has(host)) {
    throw new Error(`--tcp listens on loopback only (127.0.0.1, ::1 or localhost), not "${host}"`);
  }
  return host === "localhost" ? "127.0.0.1" : host;
}

export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

export function tokenMatches(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function bind(server: Server, target: string): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );
}

/** True when something answers on the socket (another live server owns it). */
function socketAnswers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

/** Wraps Attach so a call without the right token is refused before any event flows. */
function guarded(
  handler: handleBidiStreamingCall<ClientEvent, ServerEvent>,
  token: string,
): handleBidiStreamingCall<ClientEvent, ServerEvent> {
  return (call: ServerDuplexStream<ClientEvent, ServerEvent>) => {
    const header = call.metadata.get("authorization")[0];
    const given = typeof header === "string" && header.startsWith("Bearer ") ? header.slice(7) : "";
    if (!tokenMatches(given, token)) {
      call.emit("error", { code: status.UNAUTHENTICATED, details: "a valid token is required" });
      return;
    }
    handler(call);
  };
}

export async function startEndpoint(port: FrontendPort, options: EndpointOptions): Promise<Endpoint> {
  const servers: Server[] = [];
  const closeAll = () =>
    Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.tryShutdown(() => resolve());
            // Open Attach streams would hold a graceful shutdown forever.
            setTimeout(() => {
              s.forceShutdown();
              resolve();
            }, 1000).unref();
          }),
      ),
    ).then(() => {});
  try {
    if (await socketAnswers(options.socket)) {
      throw new Error(`another server is already listening on ${options.socket}`);
    }
    rmSync(options.socket, { force: true });
    const unix = new Server(GRPC_OPTIONS);
    unix.addService(serviceDefinition(FrontendService), {
      attach: attachHandler(port, "serve:unix", options.log.child("serve")),
    });
    servers.push(unix);
    // The directory is 0700 already; the socket itself is made 0600 before anyone is told of it.
    await bind(unix, `unix://${options.socket}`);
    chmodSync(options.socket, 0o600);
    let tcp: Endpoint["tcp"];
    if (options.tcp) {
      const host = loopbackHost(options.tcp.host);
      const token = newToken();
      const server = new Server(GRPC_OPTIONS);
      server.addService(serviceDefinition(FrontendService), {
        attach: guarded(attachHandler(port, "serve:tcp", options.log.child("serve")), token),
      });
      servers.push(server);
      const bound = await bind(
        server,
        host.includes(":") ? `[${host}]:${options.tcp.port}` : `${host}:${options.tcp.port}`,
      );
      tcp = { host, port: bound, token };
    }
    return {
      socket: options.socket,
      ...(tcp ? { tcp } : {}),
      close: async () => {
        await closeAll();
        rmSync(options.socket, { force: true });
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
