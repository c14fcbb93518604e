// One launched plugin, whatever runs it: the running → stopping → dead state machine,
// in-flight call tracking, classification of failed calls (a crash, a stop, or the call's
// own error), the drain-then-kill shutdown and the clean-up at death. Everything that
// depends on how the plugin runs (a process over gRPC, a worker thread over a port) sits
// behind the narrow Connection a transport hands over once the handshake is done.
import { rmSync } from "node:fs";
import type { Server } from "@grpc/grpc-js";
import { type CallChannel, createClient, type Handshake, type Lease } from "@pluggableharness/goplugin";
import type { ProducerRef } from "@pluggableharness/protocol/common";
import { GRPCController } from "@pluggableharness/protocol/goplugin";
import { type CrashKind, PluginCrashedError, PluginStoppedError } from "./errors.ts";
import type { PluginDescription } from "./plugin-types.ts";
import type { LaunchedPlugin } from "./transport.ts";

/** How a plugin ended on its own, as its transport saw it. */
export interface LinkEnd {
  kind: CrashKind;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** What the plugin reported as it died (a worker's uncaught error), if anything. */
  detail?: string;
}

/** What a transport may read of the lifecycle while it watches the plugin. */
export interface LifecycleView {
  alive(): boolean;
  /** Calls the kernel is waiting on. */
  inflight(): number;
}

/** A connected plugin as its transport exposes it to the lifecycle. */
export interface Connection {
  /** The process serving the plugin (the kernel's own for a worker). */
  readonly pid: number;
  /** Where typed clients send their calls. */
  readonly channel: CallChannel;
  /** Resolves once the plugin has ended. */
  readonly exited: Promise<unknown>;
  /** Starts watching: `ended` is called when the plugin ends or its link drops. */
  watch(ended: (end: LinkEnd) => void, view: LifecycleView): void;
  /** Whether a failed call's error may mean the plugin died (then it is worth a wait). */
  mayMeanDeath(err: Error): boolean;
  /** The first drain step, before the plugin is asked to shut down. */
  drain(): void;
  /** Ends the plugin now. */
  kill(): void;
  /** The forced end after the grace period; resolves once it was ordered. */
  terminate(): Promise<void>;
  /** The exit status, once the plugin has ended. */
  exitStatus(): { code: number | null; signal: NodeJS.Signals | null };
  /** Releases what the connection holds; the plugin is dead. */
  release(): void;
  /** See LaunchedPlugin.settling. */
  settling?(view: LifecycleView): Promise<void> | undefined;
}

/** How long a failed call waits to learn whether the plugin died. */
const DEATH_GRACE_MS = 500;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

type Death = PluginCrashedError | PluginStoppedError;

export class PluginLifecycle implements LaunchedPlugin {
  readonly name: string;
  readonly id: number;
  readonly pid: number;
  readonly handshake: Handshake;
  readonly startedAt = Date.now();
  description: PluginDescription = { categories: [], producers: {} };
  /** Describe answers per category, shared with the kernel callbacks' peer. */
  readonly producers = new Map<string, ProducerRef>();
  /** Resolves when the plugin is gone (crashed or stopped). */
  readonly died: Promise<Death>;

  #state: "running" | "stopping" | "dead" = "running";
  #deathError: Death | undefined;
  #resolveDied!: (d: Death) => void;
  readonly #inflight = new Set<(reason: Error) => void>();
  readonly #conn: Connection;
  readonly #tail: string[];
  readonly #socketDir: string;
  readonly #view: LifecycleView;
  #callbackServer: Server | undefined;

  constructor(init: {
    name: string;
    id: number;
    handshake: Handshake;
    connection: Connection;
    /** The capture's tail, quoted by a crash. */
    tail: string[];
    /** The launch's private socket directory, removed once the plugin has ended. */
    socketDir: string;
  }) {
    this.name = init.name;
    this.id = init.id;
    this.handshake = init.handshake;
    this.#conn = init.connection;
    this.pid = init.connection.pid;
    this.#tail = init.tail;
    this.#socketDir = init.socketDir;
    this.died = new Promise((r) => {
      this.#resolveDied = r;
    });
    this.#view = { alive: () => this.alive, inflight: () => this.#inflight.size };
    this.#conn.watch((end) => this.#die(end), this.#view);
  }

  get alive(): boolean {
    return this.#state === "running";
  }

  /** The server answering this plugin's kernel callbacks on a socket; shut with the plugin. */
  setCallbackServer(server: Server): void {
    this.#callbackServer = server;
  }

  /** A lease for typed clients: tracks the call and classifies its failure. */
  lease(): Lease {
    return {
      client: this.#conn.channel,
      track: (abort) => {
        if (this.#deathError) {
          abort(this.#deathError);
          return () => {};
        }
        this.#inflight.add(abort);
        return () => this.#inflight.delete(abort);
      },
      mapError: (err) => this.classify(err),
    };
  }

  /** The error a failed call should report, waiting briefly to see if the plugin died. */
  async classify(err: Error): Promise<Error> {
    if (this.#deathError) return this.#deathError;
    if (!this.#conn.mayMeanDeath(err)) return err;
    const death = await Promise.race([this.died, sleep(DEATH_GRACE_MS).then(() => undefined)]);
    return death ?? err;
  }

  settling(): Promise<void> | undefined {
    if (this.#state !== "running") return undefined;
    return this.#conn.settling?.(this.#view);
  }

  /** Ends the plugin right away; it then dies as crashed. */
  kill(): void {
    this.#conn.kill();
  }

  /**
   * Drain, then kill: fail the calls in flight as stopped, ask GRPCController.Shutdown, wait
   * up to `graceMs` for the plugin to end, then end it by force.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.#state === "running") {
      this.#state = "stopping";
      this.#abortAll(new PluginStoppedError(this.name));
      this.#conn.drain();
      const deadline = Date.now() + graceMs;
      const controller = createClient(GRPCController, this.#conn.channel);
      const exited = this.#conn.exited;
      await Promise.race([controller.shutdown({}, { timeoutMs: graceMs }).catch(() => {}), exited]);
      await Promise.race([exited, sleep(Math.max(0, deadline - Date.now()))]);
    }
    await this.#conn.terminate();
    await Promise.race([this.#conn.exited, sleep(5_000)]);
    this.#die({ kind: "exited", ...this.#conn.exitStatus() });
  }

  #abortAll(reason: Error): void {
    for (const abort of this.#inflight) abort(reason);
    this.#inflight.clear();
  }

  #die(end: LinkEnd): void {
    if (this.#state === "dead") return;
    const err: Death =
      this.#state === "stopping"
        ? new PluginStoppedError(this.name)
        : new PluginCrashedError(this.name, end.kind, end.code, end.signal, [...this.#tail], end.detail);
    this.#state = "dead";
    this.#deathError = err;
    this.#abortAll(err);
    this.#conn.release();
    this.#callbackServer?.forceShutdown();
    const dir = this.#socketDir;
    void this.#conn.exited.then(() => rmSync(dir, { recursive: true, force: true }));
    this.#resolveDied(err);
  }
}
