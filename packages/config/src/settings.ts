// `settings { ... }` with its retry{} and observability{} sub-blocks. Every field
// has a default, applied even when the whole block is absent; a written retry{} or
// observability{} must be complete (all-or-nothing, resource_attrs aside).

import type { Block } from "@pluggableharness/hcl";
import {
  type Diags,
  decodeBody,
  describe,
  evalStatic,
  readBool,
  readEnum,
  readNumber,
  readString,
  readStringMap,
} from "./decode.ts";
import { errorAt } from "./diagnostics.ts";
import { decodeFleetBlock } from "./fleet.ts";
import type {
  CompactAt,
  CompactionSettings,
  LogLevel,
  ObservabilitySettings,
  RetrySettings,
  Settings,
} from "./model.ts";

export const DEFAULT_RETRY: Readonly<RetrySettings> = {
  base_delay_ms: 500,
  backoff_factor: 2,
  max_retries: 5,
};

export const DEFAULT_OBSERVABILITY: Readonly<ObservabilitySettings> = {
  endpoint: "localhost:4317",
  protocol: "grpc",
  sampling_ratio: 1.0,
  traces_enabled: true,
  metrics_enabled: true,
  logs_enabled: true,
  export_interval_ms: 10_000,
  service_name: "pluggableharness-agent",
  resource_attrs: {},
};

/** Compaction defaults (docs/decisions/compaction.md). */
export const DEFAULT_COMPACTION: Readonly<CompactionSettings> = {
  enabled: true,
  threshold: { kind: "percent", value: 80 },
  context_window: 0,
};

/**
 * A compaction threshold as written in `settings.compaction.threshold` or `agent run
 * --compact-at`: "80%" (1-100, of the model's effective ceiling) or a token count (at
 * least 1,000). Returns the reason when the text is neither.
 */
export function parseCompactAt(value: string | number): CompactAt | string {
  const text = String(value).trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  if (percent) {
    const v = Number(percent[1]);
    if (v <= 0 || v > 100) return `a percentage must be greater than 0 and at most 100; got ${text}`;
    return { kind: "percent", value: v };
  }
  if (/^\d+$/.test(text)) {
    const v = Number(text);
    if (!Number.isSafeInteger(v) || v < 1_000)
      return `a token count must be a whole number of at least 1000; got ${text}`;
    return { kind: "tokens", value: v };
  }
  return `expected a percentage of the context window ("80%") or a token count (120000); got ${JSON.stringify(text)}`;
}

/**
 * The default stream idle timeout: five minutes of silence, as Codex and pi use. Reasoning
 * models can think for minutes between two events; the HTTP client (undici) gives up on a
 * silent connection after 300 s anyway (docs/decisions/reliability.md, "Never hang: bounded stalls, no orphans, validate = run").
 */
export const DEFAULT_STREAM_IDLE_TIMEOUT_MS = 300_000;

/**
 * The longest wait before retrying a model or tool call, whatever the backoff or the
 * vendor's retry-after asks: one minute, the bound the vendors' own SDKs put on a
 * retry-after they follow (docs/security/small-defects.md). A vendor asking for an hour
 * is not waited for the hour.
 */
export const DEFAULT_MAX_RETRY_DELAY_MS = 60_000;

/**
 * The longest one model call waits in all for a silent vendor (attempts that never begin
 * answering, and the waits between them): ten minutes, two idle timeouts, instead of five
 * retries of five minutes each (issue 34, point 9).
 */
export const DEFAULT_MAX_MODEL_WAIT_MS = 600_000;

export function defaultSettings(): Settings {
  return {
    log_level: "info",
    telemetry: false,
    observability_declared: false,
    default_hook_timeout_ms: 5_000,
    default_tool_timeout_ms: 120_000,
    stream_idle_timeout_ms: DEFAULT_STREAM_IDLE_TIMEOUT_MS,
    max_retry_delay_ms: DEFAULT_MAX_RETRY_DELAY_MS,
    max_model_wait_ms: DEFAULT_MAX_MODEL_WAIT_MS,
    default_max_depth: 2,
    doom_loop_threshold: 3,
    doom_loop_window: 10,
    strict_params: false,
    sandbox: "best_effort",
    allow_git_metadata_writes: false,
    retry: { ...DEFAULT_RETRY },
    observability: { ...DEFAULT_OBSERVABILITY, resource_attrs: {} },
    compaction: { ...DEFAULT_COMPACTION },
  };
}

const LOG_LEVELS: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error"];
const SANDBOX_MODES: readonly Settings["sandbox"][] = ["required", "best_effort", "off"];

export function decodeSettingsBlock(block: Block, diags: Diags): Settings {
  const s = defaultSettings();
  const owner = "settings";
  const body = decodeBody(
    block.body,
    {
      attributes: [
        "default_frontend",
        "log_level",
        "telemetry",
        "default_hook_timeout_ms",
        "default_tool_timeout_ms",
        "stream_idle_timeout_ms",
        "max_retry_delay_ms",
        "max_model_wait_ms",
        "default_max_depth",
        "doom_loop_threshold",
        "doom_loop_window",
        "strict_params",
        "sandbox",
        "allow_git_metadata_writes",
      ],
      blocks: {
        retry: { single: true },
        observability: { single: true },
        compaction: { single: true },
        fleet: { single: true },
      },
    },
    block.typeRange,
    owner,
    diags,
  );
  const a = (n: string) => body.attrs.get(n);
  const str = (n: string) => (a(n) ? readString(a(n)!, `settings.${n}`, diags) : undefined);
  const int = (n: string, min: number) =>
    a(n) ? readNumber(a(n)!, `settings.${n}`, { integer: true, min }, diags) : undefined;

  const frontend = str("default_frontend");
  if (frontend !== undefined) s.default_frontend = frontend;
  const level = a("log_level") && readEnum(a("log_level")!, "settings.log_level", LOG_LEVELS, diags);
  if (level) s.log_level = level;
  const sandbox = a("sandbox") && readEnum(a("sandbox")!, "settings.sandbox", SANDBOX_MODES, diags);
  if (sandbox) s.sandbox = sandbox;
  const gitWrites = a("allow_git_metadata_writes");
  if (gitWrites) {
    const v = readBool(gitWrites, "settings.allow_git_metadata_writes", diags);
    if (v !== undefined) s.allow_git_metadata_writes = v;
  }
  s.default_hook_timeout_ms = int("default_hook_timeout_ms", 1) ?? s.default_hook_timeout_ms;
  s.default_tool_timeout_ms = int("default_tool_timeout_ms", 1) ?? s.default_tool_timeout_ms;
  s.stream_idle_timeout_ms = int("stream_idle_timeout_ms", 1) ?? s.stream_idle_timeout_ms;
  s.max_retry_delay_ms = int("max_retry_delay_ms", 1) ?? s.max_retry_delay_ms;
  s.max_model_wait_ms = int("max_model_wait_ms", 1) ?? s.max_model_wait_ms;
  s.default_max_depth = int("default_max_depth", 0) ?? s.default_max_depth;
  s.doom_loop_threshold = int("doom_loop_threshold", 2) ?? s.doom_loop_threshold;
  s.doom_loop_window = int("doom_loop_window", 2) ?? Math.max(s.doom_loop_window, s.doom_loop_threshold);
  if (s.doom_loop_window < s.doom_loop_threshold) {
    diags.push(
      errorAt(
        "invalid_value",
        "Doom-loop window too small",
        `settings.doom_loop_window (${s.doom_loop_window}) must be at least doom_loop_threshold (${s.doom_loop_threshold}).`,
        (a("doom_loop_window") ?? a("doom_loop_threshold"))!.expr.range,
      ),
    );
  }

  const retry = body.blocks.find((b) => b.type === "retry");
  if (retry) {
    const rb = decodeBody(
      retry.body,
      {
        attributes: ["base_delay_ms", "backoff_factor", "max_retries"],
        required: ["base_delay_ms", "backoff_factor", "max_retries"],
      },
      retry.typeRange,
      "settings.retry (all three fields are required once the block is written)",
      diags,
    );
    const r = (n: keyof RetrySettings, rule: Parameters<typeof readNumber>[2]) => {
      const at = rb.attrs.get(n);
      const v = at && readNumber(at, `settings.retry.${n}`, rule, diags);
      if (v !== undefined) s.retry[n] = v;
    };
    r("base_delay_ms", { integer: true, min: 0 });
    r("backoff_factor", { min: 1 });
    r("max_retries", { integer: true, min: 0 });
  }

  const obs = body.blocks.find((b) => b.type === "observability");
  if (obs) {
    s.observability_declared = true;
    const required = [
      "endpoint",
      "protocol",
      "sampling_ratio",
      "traces_enabled",
      "metrics_enabled",
      "logs_enabled",
      "export_interval_ms",
      "service_name",
    ];
    const ob = decodeBody(
      obs.body,
      { attributes: [...required, "resource_attrs"], required },
      obs.typeRange,
      "settings.observability (every field but resource_attrs is required once the block is written)",
      diags,
    );
    const o = (n: string) => ob.attrs.get(n);
    const what = (n: string) => `settings.observability.${n}`;
    const endpoint = o("endpoint") && readString(o("endpoint")!, what("endpoint"), diags);
    if (endpoint !== undefined) {
      if (endpoint === "")
        diags.push(
          errorAt(
            "invalid_value",
            "Empty endpoint",
            `${what("endpoint")} cannot be empty.`,
            o("endpoint")!.expr.range,
          ),
        );
      else s.observability.endpoint = endpoint;
    }
    const protocol =
      o("protocol") && readEnum(o("protocol")!, what("protocol"), ["grpc", "http"] as const, diags);
    if (protocol) s.observability.protocol = protocol;
    const ratio =
      o("sampling_ratio") &&
      readNumber(o("sampling_ratio")!, what("sampling_ratio"), { min: 0, max: 1 }, diags);
    if (ratio !== undefined) s.observability.sampling_ratio = ratio;
    for (const n of ["traces_enabled", "metrics_enabled", "logs_enabled"] as const) {
      const v = o(n) && readBool(o(n)!, what(n), diags);
      if (v !== undefined) s.observability[n] = v;
    }
    const interval =
      o("export_interval_ms") &&
      readNumber(o("export_interval_ms")!, what("export_interval_ms"), { integer: true, min: 1 }, diags);
    if (interval !== undefined) s.observability.export_interval_ms = interval;
    const service = o("service_name") && readString(o("service_name")!, what("service_name"), diags);
    if (service !== undefined) s.observability.service_name = service;
    const attrs = o("resource_attrs") && readStringMap(o("resource_attrs")!, what("resource_attrs"), diags);
    if (attrs !== undefined) s.observability.resource_attrs = attrs;
  }

  const compaction = body.blocks.find((b) => b.type === "compaction");
  if (compaction) {
    const cb = decodeBody(
      compaction.body,
      { attributes: ["enabled", "threshold", "context_window"] },
      compaction.typeRange,
      "settings.compaction",
      diags,
    );
    const enabled = cb.attrs.get("enabled");
    const on = enabled && readBool(enabled, "settings.compaction.enabled", diags);
    if (on !== undefined) s.compaction.enabled = on;
    const threshold = cb.attrs.get("threshold");
    if (threshold) {
      const v = evalStatic(threshold.expr, diags);
      if (v !== undefined) {
        const parsed =
          typeof v === "string" || typeof v === "number"
            ? parseCompactAt(v)
            : `expected a percentage ("80%") or a token count; got ${describe(v)}`;
        if (typeof parsed === "string") {
          diags.push(
            errorAt(
              "invalid_value",
              "Invalid compaction threshold",
              `settings.compaction.threshold: ${parsed}.`,
              threshold.expr.range,
            ),
          );
        } else s.compaction.threshold = parsed;
      }
    }
    const windowAttr = cb.attrs.get("context_window");
    const cap =
      windowAttr &&
      readNumber(windowAttr, "settings.compaction.context_window", { integer: true, min: 0 }, diags);
    if (cap !== undefined) {
      if (cap > 0 && cap < 2_000) {
        diags.push(
          errorAt(
            "invalid_value",
            "Context window too small",
            `settings.compaction.context_window must be 0 (the model's own) or at least 2000 tokens; got ${cap}.`,
            windowAttr!.expr.range,
          ),
        );
      } else s.compaction.context_window = cap;
    }
  }

  const fleet = body.blocks.find((b) => b.type === "fleet");
  if (fleet) {
    const decoded = decodeFleetBlock(fleet, diags);
    if (decoded) s.fleet = decoded;
  }

  const strict = a("strict_params") && readBool(a("strict_params")!, "settings.strict_params", diags);
  if (strict !== undefined) s.strict_params = strict;
  const telemetry = a("telemetry") && readBool(a("telemetry")!, "settings.telemetry", diags);
  s.telemetry = telemetry ?? s.observability_declared;
  return s;
}
