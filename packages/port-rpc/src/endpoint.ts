// One side of a MessagePort speaking gRPC-shaped calls. `channel` makes calls with the
// two grpc-js Client methods the typed clients use (so `createClient` from goplugin works
// on it unchanged); `server` serves grpc-js handlers registered with `addService`, exactly
// the handlers `implement()` builds for a grpc-js Server. Both directions share the port:
// the kernel calls the plugin's services and the plugin calls the kernel's callbacks.
// Besides calls: notifications, request/reply control messages and a ping answered by the
// receiving event loop, which is how a host notices a plugin whose loop is blocked.
import {
  type CallOptions as GrpcCallOptions,
  Metadata,
  type MethodDefinition,
  type ServiceDefinition,
  type ServiceError,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import { MiniEmitter } from "./emitter.ts";
import {
  asBuffer,
  BATCH,
  CALL,
  CANCEL,
  Code,
  CREDIT,
  DATA,
  END,
  type Frame,
  NOTIFY,
  PING,
  PONG,
  REPLY,
  REQUEST,
  STATUS,
  STREAM_WINDOW,
  transferOf,
  UNARY,
} from "./frames.ts";

/** The MessagePort surface used (node:worker_threads MessagePort, or parentPort). */
export interface PortLike {
  postMessage(value: unknown, transferList?: readonly ArrayBuffer[]): void;
  on(event: "message", listener: (value: unknown) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  close(): void;
  unref?(): void;
}

/** Stream messages held for one post at most (the stream window is 64). */
const OUTBOX_LIMIT = 32;

const STATUS_NAMES: Record<number, string> = {
  0: "OK",
  1: "CANCELLED",
  2: "UNKNOWN",
  3: "INVALID_ARGUMENT",
  4: "DEADLINE_EXCEEDED",
  5: "NOT_FOUND",
  6: "ALREADY_EXISTS",
  7: "PERMISSION_DENIED",
  8: "RESOURCE_EXHAUSTED",
  9: "FAILED_PRECONDITION",
  10: "ABORTED",
  11: "OUT_OF_RANGE",
  12: "UNIMPLEMENTED",
  13: "INTERNAL",
  14: "UNAVAILABLE",
  15: "DATA_LOSS",
  16: "UNAUTHENTICATED",
};

/** A grpc-js-shaped call error (code, details, metadata), without a captured stack. */
export function statusError(code: number, details: string): ServiceError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    const err = new Error(`${code} ${STATUS_NAMES[code] ?? "UNKNOWN"}: ${details}`) as ServiceError;
    err.code = code;
    err.details = details;
    err.metadata = new Metadata();
    return err;
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function timeoutOf(options: GrpcCallOptions | undefined): number | undefined {
  const d = options?.deadline;
  if (d === undefined || d === Number.POSITIVE_INFINITY) return undefined;
  const at = d instanceof Date ? d.getTime() : Number(d);
  return Math.max(0, at - Date.now());
}

function metadataRecord(md: Metadata | undefined): Record<string, string> | undefined {
  if (!md) return undefined;
  const map = md.getMap();
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(map)) {
    if (typeof v !== "string") continue; // binary (-bin) metadata is not carried
    out ??= {};
    out[k] = v;
  }
  return out;
}

// ---- calls this side makes ---------------------------------------------------------------

interface ClientCall {
  onUnary(bytes: Uint8Array): void;
  onData(bytes: Uint8Array): void;
  onEnd(): void;
  onStatus(code: number, details: string): void;
}

/**
 * How a call this side made ends, once: by the server's answer, or by giving up on it (a
 * cancel, the deadline, an unreadable message), which tells the server and then settles
 * the call with that status on a later tick, as grpc-js does.
 */
class CallEnd {
  #done = false;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #endpoint: PortEndpoint;
  readonly #id: number;
  readonly #settle: (error: ServiceError) => void;
  constructor(
    endpoint: PortEndpoint,
    id: number,
    timeoutMs: number | undefined,
    settle: (error: ServiceError) => void,
  ) {
    this.#endpoint = endpoint;
    this.#id = id;
    this.#settle = settle;
    if (timeoutMs !== undefined) {
      this.#timer = setTimeout(() => this.abandon(Code.DEADLINE_EXCEEDED, "Deadline exceeded"), timeoutMs);
    }
  }

  get done(): boolean {
    return this.#done;
  }

  /** Marks the call over and forgets it; false when it already was. */
  close(): boolean {
    if (this.#done) return false;
    this.#done = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#endpoint.forgetCall(this.#id);
    return true;
  }

  abandon(code: number, details: string): void {
    if (this.#done) return;
    this.#endpoint.post([CANCEL, this.#id]);
    queueMicrotask(() => this.#settle(statusError(code, details)));
  }
}

class UnaryCall<Res> implements ClientCall {
  readonly id: number;
  private readonly deserialize: (b: Buffer) => Res;
  private readonly callback: (error: ServiceError | null, value?: Res) => void;
  readonly #end: CallEnd;
  constructor(
    endpoint: PortEndpoint,
    id: number,
    deserialize: (b: Buffer) => Res,
    callback: (error: ServiceError | null, value?: Res) => void,
    timeoutMs: number | undefined,
  ) {
    this.id = id;
    this.deserialize = deserialize;
    this.callback = callback;
    this.#end = new CallEnd(endpoint, id, timeoutMs, (error) => this.#finish(error));
  }

  #finish(error: ServiceError | null, value?: Res): void {
    if (this.#end.close()) this.callback(error, value);
  }

  cancel(): void {
    this.#end.abandon(Code.CANCELLED, "Cancelled on client");
  }

  onUnary(bytes: Uint8Array): void {
    let value: Res;
    try {
      value = this.deserialize(asBuffer(bytes));
    } catch (err) {
      this.#finish(statusError(Code.INTERNAL, `Failed to parse server response: ${(err as Error).message}`));
      return;
    }
    this.#finish(null, value);
  }

  onData(bytes: Uint8Array): void {
    this.onUnary(bytes);
  }

  onEnd(): void {
    this.#finish(statusError(Code.INTERNAL, "the server ended a unary call without an answer"));
  }

  onStatus(code: number, details: string): void {
    this.#finish(statusError(code, details));
  }
}

class StreamCall<Res> extends MiniEmitter implements ClientCall {
  readonly #end: CallEnd;
  #paused = false;
  #unacknowledged = 0;
  readonly id: number;
  private readonly endpoint: PortEndpoint;
  private readonly deserialize: (b: Buffer) => Res;
  constructor(
    endpoint: PortEndpoint,
    id: number,
    deserialize: (b: Buffer) => Res,
    timeoutMs: number | undefined,
  ) {
    super();
    this.endpoint = endpoint;
    this.id = id;
    this.deserialize = deserialize;
    this.#end = new CallEnd(endpoint, id, timeoutMs, (error) => this.#finish(error));
  }

  #finish(error: ServiceError | undefined): void {
    if (!this.#end.close()) return;
    if (error) this.emit("error", error);
    else this.emit("end");
  }

  cancel(): void {
    this.#end.abandon(Code.CANCELLED, "Cancelled on client");
  }

  pause(): this {
    this.#paused = true;
    return this;
  }

  resume(): this {
    this.#paused = false;
    this.#grant(1);
    return this;
  }

  #grant(atLeast: number): void {
    if (this.#end.done || this.#paused || this.#unacknowledged < atLeast) return;
    this.endpoint.post([CREDIT, this.id, this.#unacknowledged]);
    this.#unacknowledged = 0;
  }

  onUnary(bytes: Uint8Array): void {
    this.onData(bytes);
  }

  onData(bytes: Uint8Array): void {
    if (this.#end.done) return;
    let value: Res;
    try {
      value = this.deserialize(asBuffer(bytes));
    } catch (err) {
      this.#end.abandon(Code.INTERNAL, `Failed to parse server response: ${(err as Error).message}`);
      return;
    }
    this.#unacknowledged++;
    this.emit("data", value);
    this.#grant(STREAM_WINDOW / 2);
  }

  onEnd(): void {
    this.#finish(undefined);
  }

  onStatus(code: number, details: string): void {
    this.#finish(statusError(code, details));
  }
}

/** Calls over the port, with the grpc-js Client signatures `createClient` relies on. */
export class PortChannel {
  private readonly endpoint: PortEndpoint;
  constructor(endpoint: PortEndpoint) {
    this.endpoint = endpoint;
  }

  makeUnaryRequest<Req, Res>(
    method: string,
    serialize: (value: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    argument: Req,
    metadata: Metadata,
    options: GrpcCallOptions,
    callback: (error: ServiceError | null, value?: Res) => void,
  ): { cancel(): void } {
    const id = this.endpoint.nextId();
    const timeoutMs = timeoutOf(options);
    const call = new UnaryCall(this.endpoint, id, deserialize, callback, timeoutMs);
    this.endpoint.startCall(id, call, method, serialize(argument), metadataRecord(metadata), timeoutMs);
    return call;
  }

  makeServerStreamRequest<Req, Res>(
    method: string,
    serialize: (value: Req) => Buffer,
    deserialize: (bytes: Buffer) => Res,
    argument: Req,
    metadata: Metadata,
    options: GrpcCallOptions,
  ): StreamCall<Res> {
    const id = this.endpoint.nextId();
    const timeoutMs = timeoutOf(options);
    const call = new StreamCall(this.endpoint, id, deserialize, timeoutMs);
    this.endpoint.startCall(id, call, method, serialize(argument), metadataRecord(metadata), timeoutMs);
    return call;
  }

  /** For parity with grpc-js Client; the endpoint owns the port. */
  close(): void {}
}

// ---- calls this side serves --------------------------------------------------------------

interface Method {
  def: MethodDefinition<unknown, unknown>;
  // biome-ignore lint/suspicious/noExplicitAny: grpc-js handler signatures vary by kind
  handler: (...args: any[]) => unknown;
  streaming: boolean;
}

type StatusLike = { code?: number; details?: string; message?: string } | null | undefined;

/** A served call: the subset of grpc-js ServerUnaryCall / ServerWritableStream in use. */
class ServedCall extends MiniEmitter {
  cancelled = false;
  #done = false;
  #outstanding = 0;
  #blocked = false;
  #timer: NodeJS.Timeout | undefined;
  readonly id: number;
  readonly request: unknown;
  readonly metadata: Metadata;
  private readonly endpoint: PortEndpoint;
  private readonly def: MethodDefinition<unknown, unknown>;
  constructor(
    endpoint: PortEndpoint,
    id: number,
    request: unknown,
    metadata: Metadata,
    def: MethodDefinition<unknown, unknown>,
    timeoutMs: number | undefined,
  ) {
    super();
    this.endpoint = endpoint;
    this.id = id;
    this.request = request;
    this.metadata = metadata;
    this.def = def;
    if (timeoutMs !== undefined) this.#timer = setTimeout(() => this.cancelNow(), timeoutMs);
  }

  get done(): boolean {
    return this.#done;
  }

  getPeer(): string {
    return "port";
  }

  getDeadline(): number {
    return Number.POSITIVE_INFINITY;
  }

  getPath(): string {
    return this.def.path;
  }

  sendMetadata(): void {}

  /** The caller went away or the deadline passed. */
  cancelNow(): void {
    if (this.#done) return;
    this.cancelled = true;
    this.#settle();
    this.emit("cancelled", "cancelled");
  }

  #settle(): void {
    this.#done = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.endpoint.forgetServed(this.id);
  }

  answer(error: StatusLike, value: unknown): void {
    if (this.#done) return;
    if (error) {
      this.#fail(error);
      return;
    }
    let bytes: Buffer;
    try {
      bytes = this.def.responseSerialize(value);
    } catch (err) {
      this.#fail({ code: Code.INTERNAL, details: `cannot serialize the answer: ${(err as Error).message}` });
      return;
    }
    this.#settle();
    this.endpoint.post([UNARY, this.id, bytes], transferOf(bytes));
  }

  write(message: unknown): boolean {
    if (this.#done) return false;
    const bytes = this.def.responseSerialize(message);
    this.#outstanding++;
    this.endpoint.post([DATA, this.id, bytes], transferOf(bytes));
    if (this.#outstanding >= STREAM_WINDOW) this.#blocked = true;
    return !this.#blocked;
  }

  end(): void {
    if (this.#done) return;
    this.#settle();
    this.endpoint.post([END, this.id]);
  }

  credit(n: number): void {
    this.#outstanding = Math.max(0, this.#outstanding - n);
    if (this.#blocked && this.#outstanding < STREAM_WINDOW) {
      this.#blocked = false;
      this.emit("drain");
    }
  }

  // `implement()` reports a failed stream with call.emit("error", status).
  override emit(event: string, ...args: unknown[]): boolean {
    if (event === "error") {
      this.#fail(args[0] as StatusLike);
      return true;
    }
    return super.emit(event, ...args);
  }

  #fail(error: StatusLike): void {
    if (this.#done) return;
    this.#settle();
    const code = typeof error?.code === "number" && error.code !== Code.OK ? error.code : Code.UNKNOWN;
    this.endpoint.post([STATUS, this.id, code, error?.details ?? error?.message ?? ""]);
  }
}

/** Serves grpc-js handlers over the port, with the grpc-js Server method names used. */
export class PortServer {
  readonly #methods = new Map<string, Method>();
  #shuttingDown = false;
  #onIdle: (() => void) | undefined;
  private readonly endpoint: PortEndpoint;

  constructor(endpoint: PortEndpoint) {
    this.endpoint = endpoint;
  }

  addService(service: ServiceDefinition, implementation: UntypedServiceImplementation): void {
    for (const [name, def] of Object.entries(service) as Array<
      [string, MethodDefinition<unknown, unknown>]
    >) {
      const handler = implementation[name];
      if (!handler) continue;
      if (def.requestStream) continue; // client and bidi streams are not carried over the port
      this.#methods.set(def.path, {
        def,
        handler: handler as Method["handler"],
        streaming: def.responseStream,
      });
    }
  }

  /** Refuses new calls and calls back once the calls being served have answered. */
  tryShutdown(callback: () => void): void {
    this.#shuttingDown = true;
    if (this.endpoint.servedCount() === 0) callback();
    else this.#onIdle = callback;
  }

  /** Cancels every call being served. */
  forceShutdown(): void {
    this.#shuttingDown = true;
    this.endpoint.cancelServed();
    const cb = this.#onIdle;
    this.#onIdle = undefined;
    cb?.();
  }

  /** @internal */
  idle(): void {
    const cb = this.#onIdle;
    if (!cb || this.endpoint.servedCount() > 0) return;
    this.#onIdle = undefined;
    cb();
  }

  /** @internal */
  serve(
    id: number,
    path: string,
    bytes: Uint8Array,
    md: Record<string, string> | undefined,
    timeoutMs: number | undefined,
  ): ServedCall | undefined {
    if (this.#shuttingDown) {
      this.endpoint.post([STATUS, id, Code.UNAVAILABLE, "the plugin is shutting down"]);
      return undefined;
    }
    const method = this.#methods.get(path);
    if (!method) {
      this.endpoint.post([
        STATUS,
        id,
        Code.UNIMPLEMENTED,
        `The server does not implement the method ${path}`,
      ]);
      return undefined;
    }
    let request: unknown;
    try {
      request = method.def.requestDeserialize(asBuffer(bytes));
    } catch (err) {
      this.endpoint.post([STATUS, id, Code.INTERNAL, `Failed to parse request: ${(err as Error).message}`]);
      return undefined;
    }
    const metadata = new Metadata();
    if (md) for (const [k, v] of Object.entries(md)) metadata.set(k, v);
    const call = new ServedCall(this.endpoint, id, request, metadata, method.def, timeoutMs);
    try {
      if (method.streaming) method.handler(call);
      else method.handler(call, (err: StatusLike, value: unknown) => call.answer(err, value));
    } catch (err) {
      call.answer({ code: Code.UNKNOWN, details: (err as Error).message }, undefined);
    }
    return call.done ? undefined : call;
  }
}

// ---- the endpoint ------------------------------------------------------------------------

type RequestHandler = (payload: unknown) => unknown;

export class PortEndpoint {
  readonly channel: PortChannel;
  readonly server: PortServer;
  readonly #port: PortLike;
  readonly #calls = new Map<number, ClientCall>();
  readonly #served = new Map<number, ServedCall>();
  readonly #requests = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  readonly #requestHandlers = new Map<string, RequestHandler>();
  readonly #notifyHandlers = new Map<string, (payload: unknown) => void>();
  readonly #pongs = new Map<number, () => void>();
  readonly #closeListeners: Array<() => void> = [];
  #nextId = 1;
  #closed = false;
  #outbox: Frame[] = [];
  #outboxTransfer: ArrayBuffer[] = [];
  #flushSoon: NodeJS.Immediate | undefined;
  /** How many calls this side has given up on (cancelled, deadline passed) so far. */
  cancelCount = 0;

  constructor(port: PortLike) {
    this.#port = port;
    this.channel = new PortChannel(this);
    this.server = new PortServer(this);
    port.on("message", (value) => this.#dispatch(value as Frame));
    port.on("close", () => this.#shut());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** @internal */
  nextId(): number {
    return this.#nextId++;
  }

  /** @internal */
  post(frame: Frame, transfer?: readonly ArrayBuffer[]): void {
    if (this.#closed) return;
    if (frame[0] === CANCEL) this.cancelCount++;
    // Stream messages produced in one turn of the event loop travel in one post (a post
    // costs several microseconds on each side); anything else flushes what is waiting
    // and goes at once, so answers and stream ends are never delayed.
    if (frame[0] === DATA) {
      this.#outbox.push(frame);
      if (transfer) for (const t of transfer) this.#outboxTransfer.push(t);
      if (this.#outbox.length >= OUTBOX_LIMIT) this.#flush();
      else this.#flushSoon ??= setImmediate(() => this.#flush());
      return;
    }
    if (this.#outbox.length > 0) {
      this.#outbox.push(frame);
      if (transfer) for (const t of transfer) this.#outboxTransfer.push(t);
      this.#flush();
      return;
    }
    if (transfer && transfer.length > 0) this.#port.postMessage(frame, transfer);
    else this.#port.postMessage(frame);
  }

  #flush(): void {
    if (this.#flushSoon) {
      clearImmediate(this.#flushSoon);
      this.#flushSoon = undefined;
    }
    const frames = this.#outbox;
    if (frames.length === 0 || this.#closed) return;
    const transfer = this.#outboxTransfer;
    this.#outbox = [];
    this.#outboxTransfer = [];
    const frame: Frame = frames.length === 1 ? frames[0]! : [BATCH, frames];
    if (transfer.length > 0) this.#port.postMessage(frame, transfer);
    else this.#port.postMessage(frame);
  }

  /** @internal */
  startCall(
    id: number,
    call: ClientCall,
    path: string,
    bytes: Buffer,
    md: Record<string, string> | undefined,
    timeoutMs: number | undefined,
  ): void {
    if (this.#closed) {
      queueMicrotask(() => call.onStatus(Code.UNAVAILABLE, "the port is closed"));
      return;
    }
    this.#calls.set(id, call);
    this.post([CALL, id, path, bytes, md, timeoutMs], transferOf(bytes));
  }

  /** @internal */
  forgetCall(id: number): void {
    this.#calls.delete(id);
  }

  /** @internal */
  forgetServed(id: number): void {
    this.#served.delete(id);
    if (this.#served.size === 0) this.server.idle();
  }

  /** @internal */
  servedCount(): number {
    return this.#served.size;
  }

  /** @internal */
  cancelServed(): void {
    for (const call of [...this.#served.values()]) call.cancelNow();
  }

  /** Calls in flight that this side made. */
  get pendingCalls(): number {
    return this.#calls.size;
  }

  /** A one-way control message. */
  notify(name: string, payload?: unknown): void {
    this.post([NOTIFY, name, payload]);
  }

  onNotify(name: string, handler: (payload: unknown) => void): void {
    this.#notifyHandlers.set(name, handler);
  }

  /** A control request answered by the other side's `handle(name, ...)`. */
  request(name: string, payload?: unknown): Promise<unknown> {
    if (this.#closed) return Promise.reject(new Error("the port is closed"));
    const id = this.nextId();
    return new Promise((resolve, reject) => {
      this.#requests.set(id, { resolve, reject });
      this.post([REQUEST, id, name, payload]);
    });
  }

  handle(name: string, handler: RequestHandler): void {
    this.#requestHandlers.set(name, handler);
  }

  /** Resolves when the other side's event loop has answered a ping. */
  ping(): Promise<void> {
    const n = this.nextId();
    return new Promise((resolve) => {
      this.#pongs.set(n, resolve);
      this.post([PING, n]);
    });
  }

  onClose(listener: () => void): void {
    if (this.#closed) queueMicrotask(listener);
    else this.#closeListeners.push(listener);
  }

  /** Closes the port: calls in flight fail as UNAVAILABLE, served calls are cancelled. */
  close(): void {
    if (this.#closed) return;
    this.#flush();
    this.#shut();
    try {
      this.#port.close();
    } catch {
      // already closed
    }
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#flushSoon) clearImmediate(this.#flushSoon);
    this.#outbox = [];
    this.#outboxTransfer = [];
    for (const call of [...this.#calls.values()]) call.onStatus(Code.UNAVAILABLE, "the port closed");
    this.#calls.clear();
    for (const call of [...this.#served.values()]) call.cancelNow();
    for (const r of this.#requests.values()) r.reject(new Error("the port closed"));
    this.#requests.clear();
    for (const l of this.#closeListeners.splice(0)) l();
  }

  #dispatch(frame: Frame): void {
    switch (frame[0]) {
      case BATCH:
        for (const f of frame[1]) this.#dispatch(f);
        return;
      case DATA:
        this.#calls.get(frame[1])?.onData(frame[2]);
        return;
      case CREDIT:
        this.#served.get(frame[1])?.credit(frame[2]);
        return;
      case UNARY:
        this.#calls.get(frame[1])?.onUnary(frame[2]);
        return;
      case END:
        this.#calls.get(frame[1])?.onEnd();
        return;
      case STATUS:
        this.#calls.get(frame[1])?.onStatus(frame[2], frame[3]);
        return;
      case CALL: {
        const call = this.server.serve(frame[1], frame[2], frame[3], frame[4], frame[5]);
        if (call) this.#served.set(frame[1], call);
        return;
      }
      case CANCEL:
        this.#served.get(frame[1])?.cancelNow();
        return;
      case PING:
        this.post([PONG, frame[1]]);
        return;
      case PONG: {
        const done = this.#pongs.get(frame[1]);
        this.#pongs.delete(frame[1]);
        done?.();
        return;
      }
      case NOTIFY:
        this.#notifyHandlers.get(frame[1])?.(frame[2]);
        return;
      case REQUEST:
        void this.#answer(frame[1], frame[2], frame[3]);
        return;
      case REPLY: {
        const r = this.#requests.get(frame[1]);
        if (!r) return;
        this.#requests.delete(frame[1]);
        if (frame[2]) r.resolve(frame[3]);
        else r.reject(new Error(String(frame[3])));
        return;
      }
    }
  }

  async #answer(id: number, name: string, payload: unknown): Promise<void> {
    const handler = this.#requestHandlers.get(name);
    try {
      if (!handler) throw new Error(`no handler for ${JSON.stringify(name)}`);
      this.post([REPLY, id, true, await handler(payload)]);
    } catch (err) {
      this.post([REPLY, id, false, (err as Error).message]);
    }
  }
}
