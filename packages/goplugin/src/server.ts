// Typed gRPC service implementations from protobuf-es descriptors. Unary methods are
// plain async functions, server-streaming methods async generators; a call the client
// cancels aborts `ctx.signal`, which implementations treat as ordinary control flow.
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  isMessage,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  type handleServerStreamingCall,
  type handleUnaryCall,
  type Metadata,
  type ServerUnaryCall,
  type ServerWritableStream,
  status as Status,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { CodedError } from "@pluggableharness/protocol/coded-error";
import { RpcError } from "./errors.ts";

/** What every handler receives besides the request. */
export interface HandlerContext {
  /** Aborted when the client cancels the call or its deadline passes. */
  signal: AbortSignal;
  metadata: Metadata;
  /** The method being served. */
  method: DescMethod;
}

type UnaryImpl<I extends DescMessage, O extends DescMessage, C> = (
  request: MessageShape<I>,
  ctx: C,
) => Promise<MessageInitShape<O>> | MessageInitShape<O>;

type ServerStreamImpl<I extends DescMessage, O extends DescMessage, C> = (
  request: MessageShape<I>,
  ctx: C,
) => AsyncIterable<MessageInitShape<O>>;

/** An implementation object keyed by method localName; any method may be left out. */
export type ServiceImpl<S extends DescService, C = HandlerContext> = {
  [K in keyof S["method"]]?: S["method"][K] extends {
    methodKind: "unary";
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? UnaryImpl<I, O, C>
    : S["method"][K] extends {
          methodKind: "server_streaming";
          input: infer I extends DescMessage;
          output: infer O extends DescMessage;
        }
      ? ServerStreamImpl<I, O, C>
      : never;
};

/** Builds a handler's context from the base one (the SDK adds its kernel client). */
export type ContextFactory<C> = (base: HandlerContext, request: unknown) => C;

export interface ImplementOptions<C> {
  context?: ContextFactory<C>;
  /** Called with errors thrown by implementations (not with cancellations). */
  onError?: (error: unknown, method: DescMethod) => void;
}

/** An error an implementation throws to choose the gRPC status. */
export class StatusError extends CodedError<number> {
  override readonly name = "StatusError";
}

function toStatus(err: unknown): { code: number; details: string } {
  if (err instanceof StatusError || err instanceof RpcError) return { code: err.code, details: err.message };
  if (err instanceof Error) return { code: Status.INTERNAL, details: err.message || err.name };
  return { code: Status.INTERNAL, details: String(err) };
}

function toMessage<D extends DescMessage>(desc: D, value: MessageInitShape<D>): MessageShape<D> {
  return isMessage(value, desc) ? (value as MessageShape<D>) : create(desc, value);
}

/**
 * The handler context of one call. grpc-js reports every call as "cancelled" when its
 * stream closes, answered or not, so the listener is removed once the answer is sent;
 * and most unary handlers never look at their signal, so its AbortController (and the
 * DOMException it aborts with) is only made when `signal` is read.
 */
function baseContext(
  call: ServerUnaryCall<unknown, unknown> | ServerWritableStream<unknown, unknown>,
  method: DescMethod,
): { ctx: HandlerContext; finish: () => void } {
  let controller: AbortController | undefined;
  let cancelled = false;
  const reason = () => new DOMException("call cancelled by the client", "AbortError");
  const onCancelled = () => {
    cancelled = true;
    controller?.abort(reason());
  };
  call.once("cancelled", onCancelled);
  const ctx: HandlerContext = {
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (cancelled) controller.abort(reason());
      }
      return controller.signal;
    },
    metadata: call.metadata,
    method,
  };
  return { ctx, finish: () => call.off("cancelled", onCancelled) };
}

function isCancellation(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted && (err === signal.reason || (err instanceof Error && err.name === "AbortError"));
}

function unaryHandler<C>(
  method: DescMethod,
  fn: UnaryImpl<DescMessage, DescMessage, C>,
  opts: ImplementOptions<C>,
): handleUnaryCall<unknown, unknown> {
  return (call, callback) => {
    const { ctx, finish } = baseContext(call, method);
    const context = opts.context ? opts.context(ctx, call.request) : (ctx as C);
    Promise.resolve()
      .then(() => fn(call.request as MessageShape<DescMessage>, context))
      .then(
        (response) => {
          finish();
          callback(null, toMessage(method.output, response));
        },
        (err: unknown) => {
          if (!isCancellation(err, ctx.signal)) opts.onError?.(err, method);
          finish();
          callback(toStatus(err));
        },
      );
  };
}

function waitForDrain(call: ServerWritableStream<unknown, unknown>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    call.on("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

function serverStreamHandler<C>(
  method: DescMethod,
  fn: ServerStreamImpl<DescMessage, DescMessage, C>,
  opts: ImplementOptions<C>,
): handleServerStreamingCall<unknown, unknown> {
  return async (call) => {
    const { ctx, finish } = baseContext(call, method);
    const context = opts.context ? opts.context(ctx, call.request) : (ctx as C);
    let iterator: AsyncIterator<MessageInitShape<DescMessage>> | undefined;
    try {
      iterator = fn(call.request as MessageShape<DescMessage>, context)[Symbol.asyncIterator]();
      for (;;) {
        if (ctx.signal.aborted) break;
        const next = await iterator.next();
        if (next.done) break;
        if (ctx.signal.aborted) break;
        if (!call.write(toMessage(method.output, next.value))) await waitForDrain(call, ctx.signal);
      }
      if (!ctx.signal.aborted) {
        finish();
        call.end();
      }
    } catch (err) {
      if (ctx.signal.aborted) return; // the client went away: nothing to report
      opts.onError?.(err, method);
      call.emit("error", toStatus(err));
    } finally {
      // Runs the generator's finally blocks when the loop stopped early.
      if (ctx.signal.aborted && iterator?.return) {
        await Promise.resolve(iterator.return(undefined)).catch(() => {});
      }
    }
  };
}

/** grpc-js handlers for `impl`; methods left out answer UNIMPLEMENTED. */
export function implement<S extends DescService, C = HandlerContext>(
  service: S,
  impl: ServiceImpl<S, C>,
  opts: ImplementOptions<C> = {},
): UntypedServiceImplementation {
  const handlers: UntypedServiceImplementation = {};
  const fns = impl as Record<string, unknown>;
  for (const method of service.methods) {
    const fn = fns[method.localName];
    if (fn === undefined) continue;
    if (typeof fn !== "function")
      throw new TypeError(`${service.typeName}.${method.name} must be a function`);
    if (method.methodKind === "unary") {
      handlers[method.localName] = unaryHandler(method, fn as UnaryImpl<DescMessage, DescMessage, C>, opts);
    } else if (method.methodKind === "server_streaming") {
      handlers[method.localName] = serverStreamHandler(
        method,
        fn as ServerStreamImpl<DescMessage, DescMessage, C>,
        opts,
      );
    } else {
      throw new TypeError(
        `${service.typeName}.${method.name}: ${method.methodKind} methods are not supported here`,
      );
    }
  }
  for (const key of Object.keys(fns)) {
    if (!service.methods.some((m) => m.localName === key)) {
      throw new TypeError(`${service.typeName} has no method ${JSON.stringify(key)}`);
    }
  }
  return handlers;
}
