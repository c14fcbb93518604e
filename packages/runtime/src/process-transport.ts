// The process transport: a plugin as a go-plugin subprocess over gRPC. It spawns (or
// adopts a prelaunched) process in its own process group, optionally inside the
// bubblewrap sandbox, reads the handshake line, dials the plugin with pinned mutual TLS
// (or its launch token), opens the broker and stdio streams go-plugin hosts open, and
// serves the kernel callbacks on a socket announced over the broker. The lifecycle around
// it is shared with the worker transport (launch.ts, lifecycle.ts).
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import {
  type ChannelCredentials,
  Client,
  credentials,
  Metadata,
  ServerCredentials as SC,
  type Server,
  type ServerCredentials,
  status as Status,
} from "@grpc/grpc-js";
import {
  Broker,
  CHANNEL_OPTIONS,
  type ConnInfoStream,
  type Handshake,
  HandshakeError,
  isGrpcError,
  KERNEL_CALLBACK_BROKER_ID,
  parseHandshake,
  StdioLines,
  sendToken,
  unixTarget,
} from "@pluggableharness/goplugin";
import type { Certificate } from "@pluggableharness/goplugin/cert";
import { GRPCBroker, GRPCStdio, type StdioData } from "@pluggableharness/protocol/goplugin";
import { methodPath, serviceDefinition } from "@pluggableharness/protocol/grpc";
import { hostCertificate, launchToken } from "./credentials.ts";
import { type CallbackServing, type LaunchOptions, LaunchProblem, type Transport } from "./launch.ts";
import type { Connection, LifecycleView, LinkEnd } from "./lifecycle.ts";
import type { LogCapture } from "./log-capture.ts";
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

export interface ProcessLaunchOptions extends LaunchOptions {
  command: string;
  args: readonly string[];
  nodeArgs: readonly string[];
  cwd: string | undefined;
  autoMTLS: boolean;
  nodeCompileCache: string | undefined;
  /** Asked at every launch: the sandbox to run this process in, or undefined for none. */
  sandbox?: () => PluginSandbox | undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

function bind(server: Server, target: string, creds: ServerCredentials): Promise<void> {
  return new Promise((resolve, reject) =>
    server.bindAsync(target, creds, (err) => (err ? reject(err) : resolve())),
  );
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
  hostCert: Certificate | undefined,
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

/** One launch of a plugin as a go-plugin subprocess. */
export class ProcessTransport implements Transport {
  readonly noun = "process";
  readonly #opts: ProcessLaunchOptions;
  readonly #hostCert: Certificate | undefined;
  #token = launchToken();
  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;
  #capture: LogCapture | undefined;
  #command = "";
  #creds: LinkCredentials | undefined;
  #broker: Broker | undefined;

  constructor(opts: ProcessLaunchOptions) {
    this.#opts = opts;
    this.#hostCert = opts.autoMTLS ? hostCertificate() : undefined;
  }

  environment(): { clientCertPem?: string; kernelToken: string } {
    return { ...(this.#hostCert ? { clientCertPem: this.#hostCert.certPem } : {}), kernelToken: this.#token };
  }

  start(setup: { env: Record<string, string>; socketDir: string; capture: LogCapture }): string {
    const opts = this.#opts;
    const { env, capture } = setup;
    let socketDir = setup.socketDir;
    const { file, args, node } = resolveCommand(opts.command, opts.args, opts.nodeArgs);
    this.#command = file;
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
      socketDir = adopted.socketDir;
      if (adopted.token) this.#token = adopted.token;
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
    this.#child = child;
    this.#capture = capture;
    this.#exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    capture.watch(child.stderr!, "stderr", "debug");
    return socketDir;
  }

  async handshake(deadline: number): Promise<Handshake> {
    const child = this.#child!;
    const capture = this.#capture!;
    const first = await readFirstLine(child, Math.max(0, deadline - Date.now()), (l) =>
      capture.line("stdout", l, "info"),
    );
    if (first.kind === "line") {
      try {
        return parseHandshake(first.line);
      } catch (err) {
        throw new LaunchProblem(
          "bad_handshake",
          err instanceof HandshakeError ? err.message : String(err),
          err,
        );
      }
    }
    await this.abandon();
    // Let the last stderr lines arrive so the error can quote them.
    if (!child.stderr!.readableEnded) {
      await new Promise<void>((resolve) => {
        child.stderr!.once("end", () => resolve());
        setTimeout(resolve, 200).unref();
      });
    }
    switch (first.kind) {
      case "spawn_error":
        throw new LaunchProblem(
          "spawn_failed",
          `cannot run ${JSON.stringify(this.#command)}: ${first.error.message}`,
          first.error,
        );
      case "exited":
        throw new LaunchProblem(
          "exited",
          `the process ${first.signal ? `was killed by ${first.signal}` : `exited with status ${first.code}`} before printing its handshake`,
        );
      case "timeout":
        throw new LaunchProblem(
          "timeout",
          `no handshake line on stdout within ${this.#opts.launchTimeoutMs} ms`,
        );
      case "too_long":
        throw new LaunchProblem(
          "bad_handshake",
          `first stdout line is too long: ${describeOutput(first.text)}`,
        );
    }
  }

  async connect(handshake: Handshake): Promise<Connection> {
    const capture = this.#capture!;
    let creds: LinkCredentials;
    try {
      creds = await dialCredentials(handshake, this.#hostCert);
    } catch (err) {
      throw new LaunchProblem("tls_failed", (err as Error).message, err);
    }
    this.#creds = creds;
    if (this.#hostCert && !creds.tls) {
      capture.note(
        "the plugin returned no AutoMTLS certificate: plaintext connection, kernel callbacks only with its launch token",
        "debug",
        false,
      );
    }
    const target = handshake.network === "unix" ? unixTarget(handshake.address) : handshake.address;
    // Without TLS the launch token goes with every call, for a plugin that checks it (the SDK does).
    const client = new Client(target, creds.channel, {
      ...CHANNEL_OPTIONS,
      ...creds.options,
      ...(creds.tls ? {} : { interceptors: [sendToken(this.#token)] }),
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
    this.#broker = broker;
    const stdioLines = new StdioLines((_channel, line) => capture.line("stdio", line, "info"));
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
    return processConnection(this.#child!, this.#exited!, client, broker);
  }

  async serveCallbacks(serving: CallbackServing): Promise<void> {
    const creds = this.#creds!;
    const server = serving.server(creds.tls ? undefined : this.#token);
    const path = join(serving.socketDir, "kernel");
    try {
      await bind(server, unixTarget(path), creds.server);
    } catch (err) {
      server.forceShutdown();
      throw new LaunchProblem(
        "spawn_failed",
        `cannot serve kernel callbacks: ${(err as Error).message}`,
        err,
      );
    }
    serving.adopt(server);
    this.#broker!.announce(KERNEL_CALLBACK_BROKER_ID, "unix", path);
  }

  async abandon(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    killGroup(child, "SIGKILL");
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      await new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        setTimeout(resolve, 2_000).unref();
      });
    }
  }
}

/** A connected plugin process: its exit or a dropped broker stream ends it. */
function processConnection(
  child: ChildProcess,
  exited: Promise<void>,
  client: Client,
  broker: Broker,
): Connection {
  return {
    pid: child.pid!,
    channel: client,
    exited,
    watch(ended: (end: LinkEnd) => void, view: LifecycleView) {
      child.once("exit", (code, signal) => ended({ kind: "exited", code, signal }));
      if (child.exitCode !== null || child.signalCode !== null) {
        ended({ kind: "exited", code: child.exitCode, signal: child.signalCode });
      }
      broker.onClose((err) => {
        if (!view.alive()) return;
        // A plugin without a broker (go-plugin tolerates that) is not a lost connection.
        if (isGrpcError(err) && err.code === Status.UNIMPLEMENTED) return;
        // Prefer the exit status if the process is dying anyway.
        void Promise.race([exited, sleep(200)]).then(() =>
          ended({ kind: "connection_lost", code: null, signal: null }),
        );
      });
    },
    mayMeanDeath: (err) =>
      isGrpcError(err) &&
      (err.code === Status.UNAVAILABLE ||
        err.code === Status.CANCELLED ||
        err.code === Status.INTERNAL ||
        err.code === Status.UNKNOWN),
    // go-plugin's Kill closes the broker before it asks for Shutdown.
    drain: () => broker.close(),
    kill: () => killGroup(child, "SIGKILL"),
    terminate: async () => killGroup(child, "SIGKILL"),
    exitStatus: () => ({ code: child.exitCode, signal: child.signalCode }),
    release() {
      broker.close();
      client.close();
      // Also reaps anything the plugin started in its process group.
      killGroup(child, "SIGKILL");
    },
  };
}
