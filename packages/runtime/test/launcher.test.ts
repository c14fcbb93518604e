// The shared launcher and lifecycle (launch.ts, lifecycle.ts) over a fake transport: no
// process, no thread, only a MessagePort pair in this thread. It pins what both real
// transports rely on: the launch sequence's failures, crash classification into the error
// kinds, relaunch with backoff, and drain-then-kill shutdown.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MessageChannel } from "node:worker_threads";
import { implement, StatusError } from "@pluggableharness/goplugin";
import { PortEndpoint } from "@pluggableharness/port-rpc";
import { serviceDefinition } from "@pluggableharness/protocol/grpc";
import { Health, HealthCheckResponse_ServingStatus } from "@pluggableharness/protocol/health";
import { afterAll, describe, expect, it } from "vitest";
import {
  type CrashReport,
  PluginCrashedError,
  PluginHost,
  type PluginHostOptions,
  PluginLaunchError,
  PluginStoppedError,
} from "../src/index.ts";
import { type CallbackServing, type LaunchOptions, LaunchProblem, type Transport } from "../src/launch.ts";
import type { Connection, LifecycleView, LinkEnd } from "../src/lifecycle.ts";
import type { LogCapture } from "../src/log-capture.ts";

const UNAVAILABLE = 14;
const INVALID_ARGUMENT = 3;

/** How one fake launch behaves. */
interface Script {
  version?: number;
  handshake?: LaunchProblem;
  serving?: boolean;
}

/** A transport whose plugin lives in this thread and ends when the test says so. */
class FakeTransport implements Transport {
  readonly noun = "fake";
  abandoned = false;
  end!: (end: LinkEnd) => void;
  #capture!: LogCapture;
  readonly #script: Script;

  constructor(script: Script) {
    this.#script = script;
  }

  environment() {
    return {};
  }

  start(setup: { socketDir: string; capture: LogCapture }): string {
    this.#capture = setup.capture;
    setup.capture.line("stderr", "fake plugin booting", "debug");
    return setup.socketDir;
  }

  async handshake(): Promise<import("@pluggableharness/goplugin").Handshake> {
    if (this.#script.handshake) throw this.#script.handshake;
    const v = this.#script.version ?? 1;
    return { coreVersion: 1, appVersion: v, network: "unix", address: "", protocol: "grpc", serverCert: "" };
  }

  async connect(): Promise<Connection> {
    const { port1, port2 } = new MessageChannel();
    const kernel = new PortEndpoint(port1);
    const plugin = new PortEndpoint(port2);
    const capture = this.#capture;
    let dead = false;
    plugin.server.addService(
      serviceDefinition(Health),
      implement(Health, {
        check: async (req) => {
          if (req.service === "hang") {
            hangsReceived++;
            return new Promise(() => {});
          }
          if (req.service === "reject") throw new StatusError(INVALID_ARGUMENT, "bad request");
          if (req.service === "die") {
            // The reply races the death, as a dropped socket does.
            setTimeout(() => end({ kind: "connection_lost", code: null, signal: null }), 30);
            throw new StatusError(UNAVAILABLE, "connection reset");
          }
          const serving = this.#script.serving ?? true;
          return {
            status: serving
              ? HealthCheckResponse_ServingStatus.SERVING
              : HealthCheckResponse_ServingStatus.NOT_SERVING,
          };
        },
      }),
    );
    let exit!: () => void;
    let status: { code: number | null; signal: NodeJS.Signals | null } = { code: null, signal: null };
    const exited = new Promise<void>((r) => {
      exit = r;
    });
    let ended: ((end: LinkEnd) => void) | undefined;
    const end = (e: LinkEnd) => {
      if (dead) return;
      dead = true;
      status = { code: e.code, signal: e.signal };
      capture.line("stderr", `fake plugin ending: ${e.kind}`, "debug");
      exit();
      ended?.(e);
    };
    this.end = end;
    return {
      pid: 4242,
      channel: kernel.channel,
      exited,
      watch: (cb: (end: LinkEnd) => void, _view: LifecycleView) => {
        ended = cb;
      },
      mayMeanDeath: (err) => (err as { code?: number }).code === UNAVAILABLE,
      drain: () => {},
      kill: () => end({ kind: "exited", code: null, signal: "SIGKILL" }),
      terminate: async () => end({ kind: "exited", code: 0, signal: null }),
      exitStatus: () => status,
      release: () => {
        kernel.close();
        plugin.close();
      },
    };
  }

  async serveCallbacks(_serving: CallbackServing): Promise<void> {}

  async abandon(): Promise<void> {
    this.abandoned = true;
  }
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A PluginHost whose launches run the given scripts over fake transports, in order. */
class FakeHost extends PluginHost {
  readonly launched: FakeTransport[] = [];
  readonly #scripts: Script[];

  constructor(scripts: Script[], opts: Partial<PluginHostOptions> = {}) {
    const socketDir = mkdtempSync(join(tmpdir(), "ph-launcher-"));
    dirs.push(socketDir);
    super({ name: "fake", command: "fake", socketDir, categories: [], shutdownGraceMs: 50, ...opts });
    this.#scripts = scripts;
  }

  get socketParent(): string {
    return this.opts.socketDir!;
  }

  protected override transport(_common: LaunchOptions): Transport {
    const t = new FakeTransport(this.#scripts[this.launched.length] ?? {});
    this.launched.push(t);
    return t;
  }

  get current(): FakeTransport {
    return this.launched[this.launched.length - 1]!;
  }
}

/** "hang" calls the fake plugins have received: a call is in flight once it is counted. */
let hangsReceived = 0;

describe("the shared plugin lifecycle over a fake transport", () => {
  it("classifies crashes into their kinds, quotes the plugin's output and relaunches with backoff", async () => {
    const reports: CrashReport[] = [];
    const launches: number[] = [];
    const host = new FakeHost([], {
      backoff: { initialMs: 40, repeatedThreshold: 2 },
      onCrash: (r) => reports.push(r),
      onLaunch: (l) => {
        launches.push(l.launch);
      },
    });
    const health = host.client(Health);

    // A call in flight when the plugin runs out of memory fails with that crash.
    const hung = health.check({ service: "hang" });
    await expect.poll(() => hangsReceived).toBe(1);
    host.current.end({ kind: "out_of_memory", code: 1, signal: null, detail: "600 MiB of heap" });
    const oom = await hung.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(oom).toBeInstanceOf(PluginCrashedError);
    expect((oom as PluginCrashedError).kind).toBe("out_of_memory");
    expect((oom as PluginCrashedError).message).toContain("ran out of memory: 600 MiB of heap");
    expect((oom as PluginCrashedError).stderrTail).toContain("fake plugin booting");
    expect(host.running).toBe(false);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.consecutive).toBe(1);
    expect(reports[0]!.repeated).toBe(false);
    expect(reports[0]!.nextDelayMs).toBe(0);
    // The launch's socket directory is gone with the plugin.
    await expect.poll(() => readdirSync(host.socketParent).length).toBe(0);

    // The next call relaunches at once; a call's own error is returned as is.
    await expect(health.check({ service: "reject" })).rejects.toThrow(/bad request/);
    expect(host.launched).toHaveLength(2);
    expect(host.running).toBe(true);
    expect(launches).toEqual([1, 2]);

    // A transport-level failure followed by the plugin's death reports the death.
    const lost = await health.check({ service: "die" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(lost).toBeInstanceOf(PluginCrashedError);
    expect((lost as PluginCrashedError).kind).toBe("connection_lost");
    expect(reports).toHaveLength(2);
    expect(reports[1]!.consecutive).toBe(2);
    expect(reports[1]!.repeated).toBe(true);
    expect(reports[1]!.nextDelayMs).toBeGreaterThan(0);
    expect(host.crashCount).toBe(2);

    // The third launch waits out the backoff, then serves.
    const before = Date.now();
    const res = await health.check({ service: "" });
    expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    expect(Date.now() - before).toBeGreaterThanOrEqual(30);
    expect(launches).toEqual([1, 2, 3]);

    // A kill is a crash with the signal; a shutdown fails calls in flight as stopped.
    const killed = health.check({ service: "hang" });
    await expect.poll(() => hangsReceived).toBe(2);
    host.kill();
    const k = await killed.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((k as PluginCrashedError).signal).toBe("SIGKILL");
    expect((k as PluginCrashedError).message).toContain("was killed by SIGKILL");
    const stopped = health.check({ service: "hang" }).catch((e: unknown) => e);
    await expect.poll(() => hangsReceived).toBe(3);
    const crashesBefore = reports.length;
    await host.shutdown();
    expect(await stopped).toBeInstanceOf(PluginStoppedError);
    expect(reports).toHaveLength(crashesBefore);
    expect(host.running).toBe(false);
  });

  it("turns failed launch steps into launch errors and leaves nothing behind", async () => {
    const host = new FakeHost([
      { handshake: new LaunchProblem("timeout", "no ready signal") },
      { version: 9 },
      { serving: false },
      {},
    ]);
    const health = host.client(Health);

    const timeout = await health.check({}).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(PluginLaunchError);
    expect((timeout as PluginLaunchError).reason).toBe("timeout");
    expect((timeout as PluginLaunchError).message).toContain("last plugin output:\n  fake plugin booting");
    expect(host.launched[0]!.abandoned).toBe(true);

    const mismatch = await health.check({}).catch((e: unknown) => e);
    expect((mismatch as PluginLaunchError).reason).toBe("version_mismatch");
    expect((mismatch as PluginLaunchError).message).toContain("protocol version 9");
    expect(host.launched[1]!.abandoned).toBe(true);

    const unhealthy = await health.check({}).catch((e: unknown) => e);
    expect((unhealthy as PluginLaunchError).reason).toBe("unhealthy");
    expect((unhealthy as PluginLaunchError).message).toContain("NOT_SERVING");
    // The unhealthy plugin was killed: its tail records the end.
    expect((unhealthy as PluginLaunchError).stderrTail).toContain("fake plugin ending: exited");

    expect(host.consecutiveFailureCount).toBe(3);
    expect(readdirSync(host.socketParent)).toEqual([]);
    expect(existsSync(host.socketParent)).toBe(true);
    await host.shutdown();
  });
});
