// The kernel's telemetry port: spans, metrics and log records as the loop and the hook
// dispatcher emit them. This file names no OpenTelemetry type, so the discarding backend
// (telemetry off, replay, tests) loads no SDK code at all; otel.ts is the SDK-backed one,
// imported only when telemetry is on (index.ts).
import type { KernelLogRecord } from "../log.ts";

export type TelemetryValue = string | number | boolean;
export type TelemetryAttrs = Readonly<Record<string, TelemetryValue | undefined>>;

/** A span the caller is inside of. */
export interface SpanHandle {
  set(attrs: TelemetryAttrs): void;
  /** Marks the span failed: status ERROR and `error.type` = the spec's error category. */
  fail(category: string, message?: string): void;
}

/** A span started now and ended by whoever holds it (an Invoke that outlives a call frame). */
export interface OpenSpan extends SpanHandle {
  /** Runs `fn` with this span as the current one (its children nest under it). */
  within<T>(fn: () => T): T;
  end(): void;
}

/** The W3C trace context (`traceparent`, `tracestate`) carried across a process or worker boundary. */
export type TraceCarrier = Record<string, string>;

/** Counters: monotonic sums. */
export type CounterName =
  | "agent.session.count"
  | "agent.token.usage"
  | "agent.cost.usage"
  | "agent.tool.calls"
  | "agent.approvals"
  | "agent.model.retries"
  | "agent.compactions";

/** Histograms (seconds). */
export type HistogramName = "agent.session.duration" | "agent.model.latency" | "agent.model.ttft";

export interface Telemetry {
  /** False for the discarding backend: callers may skip building attributes. */
  readonly active: boolean;
  /** Whether prompt and completion text may be put on spans (the user opted in). */
  readonly recordContent: boolean;
  /** Runs `fn` inside a new child of the current span; the span ends when `fn` (or its promise) settles. */
  span<T>(name: string, attrs: TelemetryAttrs, fn: (span: SpanHandle) => T): T;
  /** Starts a child of the current span without entering it. */
  start(name: string, attrs: TelemetryAttrs): OpenSpan;
  /** The current span's context for a plugin or child process (empty when there is none). */
  carrier(): TraceCarrier;
  /** Runs `fn` with a remote parent (a carrier another process sent). */
  withParent<T>(carrier: TraceCarrier | undefined, fn: () => T): T;
  add(counter: CounterName, value: number, attrs: TelemetryAttrs): void;
  record(histogram: HistogramName, seconds: number, attrs: TelemetryAttrs): void;
  /** A kernel log record (already masked), bridged with the current trace context. */
  log(record: KernelLogRecord): void;
  /** Flushes what is queued and stops the exporters, within `boundMs`. */
  shutdown(boundMs?: number): Promise<void>;
}

const noSpan: OpenSpan = {
  set() {},
  fail() {},
  within: (fn) => fn(),
  end() {},
};

/** The discarding backend: no exporter, no SDK, nothing recorded. */
export const noTelemetry: Telemetry = {
  active: false,
  recordContent: false,
  span: (_name, _attrs, fn) => fn(noSpan),
  start: () => noSpan,
  carrier: () => ({}),
  withParent: (_carrier, fn) => fn(),
  add() {},
  record() {},
  log() {},
  shutdown: async () => {},
};
