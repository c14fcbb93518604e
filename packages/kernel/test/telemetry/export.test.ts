// The export plan and the exporters' behaviour towards a collector (issue 36, points 1 and 6),
// against the loopback OTLP receiver, which decodes with the OpenTelemetry project's own
// protobuf code. The plan: `host:port` endpoints, the HTTP signal paths, which of
// observability{} and OTEL_* wins. The exporters: the HTTP/protobuf path really exports;
// a refusing or slow collector costs one warning and a bounded shutdown, never more.
import { defaultSettings, type Settings } from "@pluggableharness/config";
import { startOtlpReceiver } from "@pluggableharness/otlp-receiver";
import { describe, expect, it } from "vitest";
import { createOtelTelemetry } from "../../src/telemetry/otel.ts";
import { type ExportPlan, exportPlan } from "../../src/telemetry/settings.ts";

function settings(patch: (s: Settings) => void): Settings {
  const s = defaultSettings();
  patch(s);
  return s;
}

const declared = (endpoint: string, protocol: "grpc" | "http") =>
  settings((s) => {
    s.telemetry = true;
    s.observability_declared = true;
    s.observability = { ...s.observability, endpoint, protocol, export_interval_ms: 60_000 };
  });

describe("the export plan", () => {
  it("reads host:port as http://host:port and adds the signal path for HTTP only", () => {
    const http = exportPlan(declared("127.0.0.1:4318", "http"), {})!;
    expect(http.urls).toEqual({
      traces: "http://127.0.0.1:4318/v1/traces",
      metrics: "http://127.0.0.1:4318/v1/metrics",
      logs: "http://127.0.0.1:4318/v1/logs",
    });
    expect(exportPlan(declared("https://otel.example:443/", "http"), {})!.urls.traces).toBe(
      "https://otel.example:443/v1/traces",
    );
    expect(exportPlan(declared("collector:4317", "grpc"), {})!.urls.traces).toBe("http://collector:4317");
  });

  it("is off when telemetry is false or OTEL_SDK_DISABLED=true, whatever the block says", () => {
    const off = declared("127.0.0.1:4318", "http");
    off.telemetry = false;
    expect(exportPlan(off, {})).toBeUndefined();
    expect(exportPlan(declared("127.0.0.1:4318", "http"), { OTEL_SDK_DISABLED: "true" })).toBeUndefined();
    expect(exportPlan(defaultSettings(), { OTEL_EXPORTER_OTLP_ENDPOINT: "127.0.0.1:1" })).toBeUndefined();
  });

  it("lets OTEL_* replace the defaults only when no observability{} block is written", () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "10.0.0.1:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_SERVICE_NAME: "from-env",
      OTEL_RESOURCE_ATTRIBUTES: "team=infra,deployment.environment=ci",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=secret-canary",
    };
    const onlySwitch = settings((s) => {
      s.telemetry = true;
    });
    const fromEnv = exportPlan(onlySwitch, env)!;
    expect(fromEnv.protocol).toBe("http");
    expect(fromEnv.urls.traces).toBe("http://10.0.0.1:4318/v1/traces");
    expect(fromEnv.serviceName).toBe("from-env");
    expect(fromEnv.resourceAttrs).toEqual({ team: "infra", "deployment.environment": "ci" });
    expect(fromEnv.headers).toEqual({ "x-api-key": "secret-canary" });
    // The endpoint names no header, so a message built from it carries no key.
    expect(fromEnv.endpoint).not.toContain("secret-canary");

    const written = exportPlan(declared("127.0.0.1:4317", "grpc"), env)!;
    expect(written.protocol).toBe("grpc");
    expect(written.urls.traces).toBe("http://127.0.0.1:4317");
    expect(written.serviceName).toBe(defaultSettings().observability.service_name);
    // Headers always apply: they are how a vendor's endpoint is authenticated.
    expect(written.headers).toEqual({ "x-api-key": "secret-canary" });
  });
});

describe("the exporters towards a collector", () => {
  const planFor = (endpoint: string): ExportPlan => exportPlan(declared(endpoint, "http"), {})!;

  it("exports a span over HTTP/protobuf to the host:port endpoint's /v1/traces", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const t = createOtelTelemetry(planFor(receiver.httpEndpoint), () => {});
      t.span("turn", { "turn.id": "t1" }, () => t.span("chat m", {}, () => {}));
      await t.shutdown(5_000);
      expect(receiver.requests).toContain("http /v1/traces");
      const names = receiver.spans.map((s) => s.name).sort();
      expect(names).toEqual(["chat m", "turn"]);
      const turn = receiver.spans.find((s) => s.name === "turn")!;
      expect(receiver.spans.find((s) => s.name === "chat m")!.parentSpanId).toBe(turn.spanId);
    } finally {
      await receiver.close();
    }
  });

  it("warns once for a refusing collector, however many exports fail", async () => {
    const receiver = await startOtlpReceiver({ refuse: 503 });
    try {
      const warnings: string[] = [];
      const t = createOtelTelemetry(planFor(receiver.httpEndpoint), (m) => warnings.push(m));
      for (let i = 0; i < 3; i++) t.span(`turn ${i}`, {}, () => {});
      t.add("agent.tool.calls", 1, { "gen_ai.tool.name": "read_file" });
      await t.shutdown(5_000);
      expect(receiver.requests.length).toBeGreaterThan(0);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(receiver.httpEndpoint);
    } finally {
      await receiver.close();
    }
  });

  it("bounds shutdown against a slow collector and says so once", async () => {
    const receiver = await startOtlpReceiver({ delayMs: 10_000 });
    try {
      const warnings: string[] = [];
      const t = createOtelTelemetry(planFor(receiver.httpEndpoint), (m) => warnings.push(m));
      t.span("turn", {}, () => {});
      const started = performance.now();
      await t.shutdown(300);
      // The bound, not the collector's 10 s, decides when shutdown returns.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain("did not finish within 300 ms");
    } finally {
      await receiver.close();
    }
  });
});
