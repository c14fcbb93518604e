// Typed gRPC clients from protobuf-es service descriptors: unary methods return
// Promises, server-streaming methods return AsyncIterables, and both cancel the
// underlying gRPC call when the caller's AbortSignal fires.
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  isMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { type CallOptions as GrpcCallOptions, Metadata, type ServiceError } from "@grpc/grpc-js";
import { methodPath, serviceDefinition } from "@pluggableharness/protocol/grpc";
import { isGrpcError, RpcError } from "./errors.ts";

export interface CallOptions {
  /** Aborting cancels the gRPC call; the call then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Milliseconds until the call fails with DEADLINE_EXCEEDED. */
  timeoutMs?: number;
  /** Extra request metadata. */
  metadata?: Record<string, string>;
}

type UnaryFn<I extends DescMessage, O extends DescMessage> = (
  request: MessageInitShape<I>,
  options?: CallOptions,
) => Promise<MessageShape<O>>;

type ServerStreamFn<I extends DescMessage, O extends DescMessage> = (
  request: MessageInitShape<I>,
  options?: CallOptions,
) => ResponseStream<MessageShape<O>>;

/** A typed client: one function per method, keyed by the method's localName. */
export type ServiceClient<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends {
    methodKind: "unary";
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? UnaryFn<I, O>
    : S["method"][K] extends {
          methodKind: "server_streaming";
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? ServerStreamFn<I, O>
      : never;
};

/** The response stream of a server-streaming call as grpc-js hands it out. */
export interface StreamingCall<T> {
  on(event: "data", listener: (message: T) => void): unknown;
  on(event: "end", listener: () => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
  pause(): unknown;
  resume(): unknown;
  cancel(): void;
}

/**
 * What typed clients make calls on: a grpc-js `Client`, or any channel offering the same
 * two methods with grpc-js semantics (the worker transport's MessagePort channel).
 */
export interface CallChannel {
  makeUnaryRequest<Req, Res>(
    method: string,
    serialize: (value: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    argument: Req,
    metadata: Metadata,
    options: GrpcCallOptions,
    callback: (error: ServiceError | null, value?: Res) => void,
  ): { cancel(): void };
  makeServerStreamRequest<Req, Res>(
    method: string,
    serialize: (value: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    argument: Req,
    metadata: Metadata,
    options: GrpcCallOptions,
  ): StreamingCall<Res>;
}

/** One connection a call runs on, with the hooks of whoever owns it. */
export interface Lease {
  client: CallChannel;
  /**
   * Registers an in-flight call; `abort(reason)` must make it fail with `reason`.
   * Returns the function that unregisters it.
   */
  track?(abort: (reason: Error) => void): () => void;
  /** Turns a failed call's error into the error the caller sees. */
  mapError?(error: Error, method: string): Error | Promise<Error>;
}

/** Where calls get their connection (the runtime may launch a plugin first). */
export interface Transport {
  acquire(): Lease | Promise<Lease>;
}

export function toRpcError(err: unknown, method: string): Error {
  if (isGrpcError(err)) return new RpcError(err.code ?? 2, err.details ?? err.message, method);
  return err instanceof Error ? err : new Error(String(err));
}

function toMessage<D extends DescMessage>(desc: D, value: MessageInitShape<D>): MessageShape<D> {
  return isMessage(value, desc) ? (value as MessageShape<D>) : create(desc, value);
}

function grpcOptions(options: CallOptions | undefined): GrpcCallOptions {
  return options?.timeoutMs !== undefined ? { deadline: Date.now() + options.timeoutMs } : {};
}

function metadataOf(options: CallOptions | undefined): Metadata {
  const md = new Metadata();
  for (const [k, v] of Object.entries(options?.metadata ?? {})) md.set(k, v);
  return md;
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new DOMException("The operation was aborted", "AbortError");
}

function unary(transport: Transport, method: DescMethod): UnaryFn<DescMessage, DescMessage> {
  const def = serviceDefinition(method.parent)[method.localName]!;
  const path = methodPath(method.parent, method.name);
  return async (request, options) => {
    const signal = options?.signal;
    if (signal?.aborted) throw abortReason(signal);
    const lease = await transport.acquire();
    if (signal?.aborted) throw abortReason(signal);
    const message = toMessage(method.input, request);
    return new Promise((resolve, reject) => {
      let override: Error | undefined;
      // grpc-js captures a stack trace per call (new Error()) for the message of a failed
      // call; errors here are rebuilt from code and details, so that capture is turned off.
      const stackLimit = Error.stackTraceLimit;
      Error.stackTraceLimit = 0;
      let call: { cancel(): void };
      try {
        call = lease.client.makeUnaryRequest(
          path,
          def.requestSerialize,
          def.responseDeserialize as (b: Buffer) => MessageShape<DescMessage>,
          message,
          metadataOf(options),
          grpcOptions(options),
          (err, response) => {
            untrack();
            signal?.removeEventListener("abort", onAbort);
            if (override) return reject(override);
            if (err || response === undefined) {
              Promise.resolve(lease.mapError ? lease.mapError(err ?? new Error("empty response"), path) : err)
                .then((mapped) => reject(toRpcError(mapped, path)))
                .catch(reject);
              return;
            }
            resolve(response);
          },
        );
      } finally {
        Error.stackTraceLimit = stackLimit;
      }
      const abort = (reason: Error) => {
        override ??= reason;
        call.cancel();
      };
      const onAbort = () => abort(abortReason(signal!));
      signal?.addEventListener("abort", onAbort, { once: true });
      const untrack = lease.track?.(abort) ?? (() => {});
    });
  };
}

/** Messages buffered before the call is paused (HTTP/2 flow control then applies). */
const HIGH_WATER = 64;

/**
 * The response of a server-streaming call. Iterating pulls messages; breaking out of
 * the loop, `return()` or `cancel()` cancels the call on the wire.
 */
export interface ResponseStream<T> extends AsyncIterableIterator<T> {
  cancel(reason?: Error): void;
}

type Waiter<T> = { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void };

/**
 * A hand-rolled iterator over a grpc-js readable call: an async generator wrapping
 * the stream's own iterator costs about half the throughput in microtask hops.
 */
class CallIterator<T> implements ResponseStream<T> {
  private call: StreamingCall<T> | undefined;
  private starting: Promise<void> | undefined;
  private readonly queue: T[] = [];
  private waiter: Waiter<T> | undefined;
  private ended = false;
  private failure: Promise<Error> | undefined;
  private override: Error | undefined;
  private paused = false;
  private cleanup: () => void = () => {};
  private readonly start: (self: CallIterator<T>) => Promise<void>;

  constructor(start: (self: CallIterator<T>) => Promise<void>) {
    this.start = start;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** @internal called by start() once the call exists. */
  bind(call: StreamingCall<T>, cleanup: () => void, mapError: (e: Error) => Promise<Error>): void {
    this.call = call;
    this.cleanup = cleanup;
    call.on("data", (m: T) => {
      if (this.waiter) {
        const w = this.waiter;
        this.waiter = undefined;
        w.resolve({ value: m, done: false });
        return;
      }
      this.queue.push(m);
      if (this.queue.length >= HIGH_WATER && !this.paused) {
        this.paused = true;
        call.pause();
      }
    });
    call.on("end", () => this.finish());
    call.on("error", (err: Error) => {
      this.failure ??= this.override ? Promise.resolve(this.override) : mapError(err);
      this.finish();
    });
  }

  /** @internal */
  abort(reason: Error): void {
    if (this.ended) return;
    this.queue.length = 0; // nothing more is delivered after a cancellation
    this.override ??= reason;
    this.failure = Promise.resolve(this.override);
    this.call?.cancel();
    this.finish();
  }

  cancel(reason: Error = new DOMException("The operation was aborted", "AbortError")): void {
    if (!this.ended) this.abort(reason);
  }

  async next(): Promise<IteratorResult<T>> {
    if (!this.call) {
      this.starting ??= this.start(this);
      await this.starting;
    }
    const m = this.queue.shift();
    if (m !== undefined) {
      if (this.paused && this.queue.length < HIGH_WATER / 2) {
        this.paused = false;
        this.call?.resume();
      }
      return { value: m, done: false };
    }
    if (this.ended) {
      if (this.failure) throw await this.failure;
      return { value: undefined, done: true };
    }
    return new Promise<IteratorResult<T>>((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  async return(): Promise<IteratorResult<T>> {
    if (!this.ended) {
      // The consumer stopped early: cancel the call on the wire, quietly.
      this.ended = true;
      this.call?.cancel();
      this.cleanup();
    }
    this.queue.length = 0;
    return { value: undefined, done: true };
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.cleanup();
    const w = this.waiter;
    this.waiter = undefined;
    if (!w) return;
    if (this.failure) this.failure.then(w.reject, w.reject);
    else w.resolve({ value: undefined, done: true });
  }
}

function serverStream(transport: Transport, method: DescMethod): ServerStreamFn<DescMessage, DescMessage> {
  const def = serviceDefinition(method.parent)[method.localName]!;
  const path = methodPath(method.parent, method.name);
  return (request, options) => {
    const signal = options?.signal;
    const message = toMessage(method.input, request);
    return new CallIterator<MessageShape<DescMessage>>(async (self) => {
      if (signal?.aborted) throw abortReason(signal);
      const lease = await transport.acquire();
      if (signal?.aborted) throw abortReason(signal);
      const call = lease.client.makeServerStreamRequest(
        path,
        def.requestSerialize,
        def.responseDeserialize as (b: Buffer) => MessageShape<DescMessage>,
        message,
        metadataOf(options),
        grpcOptions(options),
      );
      const onAbort = () => self.abort(abortReason(signal!));
      signal?.addEventListener("abort", onAbort, { once: true });
      const untrack = lease.track?.((reason) => self.abort(reason)) ?? (() => {});
      self.bind(
        call,
        () => {
          untrack();
          signal?.removeEventListener("abort", onAbort);
        },
        async (err) => toRpcError(lease.mapError ? await lease.mapError(err, path) : err, path),
      );
    });
  };
}

/**
 * A typed client for `service`. Client-streaming and bidi methods are not wrapped
 * (no category service uses them); use grpc-js directly for those.
 */
export function createClient<S extends DescService>(
  service: S,
  transport: Transport | CallChannel,
): ServiceClient<S> {
  const t: Transport = "acquire" in transport ? transport : { acquire: () => ({ client: transport }) };
  const client: Record<string, unknown> = {};
  for (const method of service.methods) {
    if (method.methodKind === "unary") client[method.localName] = unary(t, method);
    else if (method.methodKind === "server_streaming") client[method.localName] = serverStream(t, method);
  }
  return client as ServiceClient<S>;
}
