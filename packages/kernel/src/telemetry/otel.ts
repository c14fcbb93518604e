// The SDK-backed telemetry: the official OpenTelemetry JS SDK, configured by the export
// plan (settings.ts). Loaded only through index.ts's dynamic import, so a run with
// telemetry off never reads this file or any SDK module.
//
// Never in the way: spans and log records go through batch processors with bounded
// queues (a full queue drops, the turn never waits), metrics through a periodic reader;
// exports run in the background with a short timeout; the first failed export warns once;
// shutdown flushes within a bound. No global OpenTelemetry state is registered: the
// kernel's spans nest through its own AsyncLocalStorage context manager.
import * as grpc from "@grpc/grpc-js";
import {
  type Attributes,
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  SeverityNumber,
  type Span,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { type ExportResult, ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPLogExporter as GrpcLogs } from "@opentelemetry/exporter-logs-otlp-grpc";
import { OTLPLogExporter as HttpLogs } from "@opentelemetry/exporter-logs-otlp-proto";
import { OTLPMetricExporter as GrpcMetrics } from "@opentelemetry/exporter-metrics-otlp-grpc";
import { OTLPMetricExporter as HttpMetrics } from "@opentelemetry/exporter-metrics-otlp-proto";
import { OTLPTraceExporter as GrpcTraces } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPTraceExporter as HttpTraces } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchLogRecordProcessor, LoggerProvider } from "@opentelemetry/sdk-logs";
import { MeterProvider, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import type { KernelLogLevel, KernelLogRecord } from "../log.ts";
import { KERNEL_VERSION } from "../version.ts";
import { errorType } from "./error-type.ts";
import type { ExportPlan } from "./settings.ts";
import type {
  CounterName,
  HistogramName,
  OpenSpan,
  SpanHandle,
  Telemetry,
  TelemetryAttrs,
  TraceCarrier,
} from "./telemetry.ts";

/** How long one export may take before it is given up (a slow collector). */
const EXPORT_TIMEOUT_MS = 3_000;
/** Queued spans or log records beyond this are dropped rather than held. */
const MAX_QUEUE = 2_048;
const SCOPE = "pluggableharness.kernel";

const SEVERITY: Record<KernelLogLevel, SeverityNumber> = {
  trace: SeverityNumber.TRACE,
  debug: SeverityNumber.DEBUG,
  info: SeverityNumber.INFO,
  warn: SeverityNumber.WARN,
  error: SeverityNumber.ERROR,
  fatal: SeverityNumber.FATAL,
};

const COUNTERS: Record<CounterName, { unit: string; description: string }> = {
  "agent.session.count": { unit: "{session}", description: "Sessions started" },
  "agent.token.usage": {
    unit: "{token}",
    description: "Tokens by type (input, output, cache_read, cache_write)",
  },
  "agent.cost.usage": { unit: "USD", description: "Model cost, as the session's cost ledger records it" },
  "agent.tool.calls": { unit: "{call}", description: "Tool calls by tool and outcome" },
  "agent.approvals": { unit: "{decision}", description: "Plan item decisions by decision and decider" },
  "agent.model.retries": { unit: "{retry}", description: "Model-call retries by error category" },
  "agent.compactions": { unit: "{compaction}", description: "Context compactions" },
};

const HISTOGRAMS: Record<HistogramName, string> = {
  "agent.session.duration": "Wall-clock length of a session's run",
  "agent.model.latency": "Duration of one model-call attempt",
  "agent.model.ttft": "Time from request to the first streamed event",
};

/** Traces off while metrics or logs are on: spans cost nothing. */
const NO_SPAN: OpenSpan = { set() {}, fail() {}, within: (fn) => fn(), end() {} };

const SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Only defined values, as OTel attributes. */
function clean(attrs: TelemetryAttrs): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) out[k] = v;
  return out;
}

interface Exporter<T> {
  export(items: T, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

/** Wraps an exporter so its first failure is reported once, and none after it. */
// biome-ignore lint/suspicious/noExplicitAny: spans, metrics and log batches alike
function warnOnce<E extends Exporter<any>>(inner: E, onFailure: (error: Error | undefined) => void): E {
  const original = inner.export.bind(inner);
  inner.export = (items, done) =>
    original(items, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) onFailure(result.error);
      done(result);
    });
  return inner;
}

export function createOtelTelemetry(plan: ExportPlan, warn: (message: string) => void): Telemetry {
  const contexts = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  const resource = resourceFromAttributes({
    ...plan.resourceAttrs,
    "service.name": plan.serviceName,
    "service.version": KERNEL_VERSION,
  });
  let warned = false;
  const failed = (error: Error | undefined) => {
    if (warned) return;
    warned = true;
    // The endpoint only: headers (vendor keys) are never put in a message.
    warn(
      `telemetry: the OTLP collector at ${plan.endpoint} (${plan.protocol}) did not take an export${
        error?.message ? ` (${error.message.split("\n")[0]})` : ""
      }; the run goes on and later failures are not reported`,
    );
  };
  const grpcMetadata = () => {
    const m = new grpc.Metadata();
    for (const [k, v] of Object.entries(plan.headers)) m.set(k, v);
    return m;
  };
  const http = { headers: { ...plan.headers }, timeoutMillis: EXPORT_TIMEOUT_MS };
  const viaGrpc = (url: string) => ({ url, metadata: grpcMetadata(), timeoutMillis: EXPORT_TIMEOUT_MS });

  let tracerProvider: TracerProvider | undefined;
  if (plan.traces) {
    const exporter =
      plan.protocol === "grpc"
        ? new GrpcTraces(viaGrpc(plan.urls.traces))
        : new HttpTraces({ url: plan.urls.traces, ...http });
    tracerProvider = new TracerProvider({
      resource,
      sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(plan.samplingRatio) }),
      spanProcessors: [
        new BatchSpanProcessor({
          exporter: warnOnce(exporter, failed),
          maxQueueSize: MAX_QUEUE,
          maxExportBatchSize: 512,
          scheduledDelayMillis: 1_000,
          exportTimeoutMillis: EXPORT_TIMEOUT_MS,
        }),
      ],
    });
  }
  const tracer = tracerProvider?.getTracer(SCOPE, KERNEL_VERSION);

  let meterProvider: MeterProvider | undefined;
  const counters = new Map<string, { add(v: number, a: Attributes): void }>();
  const histograms = new Map<string, { record(v: number, a: Attributes): void }>();
  if (plan.metrics) {
    const exporter =
      plan.protocol === "grpc"
        ? new GrpcMetrics(viaGrpc(plan.urls.metrics))
        : new HttpMetrics({ url: plan.urls.metrics, ...http });
    meterProvider = new MeterProvider({
      resource,
      readers: [
        new PeriodicExportingMetricReader({
          exporter: warnOnce(exporter, failed),
          exportIntervalMillis: plan.exportIntervalMs,
          exportTimeoutMillis: Math.min(EXPORT_TIMEOUT_MS, plan.exportIntervalMs),
        }),
      ],
    });
    const meter = meterProvider.getMeter(SCOPE, KERNEL_VERSION);
    for (const [name, c] of Object.entries(COUNTERS)) counters.set(name, meter.createCounter(name, c));
    for (const [name, description] of Object.entries(HISTOGRAMS)) {
      histograms.set(
        name,
        meter.createHistogram(name, {
          unit: "s",
          description,
          advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
        }),
      );
    }
  }

  let loggerProvider: LoggerProvider | undefined;
  if (plan.logs) {
    const exporter =
      plan.protocol === "grpc"
        ? new GrpcLogs(viaGrpc(plan.urls.logs))
        : new HttpLogs({ url: plan.urls.logs, ...http });
    loggerProvider = new LoggerProvider({
      resource,
      processors: [
        new BatchLogRecordProcessor({
          exporter: warnOnce(exporter, failed),
          maxQueueSize: MAX_QUEUE,
          scheduledDelayMillis: plan.exportIntervalMs,
          exportTimeoutMillis: EXPORT_TIMEOUT_MS,
        }),
      ],
    });
  }
  const logger = loggerProvider?.getLogger(SCOPE, KERNEL_VERSION);

  const failed_ = new WeakSet<Span>();
  const handle = (span: Span): SpanHandle => ({
    set: (attrs) => span.setAttributes(clean(attrs)),
    fail: (category, message) => {
      failed_.add(span);
      span.setAttribute("error.type", category);
      span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
    },
  });

  const startSpan = (name: string, attrs: TelemetryAttrs, parent: Context): Span =>
    tracer!.startSpan(name, { attributes: clean(attrs) }, parent);

  return {
    active: true,
    recordContent: plan.recordContent,
    span(name, attrs, fn) {
      if (!tracer) return fn(NO_SPAN);
      const span = startSpan(name, attrs, contexts.active());
      const h = handle(span);
      let result: ReturnType<typeof fn>;
      try {
        result = contexts.with(trace.setSpan(contexts.active(), span), () => fn(h));
      } catch (err) {
        h.fail(errorType(err), (err as Error).message);
        span.end();
        throw err;
      }
      if (result instanceof Promise) {
        return result.then(
          (v) => {
            span.end();
            return v;
          },
          (err: unknown) => {
            if (!failed_.has(span)) h.fail(errorType(err), (err as Error)?.message);
            span.end();
            throw err;
          },
        ) as typeof result;
      }
      span.end();
      return result;
    },
    start(name, attrs): OpenSpan {
      if (!tracer) return NO_SPAN;
      const span = startSpan(name, attrs, contexts.active());
      const ctx = trace.setSpan(contexts.active(), span);
      return { ...handle(span), within: (fn) => contexts.with(ctx, fn), end: () => span.end() };
    },
    carrier(): TraceCarrier {
      const out: TraceCarrier = {};
      propagator.inject(contexts.active(), out, defaultTextMapSetter);
      return out;
    },
    withParent(carrier, fn) {
      if (!carrier?.["traceparent"]) return fn();
      return contexts.with(propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter), fn);
    },
    add(name, value, attrs) {
      counters.get(name)?.add(value, clean(attrs));
    },
    record(name, seconds, attrs) {
      histograms.get(name)?.record(seconds, clean(attrs));
    },
    log(record: KernelLogRecord) {
      if (!logger) return;
      logger.emit({
        timestamp: record.time,
        severityNumber: SEVERITY[record.level],
        severityText: record.level.toUpperCase(),
        body: record.message,
        attributes: clean({
          "log.source": record.source,
          "log.logger": record.logger,
          "plugin.name": record.plugin,
          "session.id": record.sessionId,
        }),
        context: contexts.active(),
      });
    },
    async shutdown(boundMs = 2_000) {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, boundMs);
        timer.unref();
      });
      let flushed = false;
      await Promise.race([
        Promise.allSettled([
          tracerProvider?.shutdown(),
          meterProvider?.shutdown(),
          loggerProvider?.shutdown(),
        ]).then(() => {
          flushed = true;
        }),
        bound,
      ]);
      clearTimeout(timer);
      // A short run's only export is this last flush: a collector that is down or slow
      // shows here, once, and what was still queued is dropped rather than waited for.
      if (!flushed)
        failed(new Error(`the final flush did not finish within ${boundMs} ms; what was queued is dropped`));
      contexts.disable();
    },
  };
}
