// Dialling a served kernel: a gRPC channel to its unix socket or loopback TCP, the server's
// token as call metadata either way, wrapped by the TUI's Attach adapter as a
// FrontendConnection.
import { Client, credentials } from "@grpc/grpc-js";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { attachOverGrpc, type FrontendConnection } from "@pluggableharness/provider-tui";
import { sendToken } from "@pluggableharness/runtime";
import type { ServerRecord } from "./endpoint.ts";
import { GRPC_OPTIONS } from "./server.ts";

export interface Dialled {
  readonly connection: FrontendConnection;
  close(): void;
}

export type Target =
  | { readonly kind: "unix"; readonly socket: string; readonly token: string }
  | { readonly kind: "tcp"; readonly host: string; readonly port: number; readonly token: string };

/** The server's socket, with the token from its private record. */
export function targetOf(record: ServerRecord): Target {
  return { kind: "unix", socket: record.socket, token: record.token };
}

/** One Attach stream to the server at `target`. */
export function dial(target: Target): Dialled {
  const address =
    target.kind === "unix"
      ? `unix://${target.socket}`
      : target.host.includes(":")
        ? `[${target.host}]:${target.port}`
        : `${target.host}:${target.port}`;
  const client = new Client(address, credentials.createInsecure(), {
    ...GRPC_OPTIONS,
    interceptors: [sendToken(target.token)],
  });
  const connection = attachOverGrpc(client);
  return {
    connection,
    close() {
      connection.close();
      client.close();
    },
  };
}

/** Sends one control event and reads events until `done` says the answer is complete. */
export async function request(
  events: AsyncIterator<ServerEvent>,
  done: (e: ServerEvent) => boolean,
): Promise<ServerEvent[]> {
  const seen: ServerEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) throw new Error("the server closed the connection");
    seen.push(next.value);
    if (next.value.event.case === "error") {
      throw new Error(next.value.event.value.error?.message ?? "the server refused the request");
    }
    if (done(next.value)) return seen;
  }
}
