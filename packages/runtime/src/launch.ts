// The launch sequence, once for every transport: socket directory, allowlisted environment,
// start, handshake, version gate, connection, health check, kernel callbacks, category
// discovery. A Transport supplies the steps that depend on how the plugin runs (a go-plugin
// process over gRPC in process-transport.ts, a worker thread over a port in
// worker-transport.ts); this file owns their order, the deadline, and the rule that a
// failed launch leaves nothing running and reports the plugin's last output.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Server, status as Status, type UntypedServiceImplementation } from "@grpc/grpc-js";
import {
  assertSocketPath,
  type CallChannel,
  createClient,
  type Handshake,
  HEALTH_SERVICE_NAME,
  implement,
  isGrpcError,
  type MagicCookie,
  requireToken,
  SERVER_OPTIONS,
  SOCKET_SUFFIX_LENGTH,
} from "@pluggableharness/goplugin";
import type { ProducerRef } from "@pluggableharness/protocol/common";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { Health, HealthCheckResponse_ServingStatus } from "@pluggableharness/protocol/health";
import { buildEnvironment, type EnvironmentSpec } from "./env.ts";
import { type LaunchFailure, PluginLaunchError } from "./errors.ts";
import { type Connection, PluginLifecycle } from "./lifecycle.ts";
import { LogCapture } from "./log-capture.ts";
import type {
  CallbackContext,
  CallbackPeer,
  CallbackRegistration,
  CategoryProbe,
  PluginDescription,
  PluginLogRecord,
} from "./plugin-types.ts";
import type { SpawnedSpec } from "./prelaunch.ts";
import { longestSocketDir, makeSocketDir, socketBase } from "./socket-dirs.ts";

/** What every launch needs, whatever the transport. */
export interface LaunchOptions {
  name: string;
  env: EnvironmentSpec;
  cookie: MagicCookie;
  versions: readonly number[];
  /** Until the handshake, the health check and discovery are done. */
  launchTimeoutMs: number;
  healthTimeoutMs: number;
  /** Parent of the launch's private socket directory; undefined: the agent's runtime directory. */
  socketDir: string | undefined;
  logSink: ((record: PluginLogRecord) => void) | undefined;
  callbacks: CallbackRegistration | undefined;
  categories: readonly CategoryProbe[];
  /** Told what was started (or adopted from a prelaunch) for this launch. */
  onSpawn?: (spec: SpawnedSpec) => void;
}

/** A launch step that failed: the reason the launch error names. */
export class LaunchProblem extends Error {
  readonly reason: LaunchFailure;
  constructor(reason: LaunchFailure, message: string, cause?: unknown) {
    super(message, { cause });
    this.reason = reason;
  }
}

/** The kernel callbacks bound to one launch, for a transport to serve. */
export interface CallbackServing {
  readonly registration: CallbackRegistration;
  readonly peer: CallbackPeer;
  /** The launch's private socket directory, where a callback socket lives. */
  readonly socketDir: string;
  /** The callbacks' handlers, for a transport that serves them itself. */
  handlers(): UntypedServiceImplementation;
  /** A gRPC server with the callbacks; `token`: only calls that carry it get in. */
  server(token: string | undefined): Server;
  /** Hands the lifecycle a server to shut when the plugin dies. */
  adopt(server: Server): void;
}

/**
 * One launch over one transport. The launcher calls these in order (start, handshake,
 * connect, serveCallbacks) and abandon() when any step fails; each step reports a
 * failure by throwing a LaunchProblem.
 */
export interface Transport {
  /** What runs the plugin, as launch errors name it: "process" or "worker". */
  readonly noun: string;
  /** Variables the plugin must be told besides the handshake basics. */
  environment(): { clientCertPem?: string; kernelToken?: string };
  /** Starts the plugin (or adopts a prelaunched one); returns the socket directory it got. */
  start(setup: { env: Record<string, string>; socketDir: string; capture: LogCapture }): string;
  /** Waits, until `deadline`, for the plugin's ready signal. */
  handshake(deadline: number): Promise<Handshake>;
  /** Opens the connection calls go over. */
  connect(handshake: Handshake): Promise<Connection>;
  /** Offers the kernel callbacks to this launch's plugin. */
  serveCallbacks(serving: CallbackServing): Promise<void>;
  /** Ends a plugin whose launch failed and waits for it to be gone. */
  abandon(): Promise<void>;
}

function fitsSocketDir(dir: string): void {
  // The longest name this runtime or the plugin puts there ("plugin"/"kernel" + suffix).
  assertSocketPath(join(dir, `plugin${"x".repeat(SOCKET_SUFFIX_LENGTH)}`));
}

/** Runs the whole launch sequence; on any failure nothing is left running. */
export async function launchPlugin(
  transport: Transport,
  opts: LaunchOptions,
  id: number,
): Promise<PluginLifecycle> {
  const deadline = Date.now() + opts.launchTimeoutMs;
  const capture = new LogCapture(opts.name, id, opts.logSink);
  const fail = (reason: LaunchFailure, message: string, cause?: unknown) =>
    new PluginLaunchError(opts.name, reason, message, capture.tail, cause);

  const base = opts.socketDir ?? socketBase();
  // Check with the longest directory name mkdtemp can produce before creating it.
  try {
    fitsSocketDir(longestSocketDir(base));
  } catch (err) {
    throw new PluginLaunchError(opts.name, "socket_path_too_long", (err as Error).message, [], err);
  }
  let socketDir = makeSocketDir(base);
  const removeDir = (dir: string) => rmSync(dir, { recursive: true, force: true });
  let env: Record<string, string>;
  try {
    env = buildEnvironment(opts.env, {
      cookie: opts.cookie,
      versions: opts.versions,
      socketDir,
      ...transport.environment(),
    });
    const started = transport.start({ env, socketDir, capture });
    if (started !== socketDir) removeDir(socketDir);
    socketDir = started;
  } catch (err) {
    removeDir(socketDir);
    if (err instanceof LaunchProblem) throw fail(err.reason, err.message, err.cause);
    throw new PluginLaunchError(opts.name, "spawn_failed", (err as Error).message, [], err);
  }

  let handshake: Handshake;
  let connection: Connection;
  try {
    handshake = await transport.handshake(deadline);
    if (!opts.versions.includes(handshake.appVersion)) {
      throw new LaunchProblem(
        "version_mismatch",
        `the plugin speaks protocol version ${handshake.appVersion}; this kernel speaks ${opts.versions.join(", ")}`,
      );
    }
    connection = await transport.connect(handshake);
  } catch (err) {
    await transport.abandon();
    removeDir(socketDir);
    if (err instanceof LaunchProblem) throw fail(err.reason, err.message, err.cause);
    throw err;
  }

  const plugin = new PluginLifecycle({
    name: opts.name,
    id,
    handshake,
    connection,
    tail: capture.tail,
    socketDir,
  });
  const launchFailed = async (reason: LaunchFailure, message: string, cause?: unknown) => {
    plugin.kill();
    await Promise.race([plugin.died, new Promise((r) => setTimeout(r, 1_000).unref())]);
    return fail(reason, message, cause);
  };

  try {
    const timeoutMs = Math.max(1, Math.min(opts.healthTimeoutMs, deadline - Date.now()));
    const res = await createClient(Health, connection.channel).check(
      { service: HEALTH_SERVICE_NAME },
      { timeoutMs },
    );
    if (res.status !== HealthCheckResponse_ServingStatus.SERVING) {
      throw new Error(`health status is ${HealthCheckResponse_ServingStatus[res.status] ?? res.status}`);
    }
  } catch (err) {
    if (!plugin.alive) {
      throw await launchFailed("exited", `the ${transport.noun} exited during the health check`, err);
    }
    throw await launchFailed(
      "unhealthy",
      `health check for service "plugin" failed: ${(err as Error).message}`,
      err,
    );
  }

  if (opts.callbacks) {
    const registration = opts.callbacks;
    const peer: CallbackPeer = {
      plugin: opts.name,
      instance: id,
      pid: plugin.pid,
      producers: plugin.producers,
    };
    try {
      await transport.serveCallbacks({
        registration,
        peer,
        socketDir,
        handlers: () => callbackHandlers(registration, peer),
        server: (token) => callbackServer(registration, peer, opts.name, token),
        adopt: (server) => plugin.setCallbackServer(server),
      });
    } catch (err) {
      const problem =
        err instanceof LaunchProblem ? err : new LaunchProblem("spawn_failed", String(err), err);
      throw await launchFailed(problem.reason, problem.message, problem.cause);
    }
  }

  try {
    plugin.description = await discover(
      connection.channel,
      opts.categories,
      Math.max(1, deadline - Date.now()),
    );
    for (const [k, v] of Object.entries(plugin.description.producers)) plugin.producers.set(k, v);
  } catch (err) {
    throw await launchFailed("describe_failed", (err as Error).message, err);
  }
  return plugin;
}

/** The kernel callbacks' handlers, each call told which peer it came from. */
function callbackHandlers(cb: CallbackRegistration, peer: CallbackPeer): UntypedServiceImplementation {
  return implement(cb.service, cb.implementation(peer), {
    context: (base): CallbackContext => ({ ...base, peer }),
  });
}

/** A gRPC server with the kernel callbacks (and their extra services) for one peer. */
function callbackServer(
  cb: CallbackRegistration,
  peer: CallbackPeer,
  plugin: string,
  token: string | undefined,
): Server {
  // Only this launch's plugin gets in: by its pinned certificate, or by its launch token.
  const server = new Server({
    ...SERVER_OPTIONS,
    ...(token ? { interceptors: [requireToken(token, `only plugin "${plugin}" may call this socket`)] } : {}),
  });
  server.addService(serviceDefinition(cb.service), callbackHandlers(cb, peer));
  for (const extra of cb.extraServices?.(peer) ?? []) {
    server.addService(serviceDefinition(extra.service), extra.handlers);
  }
  return server;
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
