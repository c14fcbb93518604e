// One launched plugin process and its connection: the go-plugin launch sequence, the
// broker and stdio streams, the kernel callback endpoint, crash detection and the
// drain-then-kill shutdown.
import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import {
  type ChannelCredentials,
  Client,
  credentials,
  Metadata,
  ServerCredentials as SC,
  Server,
  type ServerCredentials,
  status as Status,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import {
  assertSocketPath,
  Broker,
  type CallChannel,
  CHANNEL_OPTIONS,
  type ConnInfoStream,
  createClient,
  type HandlerContext,
  type Handshake,
  HandshakeError,
  HEALTH_SERVICE_NAME,
  implement,
  isGrpcError,
  KERNEL_CALLBACK_BROKER_ID,
  type Lease,
  LineSplitter,
  type LogLine,
  type MagicCookie,
  parseHandshake,
  parseLogLine,
  requireToken,
  SERVER_OPTIONS,
  type ServiceImpl,
  SOCKET_SUFFIX_LENGTH,
  type SocketPathTooLongError,
  StdioLines,
  sendToken,
  unixTarget,
} from "@pluggableharness/goplugin";
import type { ProducerRef } from "@pluggableharness/protocol/common";
import { GRPCBroker, GRPCController, GRPCStdio, type StdioData } from "@pluggableharness/protocol/goplugin";
import { methodPath, serviceDefinition } from "@pluggableharness/protocol/grpc";
import { Health, HealthCheckResponse_ServingStatus } from "@pluggableharness/protocol/health";
import { hostCertificate, launchToken } from "./credentials.ts";
import { buildEnvironment, type EnvironmentSpec } from "./env.ts";
import { type LaunchFailure, PluginCrashedError, PluginLaunchError, PluginStoppedError } from "./errors.ts";
import { adoptPrelaunched, type SpawnedSpec } from "./prelaunch.ts";
import {
  describeOutput,
  killGroup,
  readFirstLine,
  resolveCommand,
  spawnPlugin,
  trackPlugin,
} from "./process.ts";
import { type PluginSandbox, wrapPlugin } from "./sandbox.ts";
import { longestSocketDir, makeSocketDir, socketBase } from "./socket-dirs.ts";

/** A plugin log line, attributed to the plugin that wrote it. */
export interface PluginLogRecord extends LogLine {
  plugin: string;
  /** Which launch of the plugin (1 for the first, 2 after one relaunch, ...). */
  instance: number;
  /** stderr/stdout: the process pipes; stdio: go-plugin's GRPCStdio stream; runtime: this launcher. */
  source: "stderr" | "stdout" | "stdio" | "runtime";
}

/** Who is calling the kernel: fixed by the connection the call arrived on. */
export interface CallbackPeer {
  readonly plugin: string;
  readonly instance: number;
  readonly pid: number;
  /** Describe answers per category, filled in once discovery has run. */
  readonly producers: ReadonlyMap<string, ProducerRef>;
}

export interface CallbackContext extends HandlerContext {
  peer: CallbackPeer;
}

/** The service the kernel offers plugins over the broker, bound per connection. */
export interface CallbackRegistration<S extends DescService = DescService> {
  service: S;
  implementation: (peer: CallbackPeer) => ServiceImpl<S, CallbackContext>;
  /**
   * Further services served on the same callback socket, as raw grpc-js handlers (e.g.
   * the kernel's FrontendService.Attach, a bidirectional stream `implement` does not cover).
   */
  extraServices?: (peer: CallbackPeer) => ReadonlyArray<ExtraService>;
}

/** A service offered next to the kernel callbacks, with grpc-js handlers keyed by method localName. */
export interface ExtraService {
  service: DescService;
  handlers: UntypedServiceImplementation;
}

/** A category service and its name; it is served if its Describe answers. */
export interface CategoryProbe {
  category: string;
  service: DescService;
}

export interface PluginDescription {
  /** Categories whose Describe answered, in probe order. */
  categories: string[];
  producers: Record<string, ProducerRef>;
}

export interface InstanceOptions {
  name: string;
  command: string;
  args: readonly string[];
  nodeArgs: readonly string[];
  cwd: string | undefined;
  env: EnvironmentSpec;
  cookie: MagicCookie;
  versions: readonly number[];
  launchTimeoutMs: number;
  healthTimeoutMs: number;
  socketDir: string | undefined;
  autoMTLS: boolean;
  logSink: ((record: PluginLogRecord) => void) | undefined;
  callbacks: CallbackRegistration | undefined;
  categories: readonly CategoryProbe[];
  nodeCompileCache: string | undefined;
  /** Told what was spawned (or adopted from a prelaunch) for this launch. */
  onSpawn?: (spec: SpawnedSpec) => void;
  /** Asked at every launch: the sandbox to run this process in, or undefined for none. */
  sandbox?: () => PluginSandbox | undefined;
}

const STDERR_TAIL_LINES = 20;
/** How long a failed call waits to learn whether the process died. */
const DEATH_GRACE_MS = 500;

function bind(server: Server, target: string, creds: ServerCredentials): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, creds, (err) => (err ? reject(err) : resolve())),
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

type Death = PluginCrashedError | PluginStoppedError;

export class PluginInstance {
  readonly name: string;
  readonly id: number;
  readonly pid: number;
  readonly handshake: Handshake;
  readonly startedAt = Date.now();
  readonly client: Client;
  description: PluginDescription = { categories: [], producers: {} };
  /** Resolves when the process is gone (crashed or stopped). */
  readonly died: Promise<Death>;

  private state: "running" | "stopping" | "dead" = "running";
  private deathError: Death | undefined;
  private resolveDied!: (d: Death) => void;
  private readonly inflight = new Set<(reason: Error) => void>();
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private readonly broker: Broker;
  private readonly tail: string[];
  private readonly socketDir: string;
  private callbackServer: Server | undefined;
  readonly producers = new Map<string, ProducerRef>();

  constructor(init: {
    name: string;
    id: number;
    child: ChildProcess;
    handshake: Handshake;
    client: Client;
    broker: Broker;
    tail: string[];
    socketDir: string;
  }) {
    this.name = init.name;
    this.id = init.id;
    this.child = init.child;
    this.pid = init.child.pid!;
    this.handshake = init.handshake;
    this.client = init.client;
    this.broker = init.broker;
    this.tail = init.tail;
    this.socketDir = init.socketDir;
    this.died = new Promise((r) => {
      this.resolveDied = r;
    });
    this.exited = new Promise((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve();
      else this.child.once("exit", () => resolve());
    });
    this.child.once("exit", (code, signal) => this.die("exited", code, signal));
    if (this.child.exitCode !== null || this.child.signalCode !== null) {
      this.die("exited", this.child.exitCode, this.child.signalCode);
    }
    this.broker.onClose((err) => {
      if (this.state !== "running") return;
      // A plugin without a broker (go-plugin tolerates that) is not a lost connection.
      if (isGrpcError(err) && err.code === Status.UNIMPLEMENTED) return;
      // Prefer the exit status if the process is dying anyway.
      void Promise.race([this.exited, sleep(200)]).then(() => this.die("connection_lost", null, null));
    });
  }

  get alive(): boolean {
    return this.state === "running";
  }

  /** @internal */
  setCallbackServer(server: Server): void {
    this.callbackServer = server;
  }

  /** A lease for typed clients: tracks the call and classifies its failure. */
  lease(): Lease {
    return {
      client: this.client,
      track: (abort) => {
        if (this.deathError) {
          abort(this.deathError);
          return () => {};
        }
        this.inflight.add(abort);
        return () => this.inflight.delete(abort);
      },
      mapError: (err) => this.classify(err),
    };
  }

  /** The error a failed call should report, waiting briefly to see if the plugin died. */
  async classify(err: Error): Promise<Error> {
    if (this.deathError) return this.deathError;
    const transport =
      isGrpcError(err) &&
      (err.code === Status.UNAVAILABLE ||
        err.code === Status.CANCELLED ||
        err.code === Status.INTERNAL ||
        err.code === Status.UNKNOWN);
    if (!transport) return err;
    const death = await Promise.race([this.died, sleep(DEATH_GRACE_MS).then(() => undefined)]);
    return death ?? err;
  }

  /** Kills the process group right away; the instance then dies as crashed. */
  kill(): void {
    killGroup(this.child, "SIGKILL");
  }

  /**
   * go-plugin's Kill: close the broker, ask GRPCController.Shutdown, wait up to
   * `graceMs` for the process to exit, then SIGKILL its whole process group.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.state === "running") {
      this.state = "stopping";
      const stopped = new PluginStoppedError(this.name);
      for (const abort of this.inflight) abort(stopped);
      this.inflight.clear();
      this.broker.close();
      const deadline = Date.now() + graceMs;
      const controller = createClient(GRPCController, this.client);
      await Promise.race([controller.shutdown({}, { timeoutMs: graceMs }).catch(() => {}), this.exited]);
      await Promise.race([this.exited, sleep(Math.max(0, deadline - Date.now()))]);
    }
    killGroup(this.child, "SIGKILL");
    await Promise.race([this.exited, sleep(5_000)]);
    this.die("exited", this.child.exitCode, this.child.signalCode);
  }

  private die(kind: "exited" | "connection_lost", code: number | null, signal: NodeJS.Signals | null): void {
    if (this.state === "dead") return;
    const err: Death =
      this.state === "stopping"
        ? new PluginStoppedError(this.name)
        : new PluginCrashedError(this.name, kind, code, signal, [...this.tail]);
    this.state = "dead";
    this.deathError = err;
    for (const abort of this.inflight) abort(err);
    this.inflight.clear();
    this.broker.close();
    this.client.close();
    this.callbackServer?.forceShutdown();
    // Also reaps anything the plugin started in its process group.
    killGroup(this.child, "SIGKILL");
    void this.exited.then(() => rmSync(this.socketDir, { recursive: true, force: true }));
    this.resolveDied(err);
  }
}

function fitsSocketDir(dir: string): void {
  // The longest name this runtime or the plugin puts there: "plugin" + suffix.
  assertSocketPath(join(dir, `plugin${"x".repeat(SOCKET_SUFFIX_LENGTH)}`));
}

interface LinkCredentials {
  /** Pinned mutual TLS both ways; false: plaintext, with the launch token on every call. */
  tls: boolean;
  channel: ChannelCredentials;
  server: ServerCredentials;
  options: Record<string, string>;
}

/**
 * The connection's credentials. With AutoMTLS, a plugin that returns a certificate gets
 * pinned TLS both ways; one that returns none (a plugin without AutoMTLS support) gets a
 * plaintext connection, and its kernel callback socket then takes only its launch token.
 */
async function dialCredentials(
  handshake: Handshake,
  hostCert: import("@pluggableharness/goplugin/cert").Certificate | undefined,
): Promise<LinkCredentials> {
  if (!hostCert || handshake.serverCert === "") {
    return { tls: false, channel: credentials.createInsecure(), server: SC.createInsecure(), options: {} };
  }
  const mtls = await import("@pluggableharness/goplugin/mtls");
  const pluginPem = mtls.handshakeFieldToPem(handshake.serverCert);
  return {
    tls: true,
    channel: mtls.channelTlsCredentials(hostCert, pluginPem),
    server: mtls.serverTlsCredentials(hostCert, pluginPem),
    options: { ...mtls.TLS_CHANNEL_OPTIONS },
  };
}

/** Runs the whole launch sequence; on any failure nothing is left running. */
export async function launchInstance(opts: InstanceOptions, id: number): Promise<PluginInstance> {
  const deadline = Date.now() + opts.launchTimeoutMs;
  const fail = (reason: LaunchFailure, message: string, tail: readonly string[] = [], cause?: unknown) =>
    new PluginLaunchError(opts.name, reason, message, tail, cause);

  const base = opts.socketDir ?? socketBase();
  // Check with the longest directory name mkdtemp can produce before creating it.
  try {
    fitsSocketDir(longestSocketDir(base));
  } catch (err) {
    throw fail("socket_path_too_long", (err as SocketPathTooLongError).message, [], err);
  }
  let socketDir = makeSocketDir(base);
  const cleanupDir = () => rmSync(socketDir, { recursive: true, force: true });

  const hostCert = opts.autoMTLS ? hostCertificate() : undefined;
  let token = launchToken();

  const { file, args, node } = resolveCommand(opts.command, opts.args, opts.nodeArgs);
  let env: Record<string, string>;
  try {
    env = buildEnvironment(opts.env, {
      cookie: opts.cookie,
      versions: opts.versions,
      socketDir,
      ...(hostCert ? { clientCertPem: hostCert.certPem } : {}),
      kernelToken: token,
    });
  } catch (err) {
    cleanupDir();
    throw fail("spawn_failed", (err as Error).message, [], err);
  }
  if (node && opts.nodeCompileCache && env["NODE_COMPILE_CACHE"] === undefined) {
    env["NODE_COMPILE_CACHE"] = opts.nodeCompileCache;
  }

  // A process bin/agent.mjs started for exactly this launch is taken over (prelaunch.ts).
  const spec: SpawnedSpec = { file, args, cwd: opts.cwd, env };
  // A sandboxed plugin runs under bubblewrap (sandbox.ts). Its command line names this
  // launch's socket directory, so it is neither prelaunched nor recorded for prelaunch.
  const box = opts.sandbox?.();
  const adopted = opts.socketDir === undefined && !box ? adoptPrelaunched(spec) : undefined;
  let child: ChildProcess;
  if (adopted) {
    cleanupDir();
    socketDir = adopted.socketDir;
    if (adopted.token) token = adopted.token;
    child = trackPlugin(adopted.child);
  } else if (box) {
    // Its only writable scratch space besides its roots: its own private socket directory.
    env["TMPDIR"] = socketDir;
    const wrapped = wrapPlugin(box, file, args, socketDir, opts.cwd ?? process.cwd());
    child = spawnPlugin({ file: wrapped.file, args: wrapped.args, env, cwd: opts.cwd });
  } else {
    child = spawnPlugin({ file, args, env, cwd: opts.cwd });
  }
  if (!box) opts.onSpawn?.(spec);
  const tail: string[] = [];
  const sink = (source: PluginLogRecord["source"], line: string, level: "debug" | "info") => {
    if (source === "stderr") {
      tail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
      if (tail.length > STDERR_TAIL_LINES) tail.shift();
    }
    if (!opts.logSink) return;
    try {
      opts.logSink({ ...parseLogLine(line, level), plugin: opts.name, instance: id, source });
    } catch {
      // a failing sink must not take the plugin connection down
    }
  };
  const stderr = new LineSplitter((l) => sink("stderr", l, "debug"));
  child.stderr!.on("data", (c: Buffer) => stderr.push(c));
  child.stderr!.on("end", () => stderr.flush());
  const abandon = async () => {
    killGroup(child, "SIGKILL");
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        setTimeout(resolve, 2_000).unref();
      });
    }
    cleanupDir();
  };

  const first = await readFirstLine(child, Math.max(0, deadline - Date.now()), (l) =>
    sink("stdout", l, "info"),
  );
  if (first.kind !== "line") {
    await abandon();
    // Let the last stderr lines arrive so the error can quote them.
    if (!child.stderr!.readableEnded) {
      await new Promise<void>((resolve) => {
        child.stderr!.once("end", () => resolve());
        setTimeout(resolve, 200).unref();
      });
    }
    switch (first.kind) {
      case "spawn_error":
        throw fail(
          "spawn_failed",
          `cannot run ${JSON.stringify(file)}: ${first.error.message}`,
          tail,
          first.error,
        );
      case "exited":
        throw fail(
          "exited",
          `the process ${first.signal ? `was killed by ${first.signal}` : `exited with status ${first.code}`} before printing its handshake`,
          tail,
        );
      case "timeout":
        throw fail("timeout", `no handshake line on stdout within ${opts.launchTimeoutMs} ms`, tail);
      case "too_long":
        throw fail("bad_handshake", `first stdout line is too long: ${describeOutput(first.text)}`, tail);
    }
  }

  let handshake: Handshake;
  try {
    handshake = parseHandshake(first.line);
  } catch (err) {
    await abandon();
    const reason = err instanceof HandshakeError ? err.message : String(err);
    throw fail("bad_handshake", reason, tail, err);
  }
  if (!opts.versions.includes(handshake.appVersion)) {
    await abandon();
    throw fail(
      "version_mismatch",
      `the plugin speaks protocol version ${handshake.appVersion}; this kernel speaks ${opts.versions.join(", ")}`,
      tail,
    );
  }

  let creds: LinkCredentials;
  try {
    creds = await dialCredentials(handshake, hostCert);
  } catch (err) {
    await abandon();
    throw fail("tls_failed", (err as Error).message, tail, err);
  }
  if (hostCert && !creds.tls) {
    opts.logSink?.({
      plugin: opts.name,
      instance: id,
      source: "runtime",
      level: "debug",
      logger: "runtime",
      message:
        "the plugin returned no AutoMTLS certificate: plaintext connection, kernel callbacks only with its launch token",
      fields: {},
      time: new Date(),
      structured: false,
    });
  }
  const target = handshake.network === "unix" ? unixTarget(handshake.address) : handshake.address;
  // Without TLS the launch token goes with every call, for a plugin that checks it (the SDK does).
  const client = new Client(target, creds.channel, {
    ...CHANNEL_OPTIONS,
    ...creds.options,
    ...(creds.tls ? {} : { interceptors: [sendToken(token)] }),
  });

  // go-plugin hosts open the broker and stdio streams straight away: a Go plugin
  // blocks on its first stdout write, or its first broker announcement, until they are.
  const brokerDef = serviceDefinition(GRPCBroker)["startStream"]!;
  const brokerCall = client.makeBidiStreamRequest(
    methodPath(GRPCBroker, "StartStream"),
    brokerDef.requestSerialize,
    brokerDef.responseDeserialize,
    new Metadata(),
    {},
  );
  const broker = new Broker();
  broker.attach(brokerCall as unknown as ConnInfoStream);
  const stdioLines = new StdioLines((_channel, line) => sink("stdio", line, "info"));
  const stdioDef = serviceDefinition(GRPCStdio)["streamStdio"]!;
  const stdioCall = client.makeServerStreamRequest(
    methodPath(GRPCStdio, "StreamStdio"),
    stdioDef.requestSerialize,
    stdioDef.responseDeserialize,
    {},
    new Metadata(),
    {},
  );
  stdioCall.on("data", (d: StdioData) => stdioLines.push(d));
  stdioCall.on("error", () => stdioLines.flush()); // older plugins lack GRPCStdio; harmless
  stdioCall.on("end", () => stdioLines.flush());

  const instance = new PluginInstance({
    name: opts.name,
    id,
    child,
    handshake,
    client,
    broker,
    tail,
    socketDir,
  });
  const launchFailed = async (reason: LaunchFailure, message: string, cause?: unknown) => {
    instance.kill();
    await Promise.race([instance.died, sleep(1_000)]);
    return fail(reason, message, tail, cause);
  };

  const health = createClient(Health, client);
  try {
    const timeoutMs = Math.max(1, Math.min(opts.healthTimeoutMs, deadline - Date.now()));
    const res = await health.check({ service: HEALTH_SERVICE_NAME }, { timeoutMs });
    if (res.status !== HealthCheckResponse_ServingStatus.SERVING) {
      throw new Error(`health status is ${HealthCheckResponse_ServingStatus[res.status] ?? res.status}`);
    }
  } catch (err) {
    if (!instance.alive)
      throw await launchFailed("exited", "the process exited during the health check", err);
    throw await launchFailed(
      "unhealthy",
      `health check for service "plugin" failed: ${(err as Error).message}`,
      err,
    );
  }

  if (opts.callbacks) {
    const peer: CallbackPeer = {
      plugin: opts.name,
      instance: id,
      pid: instance.pid,
      producers: instance.producers,
    };
    // Only this launch's plugin gets in: by its pinned certificate, or by its launch token.
    const server = new Server({
      ...SERVER_OPTIONS,
      ...(creds.tls
        ? {}
        : { interceptors: [requireToken(token, `only plugin "${opts.name}" may call this socket`)] }),
    });
    const cb = opts.callbacks;
    server.addService(
      serviceDefinition(cb.service),
      implement(cb.service, cb.implementation(peer), {
        context: (base): CallbackContext => ({ ...base, peer }),
      }),
    );
    for (const extra of cb.extraServices?.(peer) ?? []) {
      server.addService(serviceDefinition(extra.service), extra.handlers);
    }
    const path = join(socketDir, "kernel");
    try {
      await bind(server, unixTarget(path), creds.server);
    } catch (err) {
      server.forceShutdown();
      throw await launchFailed(
        "spawn_failed",
        `cannot serve kernel callbacks: ${(err as Error).message}`,
        err,
      );
    }
    instance.setCallbackServer(server);
    broker.announce(KERNEL_CALLBACK_BROKER_ID, "unix", path);
  }

  try {
    instance.description = await discover(client, opts.categories, Math.max(1, deadline - Date.now()));
    for (const [k, v] of Object.entries(instance.description.producers)) instance.producers.set(k, v);
  } catch (err) {
    throw await launchFailed("describe_failed", (err as Error).message, err);
  }
  return instance;
}

/**
 * Category discovery: a category service is served when its Describe answers;
 * UNIMPLEMENTED means the plugin does not serve it. Probes run in parallel.
 */
export async function discover(
  client: CallChannel,
  probes: readonly CategoryProbe[],
  timeoutMs: number,
): Promise<PluginDescription> {
  const answers = await Promise.all(
    probes.map(async (probe) => {
      const typed = createClient(probe.service, client) as Record<
        string,
        (req: object, o: { timeoutMs: number }) => Promise<{ producer?: ProducerRef }>
      >;
      const describe = typed["describe"];
      if (!describe) throw new Error(`${probe.service.typeName} has no Describe method to probe`);
      try {
        const res = await describe({}, { timeoutMs });
        return { probe, producer: res.producer };
      } catch (err) {
        if (isGrpcError(err) && err.code === Status.UNIMPLEMENTED) return undefined;
        throw new Error(`${probe.service.typeName}/Describe failed: ${(err as Error).message}`);
      }
    }),
  );
  const description: PluginDescription = { categories: [], producers: {} };
  for (const a of answers) {
    if (!a) continue;
    if (!a.producer) throw new Error(`${a.probe.service.typeName}/Describe returned no producer`);
    description.categories.push(a.probe.category);
    description.producers[a.probe.category] = a.producer;
  }
  return description;
}
