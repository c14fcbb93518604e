// The plugin's client for KernelCallbackService (Emit, Log, CountTokens, RunSession),
// dialled through the go-plugin broker at the fixed kernel callback ID. The generated
// kernel contract is imported on first use only, keeping plugin start-up lean.
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { type ChannelCredentials, Client, credentials } from "@grpc/grpc-js";
import {
  type Broker,
  type CallOptions,
  CHANNEL_OPTIONS,
  createClient,
  KERNEL_CALLBACK_BROKER_ID,
  type Level,
  type ServiceClient,
  sendToken,
  unixTarget,
} from "@pluggableharness/goplugin";
import type { PortEndpoint } from "@pluggableharness/port-rpc";
import { type CallContext, CallContextSchema } from "@pluggableharness/protocol/common";
import type {
  CountTokensRequestSchema,
  CountTokensResponse,
  EmitResponse,
  EventKind,
  KernelCallbackService,
  RunSessionRequestSchema,
  RunSessionResponse,
} from "@pluggableharness/protocol/kernel";
import type { LogLevel } from "@pluggableharness/protocol/log";

type KernelService = ServiceClient<typeof KernelCallbackService>;

export interface EmitInput {
  kind: EventKind;
  /** The event.v1 message for `kind`, serialized; opaque to the kernel. */
  payload: Uint8Array;
  /** Defaults to "1" (event.v1). */
  schemaVersion?: string;
  /** Defaults to the session of the call being served. */
  sessionId?: string;
}

export interface LogOptions {
  logger?: string;
  /** Defaults to the session of the call being served, if any. */
  sessionId?: string;
  time?: Date;
}

export interface KernelClient {
  /** Persists an event in the session's log; the kernel assigns id and sequence. */
  emit(input: EmitInput, options?: CallOptions): Promise<EmitResponse>;
  /** Forwards a log entry to the kernel's log. */
  log(level: Level, message: string, fields?: JsonObject, options?: LogOptions & CallOptions): Promise<void>;
  countTokens(
    request: MessageInitShape<typeof CountTokensRequestSchema>,
    options?: CallOptions,
  ): Promise<CountTokensResponse>;
  /** Runs a child session; parent_session_id defaults to the current session. */
  runSession(
    request: MessageInitShape<typeof RunSessionRequestSchema>,
    options?: CallOptions,
  ): Promise<RunSessionResponse>;
  /** The full typed client, for anything the helpers above do not cover. */
  service(): Promise<KernelService>;
  /**
   * The raw grpc-js client on the kernel's callback connection, for other services
   * the kernel serves there (e.g. FrontendService.Attach, a bidirectional stream the
   * typed clients do not wrap).
   */
  channel(): Promise<Client>;
  /** The same client attributed to another call. */
  withCallContext(callContext: CallContext | undefined): KernelClient;
}

/**
 * The kernel client attributed to the session, turn and working directory a request names
 * (a Contribute or Recall): its calls (CountTokens, Emit) are charged and logged to them.
 */
export function kernelForRequest(
  kernel: KernelClient,
  req: { readonly sessionId: string; readonly turnId: string; readonly workingDirectory: string },
): KernelClient {
  return kernel.withCallContext(
    create(CallContextSchema, {
      sessionId: req.sessionId,
      turnId: req.turnId,
      workingDirectory: req.workingDirectory,
    }),
  );
}

export class NoSessionError extends Error {
  readonly code = "no_session";
  constructor(what: string) {
    super(
      `${what} needs a session id: call it while serving a request that carries a CallContext, or pass sessionId`,
    );
    this.name = "NoSessionError";
  }
}

/**
 * One lazily dialled connection per plugin process, shared by every KernelClient. A plugin
 * in a worker thread calls the kernel over its MessagePort instead of the broker; the raw
 * grpc-js channel (for bidirectional services such as FrontendService.Attach) is then a
 * socket the kernel opens for it on request.
 */
export class KernelConnection {
  private readonly broker: Broker | undefined;
  private readonly tls: (() => Promise<ChannelCredentials>) | undefined;
  private readonly endpoint: PortEndpoint | undefined;
  private readonly token: string | undefined;
  private pending: Promise<KernelService> | undefined;
  private pendingChannel: Promise<Client> | undefined;
  private grpcClient: Client | undefined;

  /**
   * `token`: the launch token the host gave, sent on the callback connection when it is not
   * TLS (the kernel refuses a plaintext callback without it).
   */
  constructor(
    broker: Broker | undefined,
    tls?: () => Promise<ChannelCredentials>,
    endpoint?: PortEndpoint,
    token?: string,
  ) {
    this.broker = broker;
    this.tls = tls;
    this.token = token;
    this.endpoint = endpoint;
  }

  service(): Promise<KernelService> {
    this.pending ??= this.dial().catch((err: unknown) => {
      this.pending = undefined;
      throw err;
    });
    return this.pending;
  }

  /** The grpc-js client the kernel service runs on, dialled on first use. */
  async channel(): Promise<Client> {
    if (this.endpoint) {
      const endpoint = this.endpoint;
      this.pendingChannel ??= (async () => {
        const { address, token } = (await endpoint.request("callback-socket")) as {
          address: string;
          token?: string;
        };
        this.grpcClient = new Client(unixTarget(address), credentials.createInsecure(), {
          ...CHANNEL_OPTIONS,
          ...(token ? { interceptors: [sendToken(token)] } : {}),
        });
        return this.grpcClient;
      })().catch((err: unknown) => {
        this.pendingChannel = undefined;
        throw err;
      });
      return this.pendingChannel;
    }
    await this.service();
    return this.grpcClient!;
  }

  close(): void {
    this.grpcClient?.close();
  }

  private async dial(): Promise<KernelService> {
    if (this.endpoint) {
      const { KernelCallbackService } = await import("@pluggableharness/protocol/kernel");
      return createClient(KernelCallbackService, this.endpoint.channel);
    }
    const info = await this.broker!.waitFor(KERNEL_CALLBACK_BROKER_ID);
    const [{ KernelCallbackService }, creds] = await Promise.all([
      import("@pluggableharness/protocol/kernel"),
      this.tls ? this.tls() : Promise.resolve(credentials.createInsecure()),
    ]);
    const target = info.network === "unix" ? unixTarget(info.address) : info.address;
    const tlsOptions = this.tls ? (await import("@pluggableharness/goplugin/mtls")).TLS_CHANNEL_OPTIONS : {};
    const tokenOptions = !this.tls && this.token ? { interceptors: [sendToken(this.token)] } : {};
    this.grpcClient = new Client(target, creds, { ...CHANNEL_OPTIONS, ...tlsOptions, ...tokenOptions });
    return createClient(KernelCallbackService, this.grpcClient);
  }
}

// log.v1.LogLevel values, inlined so logging needs no generated code at start-up.
const LEVEL_NUMBERS = { trace: 1, debug: 2, info: 3, warn: 4, error: 5, fatal: 6 } as unknown as Record<
  Level,
  LogLevel
>;

/** The Log request for one entry (the kernel's in-process client sends the same). */
export function logRequest(
  level: Level,
  message: string,
  fields: JsonObject | undefined,
  options: LogOptions | undefined,
  sessionId: string | undefined,
) {
  const ms = (options?.time ?? new Date()).getTime();
  return {
    ...(sessionId ? { sessionId } : {}),
    entry: {
      // A level name an untyped caller made up logs as info.
      level: LEVEL_NUMBERS[level] ?? LEVEL_NUMBERS.info,
      logger: options?.logger ?? "",
      message,
      ...(fields ? { fields } : {}),
      time: {
        seconds: BigInt(Math.floor(ms / 1000)),
        nanos: (((ms % 1000) + 1000) % 1000) * 1_000_000,
      },
    },
  };
}

export function kernelClient(conn: KernelConnection, callContext?: CallContext): KernelClient {
  const session = (explicit: string | undefined) => explicit || callContext?.sessionId || undefined;
  return {
    async emit(input, options) {
      const sessionId = session(input.sessionId);
      if (!sessionId) throw new NoSessionError("emit");
      const k = await conn.service();
      return k.emit(
        { sessionId, kind: input.kind, schemaVersion: input.schemaVersion ?? "1", payload: input.payload },
        options,
      );
    },
    async log(level, message, fields, options) {
      const k = await conn.service();
      await k.log(logRequest(level, message, fields, options, session(options?.sessionId)), options);
    },
    async countTokens(request, options) {
      return (await conn.service()).countTokens(request, options);
    },
    async runSession(request, options) {
      const parentSessionId = request.parentSessionId || callContext?.sessionId || "";
      return (await conn.service()).runSession({ ...request, parentSessionId }, options);
    },
    service: () => conn.service(),
    channel: () => conn.channel(),
    withCallContext: (cc) => kernelClient(conn, cc),
  };
}
