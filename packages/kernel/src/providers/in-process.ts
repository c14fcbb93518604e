// The in-process transport behind the provider ports: a plugin's service implementations
// (the very `services` it passes to the SDK's serve()) called directly, in the kernel's
// own thread. Every request and answer goes through a binary encode/decode, so the
// plugin sees what it would see over the wire (its own copy, defaults and unknown fields
// as protobuf gives them) and the kernel cannot share objects with it. Deadlines,
// cancellation, UNIMPLEMENTED for a method left out, StatusError codes and kernel
// callbacks (Emit, Log, CountTokens, RunSession) behave as over go-plugin.
//
// A plugin that "exits" (the `exit` its factory is given) behaves like a crashed process:
// calls in flight fail with ProviderUnavailableError, and the next call gets a fresh
// instance, configured again with what the kernel last sent, before anything else
// reaches it (what the runtime's launch hook does for a relaunched process).
//
// It gives no isolation at all: a plugin that throws out of a timer, loops or really
// exits takes the kernel with it. That is why it exists for tests and embedding only
// (KernelOptions.inProcessProviders), never as a setting of agent.hcl; see
// docs/decisions/turn-loop.md, "The provider seam".
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { Metadata } from "@grpc/grpc-js";
import { APP_PROTOCOL_VERSIONS, RpcError, StatusError } from "@pluggableharness/goplugin";
import type { EmitInput, KernelClient, Logger, PackageMetadata } from "@pluggableharness/plugin-sdk";
import {
  categoryOfService,
  extractCallContext,
  loggerOver,
  logRequest,
  NoSessionError,
  producerFor,
} from "@pluggableharness/plugin-sdk";
import { type CallContext, type ProducerRef, ProducerRefSchema } from "@pluggableharness/protocol/common";
import { methodPath } from "@pluggableharness/protocol/grpc";
import { KernelCallbackService } from "@pluggableharness/protocol/kernel";
import type { CallbackContext, CallbackPeer, PluginLogRecord } from "@pluggableharness/runtime";
import { CATEGORY_PROBES } from "@pluggableharness/runtime";
import {
  ProviderCallError,
  type ProviderCallOptions,
  type ProviderPorts,
  ProviderStatus,
  ProviderUnavailableError,
} from "./ports.ts";

/** A plugin to run in the kernel's thread: what it would pass to serve(). */
export interface InProcessPlugin {
  /** Its package.json contents (Describe answers from them, as serve() does). */
  readonly packageJson: PackageMetadata;
  readonly services: ReadonlyArray<{
    readonly service: DescService;
    readonly implementation: Record<string, unknown>;
  }>;
}

/**
 * Makes one instance of an in-process plugin with fresh state. `exit` is how the instance
 * dies (what process.exit is for a plugin process).
 */
export type InProcessPluginFactory = (host: { exit(code: number): void }) => InProcessPlugin;

/** What the kernel offers an in-process plugin: its callbacks and its log. */
export interface InProcessKernelSide {
  callbacks(peer: CallbackPeer): Record<string, unknown>;
  pluginLog(record: PluginLogRecord): void;
}

type Impl = (request: unknown, ctx: unknown) => unknown;

const LEVEL_NAMES = ["trace", "debug", "info", "warn", "error", "fatal"] as const;

/** A copy as the wire would deliver it. */
function wireCopy<D extends DescMessage>(desc: D, value: MessageInitShape<D>): MessageShape<D> {
  return fromBinary(desc, toBinary(desc, create(desc, value)));
}

function callError(err: unknown, method: string): Error {
  if (err instanceof ProviderCallError) return err;
  if (err instanceof StatusError || err instanceof RpcError) {
    return new ProviderCallError(err.code, err.message, method);
  }
  const details = err instanceof Error ? err.message || err.name : String(err);
  return new ProviderCallError(ProviderStatus.INTERNAL, details, method);
}

/**
 * Aborts when the caller's signal does, the deadline passes or the instance dies; says
 * which. `watch` registers the call with its instance (returns the unregistration).
 */
function callScope(
  options: ProviderCallOptions | undefined,
  method: string,
  watch: (fail: (err: Error) => void) => () => void,
) {
  const controller = new AbortController();
  let expired: Error | undefined;
  const unwatch = watch((err) => {
    expired ??= err;
    controller.abort(err);
  });
  const onAbort = () => controller.abort(options?.signal?.reason);
  if (options?.signal?.aborted) controller.abort(options.signal.reason);
  else options?.signal?.addEventListener("abort", onAbort, { once: true });
  const timer =
    options?.timeoutMs !== undefined
      ? setTimeout(() => {
          expired ??= new ProviderCallError(ProviderStatus.DEADLINE_EXCEEDED, "deadline exceeded", method);
          controller.abort(expired);
        }, options.timeoutMs)
      : undefined;
  // Settles (rejects) when the call must end on the caller's side.
  const ended = new Promise<never>((_, reject) => {
    const fail = () => reject(expired ?? options?.signal?.reason ?? new Error("cancelled"));
    if (controller.signal.aborted) fail();
    else controller.signal.addEventListener("abort", fail, { once: true });
  });
  ended.catch(() => {});
  return {
    signal: controller.signal,
    ended,
    /** The error the caller sees for a call stopped by its signal or deadline. */
    stopped: () => expired ?? options?.signal?.reason,
    /** Ends the call; `cancel` tells the plugin's handler (a caller that stopped reading). */
    close: (cancel: boolean) => {
      unwatch();
      clearTimeout(timer);
      options?.signal?.removeEventListener("abort", onAbort);
      if (cancel && !controller.signal.aborted) controller.abort(new Error("the caller stopped reading"));
    },
  };
}

export class InProcessHost {
  readonly name: string;
  /** How it runs, for ProviderStatus: in the kernel's own thread. */
  readonly isolation = "in_process" as const;
  readonly running = true;
  readonly lastSpawn = undefined;
  readonly pid = process.pid;
  readonly ports: ProviderPorts;
  readonly #factory: InProcessPluginFactory;
  readonly #kernel: InProcessKernelSide;
  #impls = new Map<string, Record<string, unknown>>();
  #categories: string[] = [];
  #producers: Record<string, ProducerRef> = {};
  #peer!: CallbackPeer;
  #log!: Logger;
  /** 1 for the first instance, 2 after one simulated crash, ... */
  #instance = 0;
  #dead = false;
  /** The last Configure each service accepted, replayed into a new instance. */
  readonly #configs = new Map<string, unknown>();
  readonly #calls = new Set<(err: Error) => void>();
  #relaunch: Promise<void> | undefined;

  constructor(name: string, factory: InProcessPluginFactory, kernel: InProcessKernelSide) {
    this.name = name;
    this.#factory = factory;
    this.#kernel = kernel;
    this.#launch();
    this.ports = {
      model: this.#port(CATEGORY_PROBES[0]!.service) as ProviderPorts["model"],
      tool: this.#port(CATEGORY_PROBES[1]!.service) as ProviderPorts["tool"],
      context: this.#port(CATEGORY_PROBES[2]!.service) as ProviderPorts["context"],
      memory: this.#port(CATEGORY_PROBES[3]!.service) as ProviderPorts["memory"],
      frontend: this.#port(CATEGORY_PROBES[4]!.service) as ProviderPorts["frontend"],
      widget: this.#port(CATEGORY_PROBES[5]!.service) as ProviderPorts["widget"],
      hook: this.#port(CATEGORY_PROBES[6]!.service) as ProviderPorts["hook"],
    };
  }

  /** A fresh instance of the plugin. */
  #launch(): void {
    this.#instance++;
    this.#dead = false;
    const instance = this.#instance;
    // Unlike process.exit it returns (it may be called from a timer, where a throw would
    // be the kernel's uncaught exception); whatever the dead instance does next reaches
    // no caller: its calls have failed, its streams are closed, its callbacks refused.
    const plugin = this.#factory({ exit: (code) => this.#exit(instance, code) });
    this.#impls = new Map();
    this.#categories = [];
    this.#producers = {};
    const meta = plugin.packageJson;
    const categories = plugin.services.map((s) => categoryOfService(s.service));
    const fallback = categories.find((c) => c !== 0) ?? 0;
    const protocolVersion = Math.max(...APP_PROTOCOL_VERSIONS);
    for (const probe of CATEGORY_PROBES) {
      const reg = plugin.services.find((s) => s.service.typeName === probe.service.typeName);
      if (!reg) continue;
      this.#impls.set(probe.service.typeName, reg.implementation);
      this.#categories.push(probe.category);
      this.#producers[probe.category] = create(
        ProducerRefSchema,
        producerFor(meta, categoryOfService(reg.service) || fallback, protocolVersion),
      );
    }
    const producers = new Map(Object.entries(this.#producers));
    this.#peer = { plugin: this.name, instance, pid: process.pid, producers };
    this.#log = this.#logger(meta.pluggableharness?.name ?? meta.name.replace(/^@[^/]+\//, ""));
  }

  /** The instance died: what is in flight fails as crashed; the next call relaunches. */
  #exit(instance: number, code: number): void {
    if (instance !== this.#instance || this.#dead) return;
    this.#dead = true;
    const err = new ProviderUnavailableError(
      this.name,
      "crashed",
      `plugin ${JSON.stringify(this.name)} exited with status ${code}`,
    );
    const calls = [...this.#calls];
    this.#calls.clear();
    for (const fail of calls) fail(err);
  }

  /** Before a call: a dead instance is replaced and configured again, once. */
  async #ready(): Promise<void> {
    if (!this.#dead) return;
    this.#relaunch ??= (async () => {
      this.#launch();
      for (const [typeName, request] of this.#configs) {
        const fn = this.#impls.get(typeName)?.["configure"] as Impl | undefined;
        const method = CATEGORY_PROBES.find((p) => p.service.typeName === typeName)!.service.method[
          "configure"
        ] as DescMethod;
        if (fn) await fn(request, this.#context(method, request, new AbortController().signal));
      }
    })().finally(() => {
      this.#relaunch = undefined;
    });
    await this.#relaunch;
  }

  #watch = (fail: (err: Error) => void): (() => void) => {
    this.#calls.add(fail);
    return () => this.#calls.delete(fail);
  };

  /** Which categories it serves and its Describe identity per category. */
  async describe(): Promise<{ categories: string[]; producers: Record<string, ProducerRef> }> {
    return { categories: [...this.#categories], producers: { ...this.#producers } };
  }

  start(): Promise<{ categories: string[]; producers: Record<string, ProducerRef> }> {
    return this.describe();
  }

  /** Nothing to stop: the plugin lives as long as the kernel that holds it. */
  async shutdown(): Promise<void> {}

  #context(method: DescMethod, request: unknown, signal: AbortSignal) {
    const callContext = extractCallContext(method.input, request);
    return {
      signal,
      metadata: new Metadata(),
      method,
      callContext,
      kernel: this.#kernelClient(callContext),
      log: this.#log,
    };
  }

  #port(service: DescService): unknown {
    const out: Record<string, unknown> = {};
    for (const m of service.methods) {
      const path = methodPath(service, m.name);
      const ready = () => this.#ready();
      const watch = this.#watch;
      const remember = (request: unknown) => {
        if (m.localName === "configure") this.#configs.set(service.typeName, request);
      };
      const impl = () => {
        const fn = this.#impls.get(service.typeName)?.[m.localName] as Impl | undefined;
        if (!fn) {
          throw new ProviderCallError(
            ProviderStatus.UNIMPLEMENTED,
            `${this.#impls.has(service.typeName) ? "method" : "service"} not implemented`,
            path,
          );
        }
        return fn;
      };
      if (m.methodKind === "unary") {
        out[m.localName] = async (init: unknown, options?: ProviderCallOptions) => {
          await ready();
          // A call cancelled before it started never reaches the plugin.
          if (options?.signal?.aborted) throw options.signal.reason;
          const fn = impl();
          const request = wireCopy(m.input, init as never);
          const scope = callScope(options, path, watch);
          try {
            const answer = await Promise.race([
              Promise.resolve().then(() => fn(request, this.#context(m, request, scope.signal))),
              scope.ended,
            ]);
            // Answered as it died, or as the call was cancelled: the answer never arrived.
            if (scope.signal.aborted && scope.stopped() !== undefined) throw scope.stopped();
            remember(request);
            return wireCopy(m.output, answer as never);
          } catch (err) {
            if (scope.signal.aborted && scope.stopped() !== undefined) throw scope.stopped();
            throw callError(err, path);
          } finally {
            scope.close(false);
          }
        };
      } else if (m.methodKind === "server_streaming") {
        const ctxOf = (request: unknown, signal: AbortSignal) => this.#context(m, request, signal);
        out[m.localName] = async function* (init: unknown, options?: ProviderCallOptions) {
          await ready();
          if (options?.signal?.aborted) throw options.signal.reason;
          const fn = impl();
          const request = wireCopy(m.input, init as never);
          const scope = callScope(options, path, watch);
          let iterator: AsyncIterator<unknown> | undefined;
          let finished = false;
          try {
            iterator = (fn(request, ctxOf(request, scope.signal)) as AsyncIterable<unknown>)[
              Symbol.asyncIterator
            ]();
            for (;;) {
              const next = await Promise.race([iterator.next(), scope.ended]);
              if (scope.signal.aborted && scope.stopped() !== undefined) throw scope.stopped();
              if (next.done) {
                finished = true;
                return;
              }
              yield wireCopy(m.output, next.value as never);
            }
          } catch (err) {
            if (scope.signal.aborted && scope.stopped() !== undefined) throw scope.stopped();
            throw callError(err, path);
          } finally {
            // The caller stopped reading, was cancelled or the stream ended: the plugin's
            // generator runs its finally blocks, as when a gRPC client goes away.
            scope.close(!finished);
            if (!finished) void Promise.resolve(iterator?.return?.(undefined)).catch(() => {});
          }
        };
      }
    }
    return out;
  }

  #logger(name: string): Logger {
    const write = (level: (typeof LEVEL_NAMES)[number], message: string, fields?: Record<string, unknown>) =>
      this.#kernel.pluginLog({
        time: new Date(),
        level,
        logger: name,
        message,
        fields: (fields ?? {}) as PluginLogRecord["fields"],
        plugin: this.name,
        instance: 1,
        source: "stdio",
      } as PluginLogRecord);
    const make = (n: string): Logger => loggerOver(n, write, (sub) => make(n ? `${n}.${sub}` : sub));
    return make(name);
  }

  /** KernelCallbackService, called directly; failures read as they would over gRPC. */
  #callbackService() {
    const instance = this.#instance;
    const impl = this.#kernel.callbacks(this.#peer);
    const out: Record<string, unknown> = {};
    for (const m of KernelCallbackService.methods) {
      const path = methodPath(KernelCallbackService, m.name);
      out[m.localName] = async (init: unknown, options?: { signal?: AbortSignal }) => {
        const fn = impl[m.localName] as Impl | undefined;
        if (instance !== this.#instance || this.#dead) {
          throw new RpcError(ProviderStatus.UNAVAILABLE, "the plugin instance exited", path);
        }
        if (!fn) throw new RpcError(ProviderStatus.UNIMPLEMENTED, `${m.name} is not served`, path);
        const request = wireCopy(m.input, init as never);
        const ctx: CallbackContext = {
          signal: options?.signal ?? new AbortController().signal,
          metadata: new Metadata(),
          method: m,
          peer: this.#peer,
        };
        try {
          return wireCopy(m.output, (await fn(request, ctx)) as never);
        } catch (err) {
          if (err instanceof RpcError) throw err;
          const code = err instanceof StatusError ? err.code : ProviderStatus.INTERNAL;
          throw new RpcError(code, (err as Error).message, path);
        }
      };
    }
    return out as unknown as Awaited<ReturnType<KernelClient["service"]>>;
  }

  #kernelClient(callContext: CallContext | undefined): KernelClient {
    const session = (explicit: string | undefined) => explicit || callContext?.sessionId || undefined;
    const svc = () => this.#callbackService();
    return {
      emit: async (input: EmitInput, options) => {
        const sessionId = session(input.sessionId);
        if (!sessionId) throw new NoSessionError("emit");
        return svc().emit(
          { sessionId, kind: input.kind, schemaVersion: input.schemaVersion ?? "1", payload: input.payload },
          options,
        );
      },
      log: async (level, message, fields, options) => {
        await svc().log(logRequest(level, message, fields, options, session(options?.sessionId)), options);
      },
      countTokens: (request, options) => svc().countTokens(request, options),
      runSession: (request, options) =>
        svc().runSession(
          { ...request, parentSessionId: request.parentSessionId || callContext?.sessionId || "" },
          options,
        ),
      service: async () => svc(),
      channel: () => Promise.reject(new Error("an in-process plugin has no gRPC channel to the kernel")),
      withCallContext: (cc) => this.#kernelClient(cc),
    };
  }
}
