// The served kernel's endpoint: FrontendService.Attach (the frontend protocol, the same
// adapter a frontend plugin dials on the go-plugin broker) on a unix socket only this
// user can open, and optionally on loopback TCP. Every call on either must carry the
// server's random token (`authorization: Bearer <token>`, compared in constant time),
// which only the server's 0600 record in the private runtime directory holds: a process
// that can open the socket but not read the record (a sandboxed command, another user's
// process on a shared socket directory) is refused UNAUTHENTICATED before anything flows.
// Nothing else is served: a frontend can do exactly what the frontend protocol allows.
import { chmodSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { attachHandler, type FrontendPort, type KernelLogger } from "@pluggableharness/kernel";
import { FrontendService } from "@pluggableharness/protocol/frontend";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { newToken, requireToken } from "@pluggableharness/runtime";

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
  /** What every client must present, on the socket and on TCP. */
  readonly token: string;
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
    const token = newToken();
    const serverOptions = { ...GRPC_OPTIONS, interceptors: [requireToken(token)] };
    const unix = new Server(serverOptions);
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
      const server = new Server(serverOptions);
      server.addService(serviceDefinition(FrontendService), {
        attach: attachHandler(port, "serve:tcp", options.log.child("serve")),
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
      token,
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
