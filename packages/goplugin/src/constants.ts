// Names and numbers fixed by go-plugin's wire protocol, plus the few PluggableHarness
// constants both the host and the plugin SDK must agree on.

/** go-plugin's core protocol version: always the first handshake field. */
export const CORE_PROTOCOL_VERSION = 1;

/** Environment variables go-plugin hosts set for their plugins. */
export const ENV = {
  protocolVersions: "PLUGIN_PROTOCOL_VERSIONS",
  minPort: "PLUGIN_MIN_PORT",
  maxPort: "PLUGIN_MAX_PORT",
  clientCert: "PLUGIN_CLIENT_CERT",
  multiplexGrpc: "PLUGIN_MULTIPLEX_GRPC",
  unixSocketDir: "PLUGIN_UNIX_SOCKET_DIR",
  unixSocketGroup: "PLUGIN_UNIX_SOCKET_GROUP",
} as const;

/**
 * The per-launch token a PluggableHarness host gives each plugin process. A plugin whose
 * connection is not AutoMTLS (it returned no certificate, or the host turned it off) sends
 * it as `authorization: Bearer <token>` on its kernel callbacks, which are refused without
 * it; the host sends it on its own calls then too, and the SDK checks it. Not go-plugin's:
 * a Go plugin does AutoMTLS and never needs it.
 */
export const KERNEL_TOKEN_ENV = "PLUGGABLEHARNESS_KERNEL_TOKEN";

export interface MagicCookie {
  readonly key: string;
  readonly value: string;
}

/**
 * The cookie every PluggableHarness plugin expects. It is a usability check (a plugin
 * run by hand explains itself instead of hanging), not a secret.
 */
export const PLUGGABLEHARNESS_COOKIE: MagicCookie = {
  key: "PLUGGABLEHARNESS_PLUGIN",
  value: "3b6f1d243aa9a81e8ca6d179bcff3353038083364dc4a530",
};

/** The application protocol versions this build of PluggableHarness speaks. */
export const APP_PROTOCOL_VERSIONS: readonly number[] = [1];

/**
 * Broker ID on which the kernel serves KernelCallbackService to every plugin.
 * go-plugin allocates broker IDs from a per-side counter starting at 1, so a value
 * this far above any realistic counter cannot collide; it stays below 2^31 so hosts
 * in languages with signed 32-bit integers read it unchanged. ("PH" is 0x5048.)
 */
export const KERNEL_CALLBACK_BROKER_ID = 0x5048_0001;

/** go-plugin waits this long for a broker ConnInfo, a knock or a dial. */
export const BROKER_TIMEOUT_MS = 5_000;

/** gRPC health service name go-plugin hosts probe. */
export const HEALTH_SERVICE_NAME = "plugin";

/**
 * Channel options for every host-to-plugin and plugin-to-host gRPC connection:
 * unlimited message sizes like go-plugin's Go host, and no keepalive pings, because
 * grpc-go servers answer pings more often than every 5 minutes with GOAWAY.
 */
export const CHANNEL_OPTIONS = {
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
  "grpc.enable_retries": 0,
} as const;

/** Server options: accept large messages (grpc-js defaults to 4 MiB). */
export const SERVER_OPTIONS = {
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
} as const;
