// Dialling a served kernel: a gRPC channel to its unix socket (or loopback TCP with the
// token as call metadata), wrapped by the TUI's Attach adapter as a FrontendConnection.
import { Client, credentials, InterceptingCall, type Interceptor, type Metadata } from "@grpc/grpc-js";
import type { ServerEvent } from "@pluggableharness/protocol/frontend";
import { attachOverGrpc, type FrontendConnection } from "@pluggableharness/provider-tui";
import type { ServerRecord } from "./endpoint.ts";
import { GRPC_OPTIONS } from "./server.ts";

export interface Dialled {
  readonly connection: FrontendConnection;
  close(): void;
}

export type Target =
  | { readonly kind: "unix"; readonly socket: string }
  | { readonly kind: "tcp"; readonly host: string; readonly port: number; readonly token: string };

export function targetOf(record: ServerRecord): Target {
  return { kind: "unix", socket: record.socket };
}

/** One Attach stream to the server at `target`. */
export function dial(target: Target): Dialled {
  const address =
    target.kind === "unix"
      ? `unix://${target.socket}`
      : target.host.includes(":")
        ? `[${target.host}]:${target.port}`
        : `${target.host}:${target.port}`;
  const interceptors: Interceptor[] =
    target.kind === "tcp"
      ? [
          (options, next) =>
            new InterceptingCall(next(options), {
              start(metadata: Metadata, listener, nextStart) {
                metadata.set("authorization", `Bearer ${target.token}`);
                nextStart(metadata, listener);
              },
            }),
        ]
      : [];
  const client = new Client(address, credentials.createInsecure(), { ...GRPC_OPTIONS, interceptors });
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
