// The frontend side of the Attach stream, without a transport: ServerEvents in,
// ClientEvents out. Structurally the same as the kernel's FrontendConnection, so
// the CLI hands its in-process connection straight in, and the plugin wraps its
// gRPC stream in the same shape (attach.ts).
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ClientEventSchema, ServerEvent } from "@pluggableharness/protocol/frontend";

export type ClientEventInit = MessageInitShape<typeof ClientEventSchema>;

export interface FrontendConnection {
  readonly events: AsyncIterable<ServerEvent>;
  send(event: ClientEventInit): void;
  close(): void;
}
