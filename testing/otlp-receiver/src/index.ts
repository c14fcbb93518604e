// A loopback OTLP receiver for tests: the HTTP/protobuf (`/v1/traces`, `/v1/metrics`,
// `/v1/logs`) and gRPC (`…TraceService/Export` and its metrics and logs siblings)
// transports. Every request body is decoded by the OpenTelemetry project's own generated
// protobuf root (shipped in @opentelemetry/otlp-transformer up to 0.209.0), so a test
// asserts what a real collector would have read, never what a hand-written parser guessed.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo, Socket } from "node:net";
import * as grpc from "@grpc/grpc-js";

const require = createRequire(import.meta.url);

interface Decoder {
  decode(bytes: Uint8Array): unknown;
}
interface GeneratedRoot {
  opentelemetry: {
    proto: {
      collector: {
        trace: { v1: { ExportTraceServiceRequest: Decoder } };
        metrics: { v1: { ExportMetricsServiceRequest: Decoder } };
        logs: { v1: { ExportLogsServiceRequest: Decoder } };
      };
    };
  };
}
const root = require("@opentelemetry/otlp-transformer/build/src/generated/root.js") as GeneratedRoot;
const collector = root.opentelemetry.proto.collector;

export type AttrValue = string | number | boolean | AttrValue[] | undefined;
export type Attrs = Record<string, AttrValue>;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Attrs;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly statusMessage: string;
  readonly events: readonly { name: string; attributes: Attrs }[];
  readonly resource: Attrs;
  readonly scope: string;
}

export interface ReceivedPoint {
  readonly metric: string;
  readonly unit: string;
  readonly attributes: Attrs;
  /** A sum's or gauge's value; a histogram's sum. */
  readonly value: number;
  /** A histogram's count. */
  readonly count?: number;
  readonly resource: Attrs;
}

export interface ReceivedLog {
  readonly body: AttrValue;
  readonly severityText: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly attributes: Attrs;
  readonly resource: Attrs;
}

export interface OtlpReceiver {
  /** `127.0.0.1:<port>` of the HTTP/protobuf listener. */
  readonly httpEndpoint: string;
  /** `127.0.0.1:<port>` of the gRPC listener. */
  readonly grpcEndpoint: string;
  readonly spans: ReceivedSpan[];
  readonly points: ReceivedPoint[];
  readonly logs: ReceivedLog[];
  /** Export requests received, by transport and signal (e.g. "http /v1/traces"). */
  readonly requests: string[];
  /** TCP connections accepted by either listener. */
  connections(): number;
  /** Request headers of the HTTP exports, lower-cased names. */
  readonly headers: Record<string, string>[];
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** Wait this long before answering each export (a slow collector). */
  readonly delayMs?: number;
  /** Answer every HTTP export with this status, and every gRPC export UNAVAILABLE (a refusing collector). */
  readonly refuse?: number;
}

// ---- decoding: the generated messages into plain records --------------------------------------

interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: number | { toNumber(): number } | null;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] } | null;
  bytesValue?: Uint8Array | null;
}
interface KeyValue {
  key: string;
  value?: AnyValue | null;
}

function anyValue(v: AnyValue | null | undefined): AttrValue {
  if (!v) return undefined;
  if (v.stringValue != null) return v.stringValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.intValue != null) return typeof v.intValue === "number" ? v.intValue : v.intValue.toNumber();
  if (v.doubleValue != null) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(anyValue);
  if (v.bytesValue) return hex(v.bytesValue);
  return undefined;
}

function attrs(list: KeyValue[] | null | undefined): Attrs {
  const out: Attrs = {};
  for (const kv of list ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

function hex(b: Uint8Array | null | undefined): string {
  return b && b.length > 0 ? Buffer.from(b).toString("hex") : "";
}

function num(v: unknown): number {
  if (v == null) return 0;
  if (typeof v === "number") return v;
  return (v as { toNumber(): number }).toNumber();
}

function nanos(v: unknown): bigint {
  if (v == null) return 0n;
  if (typeof v === "number") return BigInt(v);
  return BigInt((v as { toString(): string }).toString());
}

// biome-ignore lint/suspicious/noExplicitAny: the generated messages are untyped here
type Msg = any;

function decodeTraces(body: Uint8Array, into: ReceivedSpan[]): void {
  const req: Msg = collector.trace.v1.ExportTraceServiceRequest.decode(body);
  for (const rs of req.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        into.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: s.name,
          kind: s.kind ?? 0,
          startNs: nanos(s.startTimeUnixNano),
          endNs: nanos(s.endTimeUnixNano),
          attributes: attrs(s.attributes),
          statusCode: s.status?.code ?? 0,
          statusMessage: s.status?.message ?? "",
          events: (s.events ?? []).map((e: Msg) => ({ name: e.name, attributes: attrs(e.attributes) })),
          resource,
          scope: ss.scope?.name ?? "",
        });
      }
    }
  }
}

function decodeMetrics(body: Uint8Array, into: ReceivedPoint[]): void {
  const req: Msg = collector.metrics.v1.ExportMetricsServiceRequest.decode(body);
  for (const rm of req.resourceMetrics ?? []) {
    const resource = attrs(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const base = { metric: m.name as string, unit: (m.unit ?? "") as string, resource };
        const simple = m.sum ?? m.gauge;
        for (const p of simple?.dataPoints ?? []) {
          const value = p.asDouble != null ? p.asDouble : num(p.asInt);
          into.push({ ...base, attributes: attrs(p.attributes), value });
        }
        for (const p of m.histogram?.dataPoints ?? []) {
          into.push({ ...base, attributes: attrs(p.attributes), value: p.sum ?? 0, count: num(p.count) });
        }
      }
    }
  }
}

function decodeLogs(body: Uint8Array, into: ReceivedLog[]): void {
  const req: Msg = collector.logs.v1.ExportLogsServiceRequest.decode(body);
  for (const rl of req.resourceLogs ?? []) {
    const resource = attrs(rl.resource?.attributes);
    for (const sl of rl.scopeLogs ?? []) {
      for (const r of sl.logRecords ?? []) {
        into.push({
          body: anyValue(r.body),
          severityText: r.severityText ?? "",
          traceId: hex(r.traceId),
          spanId: hex(r.spanId),
          attributes: attrs(r.attributes),
          resource,
        });
      }
    }
  }
}

// ---- the receiver ------------------------------------------------------------------------------

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startOtlpReceiver(options: ReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const points: ReceivedPoint[] = [];
  const logs: ReceivedLog[] = [];
  const requests: string[] = [];
  const headers: Record<string, string>[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;

  const decoders: Record<string, (b: Uint8Array) => void> = {
    "/v1/traces": (b) => decodeTraces(b, spans),
    "/v1/metrics": (b) => decodeMetrics(b, points),
    "/v1/logs": (b) => decodeLogs(b, logs),
  };

  const http: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const decode = req.method === "POST" ? decoders[req.url ?? ""] : undefined;
      if (!decode) {
        res.writeHead(404).end();
        return;
      }
      requests.push(`http ${req.url}`);
      headers.push(Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])));
      if (options.delayMs) await sleep(options.delayMs);
      if (options.refuse) {
        res.writeHead(options.refuse).end();
        return;
      }
      try {
        decode(Buffer.concat(chunks));
      } catch (err) {
        res.writeHead(400, { "content-type": "text/plain" }).end(String(err));
        return;
      }
      // An empty Export*ServiceResponse encodes as zero bytes.
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  http.on("connection", (s: Socket) => {
    accepted++;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));

  const server = new grpc.Server();
  const service = (signal: string, path: string): grpc.ServiceDefinition => ({
    Export: {
      path: `/opentelemetry.proto.collector.${signal}.v1.${path}/Export`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: () => Buffer.alloc(0),
      responseDeserialize: (b: Buffer) => b,
    },
  });
  const handler =
    (name: string, decode: (b: Uint8Array) => void): grpc.handleUnaryCall<Buffer, Buffer> =>
    async (call, callback) => {
      requests.push(`grpc ${name}`);
      if (options.delayMs) await sleep(options.delayMs);
      if (options.refuse) {
        callback({ code: grpc.status.UNAVAILABLE, details: "refused by the test receiver" });
        return;
      }
      try {
        decode(call.request);
        callback(null, Buffer.alloc(0));
      } catch (err) {
        callback({ code: grpc.status.INVALID_ARGUMENT, details: String(err) });
      }
    };
  server.addService(service("trace", "TraceService"), { Export: handler("traces", decoders["/v1/traces"]!) });
  server.addService(service("metrics", "MetricsService"), {
    Export: handler("metrics", decoders["/v1/metrics"]!),
  });
  server.addService(service("logs", "LogsService"), { Export: handler("logs", decoders["/v1/logs"]!) });
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) =>
      err ? reject(err) : resolve(port),
    ),
  );

  return {
    httpEndpoint: `127.0.0.1:${(http.address() as AddressInfo).port}`,
    grpcEndpoint: `127.0.0.1:${grpcPort}`,
    spans,
    points,
    logs,
    requests,
    headers,
    connections: () => accepted,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      server.forceShutdown();
    },
  };
}

/** The spans of one trace as an indented tree of names (children in start order), for messages. */
export function spanTree(spans: readonly ReceivedSpan[]): string {
  const byParent = new Map<string, ReceivedSpan[]>();
  const ids = new Set(spans.map((s) => s.spanId));
  for (const s of spans) {
    const key = ids.has(s.parentSpanId) ? s.parentSpanId : "";
    byParent.set(key, [...(byParent.get(key) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    const kids = [...(byParent.get(parent) ?? [])].sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    for (const k of kids) {
      lines.push(`${"  ".repeat(depth)}${k.name}`);
      walk(k.spanId, depth + 1);
    }
  };
  walk("", 0);
  return lines.join("\n");
}
