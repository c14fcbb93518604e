// The four ways a first-party plugin can run that the transport benchmark compares, each
// behind the same small surface: start (launch, health, category discovery), a typed
// client, stop. "process" and "worker" are the runtime's real hosts (PluginHost,
// WorkerPluginHost). "worker-grpc" runs the plugin's unchanged serve() in a worker thread
// but keeps gRPC over a unix socket as the channel. "shared" starts one Node process that
// imports every plugin, each serving gRPC on its own socket.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { MessageChannel, Worker } from "node:worker_threads";
import type { DescService } from "@bufbuild/protobuf";
import { Client, credentials } from "@grpc/grpc-js";
import {
  APP_PROTOCOL_VERSIONS,
  CHANNEL_OPTIONS,
  createClient,
  HEALTH_SERVICE_NAME,
  LineSplitter,
  PLUGGABLEHARNESS_COOKIE,
  parseHandshake,
  type ServiceClient,
  unixTarget,
} from "@pluggableharness/goplugin";
import { PortEndpoint, WORKER_DATA_KEY, WORKER_PROTOCOL } from "@pluggableharness/port-rpc";
import { Health } from "@pluggableharness/protocol/health";
import {
  buildEnvironment,
  CATEGORY_PROBES,
  DEFAULT_WORKER_LIMITS,
  discover,
  PluginHost,
  WorkerPluginHost,
} from "@pluggableharness/runtime";

export type TransportOption = "process" | "worker" | "worker-grpc" | "shared";
export const OPTIONS: readonly TransportOption[] = ["process", "worker", "worker-grpc", "shared"];

export interface BenchPlugin {
  name: string;
  command: string;
}

export interface StartedPlugin {
  readonly name: string;
  client<S extends DescService>(service: S): ServiceClient<S>;
}

export interface TransportSet {
  /** Launches every plugin; resolves per plugin as each is ready (health and discovery done). */
  start(plugins: readonly BenchPlugin[]): Array<Promise<StartedPlugin>>;
  stop(): Promise<void>;
}

/** The flags the kernel gives first-party plugin processes (providers.ts FIRST_PARTY_NODE_FLAGS). */
const FIRST_PARTY_NODE_FLAGS = ["--max-semi-space-size=1"];
const TIMEOUT_MS = 60_000;

function runtimeHosts(kind: "process" | "worker", cwd: string): TransportSet {
  const hosts: PluginHost[] = [];
  return {
    start: (plugins) =>
      plugins.map(async (p) => {
        const host =
          kind === "process"
            ? new PluginHost({ name: p.name, command: p.command, nodeArgs: FIRST_PARTY_NODE_FLAGS, cwd })
            : new WorkerPluginHost({ name: p.name, command: p.command, cwd });
        hosts.push(host);
        await host.start();
        return { name: p.name, client: <S extends DescService>(s: S) => host.client(s) };
      }),
    stop: async () => {
      await Promise.all(hosts.map((h) => h.shutdown()));
    },
  };
}

/** Health and discovery over a gRPC channel, as the runtime does after a handshake. */
async function ready(name: string, client: Client): Promise<StartedPlugin> {
  await createClient(Health, client).check({ service: HEALTH_SERVICE_NAME }, { timeoutMs: TIMEOUT_MS });
  await discover(client, CATEGORY_PROBES, TIMEOUT_MS);
  return { name, client: <S extends DescService>(s: S) => createClient(s, client) };
}

const WORKER_BOOT = `
const { workerData } = require("node:worker_threads");
import(workerData.entry);
`;

function workerGrpc(): TransportSet {
  const workers: Worker[] = [];
  const clients: Client[] = [];
  const dirs: string[] = [];
  return {
    start: (plugins) =>
      plugins.map(async (p) => {
        const socketDir = mkdtempSync(join(tmpdir(), "ph-tb-"));
        dirs.push(socketDir);
        const env = buildEnvironment(
          {},
          { cookie: PLUGGABLEHARNESS_COOKIE, versions: APP_PROTOCOL_VERSIONS, socketDir },
        );
        const { port1, port2 } = new MessageChannel();
        const worker = new Worker(WORKER_BOOT, {
          eval: true,
          env,
          stdout: true,
          stderr: true,
          resourceLimits: DEFAULT_WORKER_LIMITS,
          workerData: {
            entry: pathToFileURL(p.command).href,
            [WORKER_DATA_KEY]: { protocol: WORKER_PROTOCOL, port: port2, channel: "grpc" },
          },
          transferList: [port2],
        });
        workers.push(worker);
        worker.stdout.resume();
        worker.stderr.resume();
        const endpoint = new PortEndpoint(port1);
        const line = await new Promise<string>((resolve, reject) => {
          endpoint.onNotify("handshake", (l) => resolve(String(l)));
          worker.once("exit", (code) => reject(new Error(`${p.name} exited with ${code}`)));
        });
        const client = new Client(
          unixTarget(parseHandshake(line).address),
          credentials.createInsecure(),
          CHANNEL_OPTIONS,
        );
        clients.push(client);
        return ready(p.name, client);
      }),
    stop: async () => {
      for (const c of clients) c.close();
      await Promise.all(workers.map((w) => w.terminate()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

const SHARED_HOST = fileURLToPath(new URL("./shared-host.ts", import.meta.url));

function shared(): TransportSet {
  let child: ChildProcess | undefined;
  const clients: Client[] = [];
  let socketDir: string | undefined;
  return {
    start: (plugins) => {
      socketDir = mkdtempSync(join(tmpdir(), "ph-tb-"));
      const env = buildEnvironment(
        {},
        { cookie: PLUGGABLEHARNESS_COOKIE, versions: APP_PROTOCOL_VERSIONS, socketDir },
      );
      child = spawn(
        process.execPath,
        [...FIRST_PARTY_NODE_FLAGS, SHARED_HOST, ...plugins.map((p) => p.command)],
        {
          env,
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stderr!.resume();
      // One handshake line per plugin, in the order they were imported.
      const waiting = plugins.map(() => Promise.withResolvers<string>());
      let n = 0;
      const lines = new LineSplitter((l) => {
        if (n < waiting.length && l.startsWith("1|")) waiting[n++]!.resolve(l);
      });
      child.stdout!.on("data", (c: Buffer) => lines.push(c));
      child.once("exit", (code) => {
        for (const w of waiting) w.reject(new Error(`the shared host exited with ${code}`));
      });
      return plugins.map(async (p, i) => {
        const line = await waiting[i]!.promise;
        const client = new Client(
          unixTarget(parseHandshake(line).address),
          credentials.createInsecure(),
          CHANNEL_OPTIONS,
        );
        clients.push(client);
        return ready(p.name, client);
      });
    },
    stop: async () => {
      for (const c of clients) c.close();
      if (child && child.exitCode === null) {
        const exited = new Promise((r) => child!.once("exit", r));
        child.kill("SIGKILL");
        await exited;
      }
      if (socketDir) rmSync(socketDir, { recursive: true, force: true });
    },
  };
}

export function transportSet(option: TransportOption, cwd: string): TransportSet {
  switch (option) {
    case "process":
    case "worker":
      return runtimeHosts(option, cwd);
    case "worker-grpc":
      return workerGrpc();
    case "shared":
      return shared();
  }
}
