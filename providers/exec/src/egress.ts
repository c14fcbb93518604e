// Network for sandboxed commands limited to an allowlist of hosts (exec block
// `allowed_hosts`). The sandbox has no network of its own; inside it a small forwarder
// (egress-forwarder.mjs) listens on 127.0.0.1 and hands every connection to this
// proxy over a Unix socket in a directory bound into the sandbox. The proxy speaks
// HTTP proxy (CONNECT for TLS, absolute-form requests for plain HTTP), lets through only
// hosts on the list (a listed domain includes its subdomains) and refuses everything
// else with 403. Commands find it through HTTP_PROXY/HTTPS_PROXY/ALL_PROXY.
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * The forwarder, run inside the sandbox as `node --input-type=module -e FORWARDER
 * <socket> <port> <shell> -c <command>` (a string, so the bundled plugin carries it):
 * listens on 127.0.0.1:<port>, passes each connection to the proxy's Unix socket, runs
 * the command with the proxy variables set and exits with its status.
 */
export const FORWARDER = `import { spawn } from "node:child_process";
import { connect, createServer } from "node:net";

const [socket, portText, ...command] = process.argv.slice(1);
const port = Number(portText);
const server = createServer((client) => {
  const upstream = connect(socket);
  client.pipe(upstream);
  upstream.pipe(client);
  const drop = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", drop);
  upstream.on("error", drop);
});
server.listen(port, "127.0.0.1", () => {
  const proxy = \`http://127.0.0.1:\${port}\`;
  const env = { ...process.env };
  for (const k of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"]) env[k] = proxy;
  env.NO_PROXY = env.no_proxy = "";
  env.NODE_USE_ENV_PROXY = "1";
  const child = spawn(command[0], command.slice(1), { stdio: "inherit", env });
  const forward = (signal) => child.kill(signal);
  process.on("SIGTERM", forward);
  process.on("SIGINT", forward);
  child.on("exit", (code, signal) => {
    server.close();
    process.exit(code ?? 128 + ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }[signal] ?? 1));
  });
});
`;

export function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/\.$/, "")
    .replace(/^\[|\]$/g, "");
  return allowed.some((a) => {
    const d = a.toLowerCase().replace(/^\*\./, "").replace(/\.$/, "");
    return h === d || h.endsWith(`.${d}`);
  });
}

export interface Egress {
  /** Directory holding the proxy's socket (bound into the sandbox). */
  readonly dir: string;
  readonly socket: string;
  /** Hosts refused so far (for the command's notice). */
  readonly refused: Set<string>;
  close(): void;
}

function refuse(client: Socket, host: string): void {
  client.end(
    `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${host} is not in the exec provider's allowed_hosts\n`,
  );
}

/** Starts the allowlisting proxy for one command. */
export async function startEgress(allowed: readonly string[]): Promise<Egress> {
  const dir = mkdtempSync(join(tmpdir(), "ph-egress-"));
  const socket = join(dir, "proxy.sock");
  const refused = new Set<string>();
  const server: Server = createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > 64 * 1024) client.destroy();
        return;
      }
      client.off("data", onData);
      const [requestLine = ""] = head.subarray(0, end).toString("latin1").split("\r\n");
      const [method = "", target = ""] = requestLine.split(" ");
      let host: string;
      let port: number;
      if (method.toUpperCase() === "CONNECT") {
        const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(target);
        if (!m) return client.destroy();
        host = m[1]!;
        port = Number(m[2]);
      } else {
        let url: URL;
        try {
          url = new URL(target);
        } catch {
          return client.destroy();
        }
        if (url.protocol !== "http:") return refuse(client, url.host);
        host = url.hostname;
        port = Number(url.port || 80);
      }
      if (!hostAllowed(host, allowed)) {
        refused.add(host);
        return refuse(client, host);
      }
      const upstream = connect({ host: host.replace(/^\[|\]$/g, ""), port });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      upstream.once("connect", () => {
        if (method.toUpperCase() === "CONNECT") {
          client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
          const rest = head.subarray(end + 4);
          if (rest.length > 0) upstream.write(rest);
        } else upstream.write(head);
        client.pipe(upstream);
        upstream.pipe(client);
      });
    };
    client.on("data", onData);
    client.on("error", () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socket, () => resolve());
  });
  return {
    dir,
    socket,
    refused,
    close() {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
