// The frontend side of the Attach stream without a transport (the same shape as the
// kernel's FrontendConnection and the TUI's): the CLI hands in kernel.frontends
// connections, the plugin executable its gRPC Attach streams.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ClientEventSchema, ServerEvent } from "@pluggableharness/protocol/frontend";

export type ClientEventInit = MessageInitShape<typeof ClientEventSchema>;

export interface FrontendConnection {
  readonly events: AsyncIterable<ServerEvent>;
  send(event: ClientEventInit): void;
  close(): void;
}
