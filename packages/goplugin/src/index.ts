// go-plugin wire pieces shared by the host (packages/runtime) and the plugin SDK
// (packages/plugin-sdk). AutoMTLS lives at "@pluggableharness/goplugin/mtls" so that
// plugins load it only when the host asks for it.
export {
  Broker,
  BrokerClosedError,
  type BrokerOptions,
  BrokerTimeoutError,
  type ConnInfoStream,
} from "./broker.ts";
export {
  type CallChannel,
  type CallOptions,
  createClient,
  type Lease,
  type ServiceClient,
  type StreamingCall,
  type Transport,
  toRpcError,
} from "./client.ts";
export {
  APP_PROTOCOL_VERSIONS,
  BROKER_TIMEOUT_MS,
  CHANNEL_OPTIONS,
  CORE_PROTOCOL_VERSION,
  ENV,
  HEALTH_SERVICE_NAME,
  KERNEL_CALLBACK_BROKER_ID,
  KERNEL_TOKEN_ENV,
  type MagicCookie,
  PLUGGABLEHARNESS_COOKIE,
  SERVER_OPTIONS,
} from "./constants.ts";
export { controllerHandlers } from "./controller.ts";
export {
  HandshakeError,
  isGrpcError,
  quote,
  RpcError,
  SocketPathTooLongError,
  VersionMismatchError,
} from "./errors.ts";
export { formatHandshake, type Handshake, type HandshakeNetwork, parseHandshake } from "./handshake.ts";
export {
  formatHclogLine,
  hclogTimestamp,
  LEVELS,
  type Level,
  LineSplitter,
  type LogLine,
  parseLogLine,
} from "./hclog.ts";
export { HealthState, ServingStatus } from "./health.ts";
export {
  cookieMatches,
  cookieMismatchMessage,
  formatProtocolVersions,
  negotiateVersion,
  parseProtocolVersions,
} from "./negotiate.ts";
export {
  type ContextFactory,
  type HandlerContext,
  type ImplementOptions,
  implement,
  type ServiceImpl,
  StatusError,
} from "./server.ts";
export {
  assertSocketPath,
  clearStaleSocket,
  maxSocketPathBytes,
  newSocketPath,
  SOCKET_SUFFIX_LENGTH,
  unixTarget,
} from "./socket.ts";
export { STDIO_CHUNK_BYTES, StdioChannel, StdioForwarder, StdioLines } from "./stdio.ts";
export { bearerOf, newToken, requireToken, sendToken, tokenMatches } from "./token.ts";
