// go-plugin's GRPCBroker in non-multiplexed mode. One StartStream carries ConnInfo
// messages both ways: a side that serves an extra gRPC endpoint announces
// {service_id, network, address}; the other side waits for that ID and dials it.
import { create } from "@bufbuild/protobuf";
import type { ConnInfo } from "@pluggableharness/protocol/goplugin";
import { ConnInfoSchema } from "@pluggableharness/protocol/goplugin";
import { BROKER_TIMEOUT_MS } from "./constants.ts";

/** The minimal duplex both grpc-js call objects provide for StartStream. */
export interface ConnInfoStream {
  write(message: ConnInfo): boolean;
  end(): void;
  on(event: "data", listener: (message: ConnInfo) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  on(event: "end" | "close", listener: () => void): unknown;
}

export class BrokerClosedError extends Error {
  readonly code = "broker_closed";
  constructor() {
    super("the go-plugin broker stream is closed");
    this.name = "BrokerClosedError";
  }
}

export class BrokerTimeoutError extends Error {
  readonly code = "broker_timeout";
  readonly serviceId: number;
  constructor(serviceId: number, timeoutMs: number) {
    super(`no broker connection info for service ID ${serviceId} within ${timeoutMs} ms`);
    this.name = "BrokerTimeoutError";
    this.serviceId = serviceId;
  }
}

interface Waiter {
  resolve: (info: ConnInfo) => void;
  reject: (err: Error) => void;
}

export interface BrokerOptions {
  /**
   * IDs whose ConnInfo is kept until claimed instead of being dropped after the
   * broker timeout (go-plugin's behaviour); used for the fixed kernel callback ID.
   */
  retainIds?: readonly number[];
  unclaimedTimeoutMs?: number;
}

export class Broker {
  private stream: ConnInfoStream | undefined;
  private readonly outbox: ConnInfo[] = [];
  private readonly received = new Map<number, { info: ConnInfo; timer?: NodeJS.Timeout }>();
  private readonly waiters = new Map<number, Waiter[]>();
  private readonly retain: ReadonlySet<number>;
  private readonly unclaimedTimeoutMs: number;
  private closed = false;
  private readonly closeListeners: Array<(err?: Error) => void> = [];

  constructor(opts: BrokerOptions = {}) {
    this.retain = new Set(opts.retainIds ?? []);
    this.unclaimedTimeoutMs = opts.unclaimedTimeoutMs ?? BROKER_TIMEOUT_MS;
  }

  /** Binds the broker to an open StartStream (either end). */
  attach(stream: ConnInfoStream): void {
    if (this.closed) {
      stream.end();
      return;
    }
    if (this.stream) throw new Error("broker stream already attached");
    this.stream = stream;
    stream.on("data", (info) => this.receive(info));
    stream.on("error", (err) => this.close(err));
    stream.on("end", () => this.close());
    for (const info of this.outbox.splice(0)) stream.write(info);
  }

  get attached(): boolean {
    return this.stream !== undefined && !this.closed;
  }

  /** Announces an endpoint this side serves under `serviceId`. */
  announce(serviceId: number, network: "unix" | "tcp", address: string): void {
    if (this.closed) throw new BrokerClosedError();
    const info = create(ConnInfoSchema, { serviceId, network, address });
    if (this.stream) this.stream.write(info);
    else this.outbox.push(info);
  }

  /** Waits for the peer to announce `serviceId`. */
  waitFor(serviceId: number, timeoutMs: number = BROKER_TIMEOUT_MS): Promise<ConnInfo> {
    const have = this.received.get(serviceId);
    if (have) {
      if (!this.retain.has(serviceId)) {
        clearTimeout(have.timer);
        this.received.delete(serviceId);
      }
      return Promise.resolve(have.info);
    }
    if (this.closed) return Promise.reject(new BrokerClosedError());
    return new Promise<ConnInfo>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.removeWaiter(serviceId, waiter);
        reject(new BrokerTimeoutError(serviceId, timeoutMs));
      }, timeoutMs);
      const waiter: Waiter = {
        resolve: (info) => {
          clearTimeout(timer);
          resolve(info);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      const list = this.waiters.get(serviceId) ?? [];
      list.push(waiter);
      this.waiters.set(serviceId, list);
    });
  }

  /** Called once when the stream ends or fails (or close() is called). */
  onClose(listener: (err?: Error) => void): void {
    if (this.closed) listener();
    else this.closeListeners.push(listener);
  }

  close(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    for (const { timer } of this.received.values()) clearTimeout(timer);
    this.received.clear();
    for (const list of this.waiters.values()) for (const w of list) w.reject(new BrokerClosedError());
    this.waiters.clear();
    try {
      this.stream?.end();
    } catch {
      // already torn down
    }
    for (const l of this.closeListeners.splice(0)) l(err);
  }

  private receive(info: ConnInfo): void {
    // Knocks belong to multiplexed mode, which this broker does not offer.
    if (info.knock?.knock) {
      this.stream?.write(
        create(ConnInfoSchema, {
          serviceId: info.serviceId,
          knock: { knock: true, ack: false, error: "multiplexed broker connections are not supported" },
        }),
      );
      return;
    }
    const retained = this.retain.has(info.serviceId);
    const list = this.waiters.get(info.serviceId) ?? [];
    if (!retained && list.length > 0) {
      // go-plugin semantics: one announcement satisfies one dial.
      list.shift()!.resolve(info);
      if (list.length === 0) this.waiters.delete(info.serviceId);
      return;
    }
    this.waiters.delete(info.serviceId);
    for (const w of list) w.resolve(info);
    const prev = this.received.get(info.serviceId);
    clearTimeout(prev?.timer);
    const entry: { info: ConnInfo; timer?: NodeJS.Timeout } = { info };
    if (!retained) {
      // Unclaimed announcements expire, as in go-plugin.
      entry.timer = setTimeout(() => this.received.delete(info.serviceId), this.unclaimedTimeoutMs);
      entry.timer.unref();
    }
    this.received.set(info.serviceId, entry);
  }

  private removeWaiter(serviceId: number, waiter: Waiter): void {
    const list = this.waiters.get(serviceId);
    if (!list) return;
    const i = list.indexOf(waiter);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.waiters.delete(serviceId);
  }
}
