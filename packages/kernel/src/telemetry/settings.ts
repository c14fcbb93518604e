// What the telemetry module exports and where, resolved once from settings{} and the
// standard OTEL_* variables. Pure: no SDK import, so the off path stays free.
//
// Precedence (docs/decisions/observability.md): a written observability{} block wins for
// every field it holds; with the block absent, OTEL_EXPORTER_OTLP_ENDPOINT/_PROTOCOL,
// OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER_ARG and OTEL_METRIC_EXPORT_INTERVAL replace the
// canonical defaults. OTEL_RESOURCE_ATTRIBUTES is merged under resource_attrs and
// OTEL_EXPORTER_OTLP_HEADERS always applies. OTEL_SDK_DISABLED=true turns it all off. No
// variable turns telemetry on: agent.hcl is the switch.
import type { Settings } from "@pluggableharness/config";

export interface ExportPlan {
  readonly protocol: "grpc" | "http";
  /** Per signal: the full URL an exporter is given. */
  readonly urls: { readonly traces: string; readonly metrics: string; readonly logs: string };
  /** Where the collector is, for messages (never carries headers). */
  readonly endpoint: string;
  readonly samplingRatio: number;
  readonly traces: boolean;
  readonly metrics: boolean;
  readonly logs: boolean;
  readonly exportIntervalMs: number;
  readonly serviceName: string;
  readonly resourceAttrs: Readonly<Record<string, string>>;
  /** Sent with every export (vendor API keys): never logged. */
  readonly headers: Readonly<Record<string, string>>;
  /** Prompt and completion text on spans (OTEL_LOG_USER_PROMPTS=1). */
  readonly recordContent: boolean;
}

type Env = Readonly<Record<string, string | undefined>>;

/** `key=value,key2=value2` (percent-decoded), as OTEL_RESOURCE_ATTRIBUTES and _HEADERS are written. */
export function parseKeyValues(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? "").split(",")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    try {
      out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // a malformed pair is skipped, as the SDKs do
    }
  }
  return out;
}

/** The URL of one signal: `host:port` gets `http://`; HTTP adds the signal's path. */
export function signalUrl(endpoint: string, protocol: "grpc" | "http", path: string): string {
  const base = /^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint) ? endpoint : `http://${endpoint}`;
  if (protocol === "grpc") return base;
  return `${base.replace(/\/+$/, "")}${path}`;
}

/** The export plan, or undefined when telemetry is off (the discarding backend). */
export function exportPlan(settings: Settings, env: Env): ExportPlan | undefined {
  if (!settings.telemetry) return undefined;
  if ((env["OTEL_SDK_DISABLED"] ?? "").trim().toLowerCase() === "true") return undefined;
  const o = settings.observability;
  const fromEnv = !settings.observability_declared;
  const envProtocol = (env["OTEL_EXPORTER_OTLP_PROTOCOL"] ?? "").trim();
  const protocol: "grpc" | "http" =
    fromEnv && envProtocol
      ? envProtocol === "grpc"
        ? "grpc"
        : "http"
      : o.protocol === "http"
        ? "http"
        : "grpc";
  const endpoint = (fromEnv && env["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trim()) || o.endpoint;
  const ratioText = fromEnv ? env["OTEL_TRACES_SAMPLER_ARG"] : undefined;
  const ratio =
    ratioText !== undefined && Number.isFinite(Number(ratioText)) ? Number(ratioText) : o.sampling_ratio;
  const intervalText = fromEnv ? env["OTEL_METRIC_EXPORT_INTERVAL"] : undefined;
  const interval =
    intervalText !== undefined && Number(intervalText) > 0 ? Number(intervalText) : o.export_interval_ms;
  return {
    protocol,
    endpoint,
    urls: {
      traces: signalUrl(endpoint, protocol, "/v1/traces"),
      metrics: signalUrl(endpoint, protocol, "/v1/metrics"),
      logs: signalUrl(endpoint, protocol, "/v1/logs"),
    },
    samplingRatio: Math.min(1, Math.max(0, ratio)),
    traces: o.traces_enabled,
    metrics: o.metrics_enabled,
    logs: o.logs_enabled,
    exportIntervalMs: interval,
    serviceName: (fromEnv && env["OTEL_SERVICE_NAME"]?.trim()) || o.service_name,
    resourceAttrs: { ...parseKeyValues(env["OTEL_RESOURCE_ATTRIBUTES"]), ...o.resource_attrs },
    headers: parseKeyValues(env["OTEL_EXPORTER_OTLP_HEADERS"]),
    recordContent: ["1", "true"].includes((env["OTEL_LOG_USER_PROMPTS"] ?? "").trim().toLowerCase()),
  };
}
