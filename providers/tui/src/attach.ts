// The plugin's side of FrontendService.Attach: the kernel serves the stream on the
// go-plugin broker connection (next to its callbacks) and this plugin dials it.
// The bidirectional gRPC call is wrapped in the same FrontendConnection shape the
// CLI uses in-process, so the UI code never knows which transport it runs on.
import { create, type MessageShape } from "@bufbuild/protobuf";
import type { Client, ClientDuplexStream } from "@grpc/grpc-js";
import { ClientEventSchema, FrontendService, type ServerEvent } from "@pluggableharness/protocol/frontend";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import type { ClientEventInit, FrontendConnection } from "./connection.ts";

type ClientEventMsg = MessageShape<typeof ClientEventSchema>;

/** Opens Attach on `client` (a channel to the kernel) as a FrontendConnection. */
export function attachOverGrpc(client: Client): FrontendConnection {
  const def = serviceDefinition(FrontendService)["attach"]!;
  const call = client.makeBidiStreamRequest(
    def.path,
    def.requestSerialize as (v: ClientEventMsg) => Buffer,
    def.responseDeserialize as (b: Buffer) => ServerEvent,
  ) as ClientDuplexStream<ClientEventMsg, ServerEvent>;
  let closed = false;
  const events: AsyncIterable<ServerEvent> = {
    async *[Symbol.asyncIterator]() {
      try {
        for await (const ev of call as AsyncIterable<ServerEvent>) yield ev;
      } catch (err) {
        // Our own close() cancels the call; anything else is a real failure.
        if (!closed) throw err;
      }
    },
  };
  return {
    events,
    send(event: ClientEventInit) {
      if (!closed) call.write(create(ClientEventSchema, event));
    },
    close() {
      if (closed) return;
      closed = true;
      call.end();
      call.cancel();
    },
  };
}
