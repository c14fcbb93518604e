// The one seam between the agent loop and every frontend. A frontend — the headless
// printer inside the CLI process, the terminal UI plugin attached over gRPC, a test —
// opens a connection, sends ClientEvents and reads ServerEvents, exactly the
// frontend protocol's Attach stream without the transport. The kernel implements
// FrontendPort; the gRPC Attach endpoint is a thin adapter over connect().
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ClientEventSchema, ServerEvent } from "@pluggableharness/protocol/frontend";

export type ClientEventInit = MessageInitShape<typeof ClientEventSchema>;

/** One frontend's connection: one ordered stream each way, sessions multiplexed by id. */
export interface FrontendConnection {
  /**
   * Every ServerEvent for the sessions this connection subscribed to (via create,
   * attach or resume), plus answers to its own control events, in order. Ends when
   * the connection or the kernel closes.
   */
  readonly events: AsyncIterable<ServerEvent>;
  /** Delivers a ClientEvent; processed per session in arrival order. */
  send(event: ClientEventInit): void;
  /** Unsubscribes everything and ends `events`. Running sessions are unaffected. */
  close(): void;
}

export interface ConnectOptions {
  /** Shown in logs, e.g. "headless" or "tui". */
  readonly name?: string;
  /**
   * True when a human behind this connection can answer permission and interactive
   * requests. With no such connection subscribed to a session, an `ask` resolves by
   * the operator's headless setting and otherwise denies; it never waits.
   */
  readonly interactive?: boolean;
  /**
   * How this connection wants persisted events rendered (live and in a backfill):
   * "producer" (default) by the build that produced them, through its Render RPC;
   * "generic" by the kernel's own renderer only (no plugin is asked); "none" not at all
   * (it reads what it needs elsewhere, e.g. a headless run that prints only the answer).
   */
  readonly renders?: RenderPreference;
  /**
   * True to also receive the renders a compact transcript leaves out: each context
   * provider's contribution before every model call (`agent run --verbose`).
   */
  readonly verbose?: boolean;
}

export type RenderPreference = "producer" | "generic" | "none";

export interface FrontendPort {
  connect(options?: ConnectOptions): FrontendConnection;
}
