// serve(): everything a plugin process does to be launched by a go-plugin host —
// cookie check, version choice, socket, handshake line, and the health, controller,
// stdio and broker services next to the plugin's own category services. Started in a
// worker thread by the kernel's worker transport (workerData says so), the same call
// serves the same handlers over the thread's MessagePort instead: no socket, no handshake
// line, no broker; the kernel callbacks come over the port too.
import { chmodSync, chownSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import type { DescService } from "@bufbuild/protobuf";
import {
  type ChannelCredentials,
  ServerCredentials as SC,
  Server,
  type ServerCredentials,
} from "@grpc/grpc-js";
import {
  APP_PROTOCOL_VERSIONS,
  Broker,
  type ConnInfoStream,
  clearStaleSocket,
  controllerHandlers,
  cookieMatches,
  cookieMismatchMessage,
  ENV,
  formatHandshake,
  type HandlerContext,
  HealthState,
  implement,
  KERNEL_CALLBACK_BROKER_ID,
  KERNEL_TOKEN_ENV,
  type MagicCookie,
  negotiateVersion,
  newSocketPath,
  PLUGGABLEHARNESS_COOKIE,
  parseProtocolVersions,
  requireToken,
  SERVER_OPTIONS,
  type ServiceImpl,
  StdioChannel,
  StdioForwarder,
  unixTarget,
} from "@pluggableharness/goplugin";
import { PortEndpoint, workerBoot } from "@pluggableharness/port-rpc";
import type { CallContext } from "@pluggableharness/protocol/common";
import { GRPCBroker } from "@pluggableharness/protocol/goplugin";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { extractCallContext } from "./call-context.ts";
import { type KernelClient, KernelConnection, kernelClient } from "./kernel.ts";
import { createLogger, type Logger, setWorkerLogSink } from "./logger.ts";
import {
  categoryFromName,
  categoryOfService,
  type PackageMetadata,
  type Producer,
  producerFor,
  readPackageMetadata,
} from "./metadata.ts";

/** What an implementation receives with every call. */
export interface PluginContext extends HandlerContext {
  /** The CallContext the request carries (session, turn, working directory), if any. */
  callContext: CallContext | undefined;
  /** Kernel callbacks, attributed to this call's session. */
  kernel: KernelClient;
  log: Logger;
  /**
   * The W3C trace context of the kernel span this call belongs to (the tool call's
   * `execute_tool`, the model step's, ...), when the kernel exports telemetry; undefined
   * otherwise. Extract it with OpenTelemetry's propagator (`traceContext`) to make your own
   * spans its children (docs/plugin-authors.md).
   */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  /** The same as a carrier (`{ traceparent, tracestate }`, only those present). */
  readonly traceContext: Readonly<Record<string, string>>;
}

/** One string metadata value (the first), if the caller sent it. */
function metadataValue(base: HandlerContext, key: string): string | undefined {
  const v = base.metadata.get(key)[0];
  return typeof v === "string" && v !== "" ? v : undefined;
}

export interface ServiceRegistration {
  readonly service: DescService;
  readonly implementation: Record<string, unknown>;
}

/**
 * Pairs a service descriptor with its implementation: unary methods are async
 * functions, server-streaming methods async generators, keyed by localName.
 * Leave `describe` out to have it answered from package.json.
 */
export function service<S extends DescService>(
  desc: S,
  implementation: ServiceImpl<S, PluginContext>,
): ServiceRegistration {
  return { service: desc, implementation: implementation as Record<string, unknown> };
}

export interface ServeOptions {
  services: readonly ServiceRegistration[];
  /** package.json location (a file URL or path) or its parsed contents; feeds Describe. */
  packageJson: URL | string | PackageMetadata;
  /** Application protocol versions this plugin speaks; defaults to the SDK's. */
  protocolVersions?: readonly number[];
  cookie?: MagicCookie;
  /** Runs when the host asks the plugin to shut down, before the process exits. */
  onShutdown?: () => void | Promise<void>;
  /** For tests: the environment to read instead of process.env. */
  env?: NodeJS.ProcessEnv;
}

export interface ServedPlugin {
  readonly protocolVersion: number;
  /** The unix socket served on; "" in a worker thread served over its port. */
  readonly socketPath: string;
  /** How the host reaches this plugin. */
  readonly transport: "process" | "worker";
  readonly producer: (category: number) => Producer;
  /** Kernel callbacks without a call's attribution (pass sessionId explicitly). */
  readonly kernel: KernelClient;
  readonly log: Logger;
  /** Stops serving and exits the process. */
  stop(exitCode?: number): Promise<never>;
}

/** How long a stopping plugin lets in-flight answers drain before it force-closes. */
const SHUTDOWN_DRAIN_MS = 250;

let failSink: ((line: string) => void) | undefined;

function fail(message: string): never {
  try {
    const line = message.endsWith("\n") ? message : `${message}\n`;
    if (failSink) failSink(line.trimEnd());
    else writeSync(2, line);
  } finally {
    process.exit(1);
  }
}

function bind(server: Server, target: string, creds: ServerCredentials): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, creds, (err) => (err ? reject(err) : resolve())),
  );
}

function applySocketGroup(path: string, group: string | undefined, log: Logger): void {
  if (!group) return;
  if (!/^\d+$/.test(group)) {
    log.warn("PLUGIN_UNIX_SOCKET_GROUP must be a numeric gid here; ignoring", { group });
    return;
  }
  chownSync(path, -1, Number(group));
  chmodSync(path, 0o660);
}

/** Sends later process.stdout writes to the host through GRPCStdio. */
function redirectStdout(forwarder: StdioForwarder): void {
  const write = (chunk: unknown, encoding?: unknown, cb?: unknown): boolean => {
    const callback = typeof encoding === "function" ? encoding : cb;
    const data =
      typeof chunk === "string"
        ? Buffer.from(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8")
        : (chunk as Uint8Array);
    forwarder.push(StdioChannel.STDOUT, data);
    if (typeof callback === "function") queueMicrotask(() => (callback as () => void)());
    return true;
  };
  process.stdout.write = write as typeof process.stdout.write;
}

/** Exits when the host process is gone (the plugin was re-parented). */
function watchParent(): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
  }, 1_000);
  timer.unref();
}

/**
 * Starts serving. Returns once the handshake line is printed; the process then
 * lives until the host calls GRPCController.Shutdown (or kills it). A plugin run by
 * hand, without the host's cookie, prints an explanation and exits with status 1.
 */
export async function serve(options: ServeOptions): Promise<ServedPlugin> {
  const env = options.env ?? process.env;
  const cookie = options.cookie ?? PLUGGABLEHARNESS_COOKIE;
  const boot = workerBoot();
  // In a worker thread, fd 1 and 2 are the kernel's own: everything goes over the port.
  const endpoint: PortEndpoint | undefined = boot ? new PortEndpoint(boot.port) : undefined;
  const overPort = boot?.channel === "port";
  if (endpoint) {
    const sink = (line: string) => endpoint.notify("log", line);
    setWorkerLogSink(sink);
    failSink = sink;
  }
  if (!cookieMatches(env, cookie)) fail(cookieMismatchMessage(cookie));
  // Go plugins ignore SIGINT: a Ctrl-C in the host's terminal reaches the whole
  // process group, and the host decides when its plugins stop. (A thread gets no signals.)
  if (!boot) process.on("SIGINT", () => {});

  const meta = readPackageMetadata(options.packageJson);
  const log = createLogger(meta.pluggableharness?.name ?? meta.name.replace(/^@[^/]+\//, ""));
  const protocolVersion = negotiateVersion(
    parseProtocolVersions(env[ENV.protocolVersions]),
    options.protocolVersions ?? APP_PROTOCOL_VERSIONS,
  );

  // The launch token: kept here, gone from the environment, so nothing this plugin starts
  // inherits it.
  const kernelToken = env[KERNEL_TOKEN_ENV] || undefined;
  delete process.env[KERNEL_TOKEN_ENV];

  let serverCreds: ServerCredentials = SC.createInsecure();
  let certField = "";
  let clientTls: (() => Promise<ChannelCredentials>) | undefined;
  const hostCertPem = env[ENV.clientCert];
  if (hostCertPem) {
    const mtls = await import("@pluggableharness/goplugin/mtls");
    let own: import("@pluggableharness/goplugin/mtls").Certificate;
    try {
      own = mtls.generateCertificate();
      serverCreds = mtls.serverTlsCredentials(own, hostCertPem);
    } catch (err) {
      fail(`cannot set up AutoMTLS with the host's certificate: ${(err as Error).message}`);
    }
    certField = mtls.certToHandshakeField(own.certDer);
    clientTls = async () => mtls.channelTlsCredentials(own, hostCertPem);
  }

  let socketPath = "";
  if (!overPort) {
    try {
      socketPath = newSocketPath(env[ENV.unixSocketDir] || tmpdir());
      await clearStaleSocket(socketPath);
    } catch (err) {
      fail(`plugin cannot create its socket: ${(err as Error).message}`);
    }
  }

  const broker = new Broker({ retainIds: [KERNEL_CALLBACK_BROKER_ID] });
  const kernelConn = overPort
    ? new KernelConnection(undefined, undefined, endpoint)
    : new KernelConnection(broker, clientTls, undefined, kernelToken);
  const kernel = kernelClient(kernelConn);
  const health = new HealthState();
  const stdio = new StdioForwarder();
  // Without TLS, a host that gave a launch token sends it on every call: nobody else gets in.
  const server: Pick<Server, "addService" | "tryShutdown" | "forceShutdown"> =
    overPort && endpoint
      ? endpoint.server
      : new Server({
          ...SERVER_OPTIONS,
          ...(!clientTls && kernelToken
            ? {
                interceptors: [
                  requireToken(kernelToken, "only the host that launched this plugin may call it"),
                ],
              }
            : {}),
        });

  const categories = options.services.map((s) => categoryOfService(s.service));
  const fallbackCategory =
    categoryFromName(meta.pluggableharness?.category) || categories.find((c) => c !== 0) || 0;
  const producer = (category: number): Producer =>
    producerFor(meta, category || fallbackCategory, protocolVersion);

  for (const reg of options.services) {
    const impl: Record<string, unknown> = { ...reg.implementation };
    const category = categoryOfService(reg.service);
    if (impl["describe"] === undefined && reg.service.method["describe"]) {
      impl["describe"] = () => ({ producer: producer(category) });
    }
    const handlers = implement(reg.service, impl as ServiceImpl<DescService, PluginContext>, {
      context: (base, request): PluginContext => {
        const callContext = extractCallContext(base.method.input, request);
        return {
          // Read through, not copied: the signal is made only for handlers that use it.
          get signal() {
            return base.signal;
          },
          metadata: base.metadata,
          method: base.method,
          callContext,
          kernel: kernel.withCallContext(callContext),
          log,
          get traceparent() {
            return metadataValue(base, "traceparent");
          },
          get tracestate() {
            return metadataValue(base, "tracestate");
          },
          get traceContext() {
            const out: Record<string, string> = {};
            for (const key of ["traceparent", "tracestate"]) {
              const v = metadataValue(base, key);
              if (v !== undefined) out[key] = v;
            }
            return out;
          },
        };
      },
      onError: (err, method) =>
        log.error("handler failed", { method: `${reg.service.typeName}/${method.name}`, error: String(err) }),
    });
    server.addService(serviceDefinition(reg.service), handlers);
  }

  let stopping: Promise<never> | undefined;
  const stop = (exitCode = 0): Promise<never> => {
    stopping ??= (async () => {
      health.shutdown();
      try {
        await options.onShutdown?.();
      } catch (err) {
        log.error("onShutdown failed", { error: String(err) });
      }
      broker.close();
      stdio.close();
      kernelConn.close();
      setWorkerLogSink(undefined);
      // Let the Shutdown answer reach the host, then stop hard like go-plugin does:
      // streams the host keeps open must not hold the process.
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, SHUTDOWN_DRAIN_MS);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      process.exit(exitCode);
    })();
    return stopping;
  };

  server.addService(
    serviceDefinition((await import("@pluggableharness/protocol/health")).Health),
    health.handlers(),
  );
  server.addService(
    serviceDefinition((await import("@pluggableharness/protocol/goplugin")).GRPCController),
    controllerHandlers(() => void stop(0)),
  );
  if (overPort && endpoint) {
    // Worker stdout reaches the kernel by itself; the kernel's callbacks come over the port.
    endpoint.notify("ready", { protocolVersion });
    log.debug("plugin serving", { transport: "worker", protocol_version: protocolVersion });
    return { protocolVersion, socketPath, transport: "worker", producer, kernel, log, stop };
  }

  const grpcServer = server as Server;
  grpcServer.addService(
    serviceDefinition((await import("@pluggableharness/protocol/goplugin")).GRPCStdio),
    stdio.handlers(),
  );
  grpcServer.addService(serviceDefinition(GRPCBroker), {
    startStream: (call: ConnInfoStream & { emit(e: "error", v: unknown): void }) => {
      if (broker.attached) {
        call.emit("error", { code: 6, details: "broker stream already open" });
        return;
      }
      broker.attach(call);
    },
  });

  try {
    await bind(grpcServer, unixTarget(socketPath), serverCreds);
    applySocketGroup(socketPath, env[ENV.unixSocketGroup], log);
  } catch (err) {
    fail(`plugin cannot listen on ${socketPath}: ${(err as Error).message}`);
  }

  const handshake = formatHandshake({
    appVersion: protocolVersion,
    network: "unix",
    address: socketPath,
    serverCert: certField,
  });
  if (endpoint) {
    // gRPC served from a worker thread (the benchmark's channel comparison): the handshake
    // travels over the port, since fd 1 is the kernel's.
    endpoint.notify("handshake", handshake);
  } else {
    writeSync(1, `${handshake}\n`);
    redirectStdout(stdio);
    watchParent();
  }
  log.debug("plugin serving", { socket: socketPath, protocol_version: protocolVersion });

  return { protocolVersion, socketPath, transport: boot ? "worker" : "process", producer, kernel, log, stop };
}
