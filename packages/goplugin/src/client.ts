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
import { type Client, type CallOptions as GrpcCallOptions, Metadata } from "@grpc/grpc-js";
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
) => AsyncGenerator<MessageShape<O>, void, undefined>;

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

/** One connection a call runs on, with the hooks of whoever owns it. */
export interface Lease {
  client: Client;
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
      const call = lease.client.makeUnaryRequest(
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

function serverStream(transport: Transport, method: DescMethod): ServerStreamFn<DescMessage, DescMessage> {
  const def = serviceDefinition(method.parent)[method.localName]!;
  const path = methodPath(method.parent, method.name);
  return async function* stream(request, options) {
    const signal = options?.signal;
    if (signal?.aborted) throw abortReason(signal);
    const lease = await transport.acquire();
    if (signal?.aborted) throw abortReason(signal);
    const call = lease.client.makeServerStreamRequest(
      path,
      def.requestSerialize,
      def.responseDeserialize as (b: Buffer) => MessageShape<DescMessage>,
      toMessage(method.input, request),
      metadataOf(options),
      grpcOptions(options),
    );
    // Errors surface through the iterator; this listener only keeps an error that
    // arrives while nobody iterates from becoming an uncaught exception.
    call.on("error", () => {});
    let override: Error | undefined;
    let finished = false;
    const abort = (reason: Error) => {
      override ??= reason;
      call.cancel();
    };
    const onAbort = () => abort(abortReason(signal!));
    signal?.addEventListener("abort", onAbort, { once: true });
    const untrack = lease.track?.(abort) ?? (() => {});
    try {
      for await (const message of call) {
        if (override) break;
        yield message as MessageShape<DescMessage>;
      }
      finished = true;
    } catch (err) {
      finished = true;
      if (override) throw override;
      const mapped = lease.mapError ? await lease.mapError(err as Error, path) : err;
      throw toRpcError(mapped, path);
    } finally {
      untrack();
      signal?.removeEventListener("abort", onAbort);
      // The consumer stopped early (break/return): cancel the call on the wire.
      if (!finished) call.cancel();
    }
    if (override) throw override;
  };
}

/**
 * A typed client for `service`. Client-streaming and bidi methods are not wrapped
 * (no category service uses them); use grpc-js directly for those.
 */
export function createClient<S extends DescService>(
  service: S,
  transport: Transport | Client,
): ServiceClient<S> {
  const t: Transport = "acquire" in transport ? transport : { acquire: () => ({ client: transport }) };
  const client: Record<string, unknown> = {};
  for (const method of service.methods) {
    if (method.methodKind === "unary") client[method.localName] = unary(t, method);
    else if (method.methodKind === "server_streaming") client[method.localName] = serverStream(t, method);
  }
  return client as ServiceClient<S>;
}
