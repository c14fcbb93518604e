// Plugin log lines: hclog's JSON format (what Go plugins and our SDK write to stderr)
// and plain text lines with an optional "[LEVEL]" prefix, as go-plugin hosts read them.
import { StringDecoder } from "node:string_decoder";

/** The project's six log levels (log.v1.LogLevel without the UNSPECIFIED zero). */
export type Level = "trace" | "debug" | "info" | "warn" | "error" | "fatal";

export const LEVELS: readonly Level[] = ["trace", "debug", "info", "warn", "error", "fatal"];

export interface LogLine {
  level: Level;
  /** hclog's @module, e.g. "plugin.anthropic.retry"; "" when absent. */
  logger: string;
  message: string;
  /** Every other key of a JSON line; empty for plain lines. */
  fields: Record<string, unknown>;
  /** When the plugin logged it, if the line says; otherwise when it was read. */
  time: Date;
  /** True when the line was hclog JSON. */
  structured: boolean;
}

const LEVEL_ALIASES: Record<string, Level> = {
  trace: "trace",
  debug: "debug",
  info: "info",
  warn: "warn",
  warning: "warn",
  error: "error",
  err: "error",
  fatal: "fatal",
  panic: "fatal",
};

function levelOf(value: unknown, fallback: Level): Level {
  return typeof value === "string" ? (LEVEL_ALIASES[value.toLowerCase()] ?? fallback) : fallback;
}

const PREFIX = /^\[(TRACE|DEBUG|INFO|WARN|ERROR)\]\s?/;

/**
 * Parses one line of plugin output. Never throws: a line that is not hclog JSON is a
 * plain line at `defaultLevel`, unless it starts with "[LEVEL]" or is a Go panic.
 */
export function parseLogLine(line: string, defaultLevel: Level = "debug", now: Date = new Date()): LogLine {
  const text = line.endsWith("\r") ? line.slice(0, -1) : line;
  if (text.startsWith("{") && text.endsWith("}")) {
    let obj: unknown;
    try {
      obj = JSON.parse(text);
    } catch {
      obj = undefined;
    }
    if (obj !== null && typeof obj === "object" && !Array.isArray(obj)) {
      const rec = obj as Record<string, unknown>;
      const fields: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(rec)) {
        if (!k.startsWith("@")) fields[k] = v;
      }
      const ts = typeof rec["@timestamp"] === "string" ? new Date(rec["@timestamp"]) : undefined;
      return {
        level: levelOf(rec["@level"], "info"),
        logger: typeof rec["@module"] === "string" ? rec["@module"] : "",
        message: typeof rec["@message"] === "string" ? rec["@message"] : "",
        fields,
        time: ts && !Number.isNaN(ts.getTime()) ? ts : now,
        structured: true,
      };
    }
  }
  const m = PREFIX.exec(text);
  if (m) {
    return {
      level: levelOf(m[1], defaultLevel),
      logger: "",
      message: text.slice(m[0].length),
      fields: {},
      time: now,
      structured: false,
    };
  }
  const panic = text.startsWith("panic:") || text.startsWith("fatal error:");
  return {
    level: panic ? "error" : defaultLevel,
    logger: "",
    message: text,
    fields: {},
    time: now,
    structured: false,
  };
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** hclog's timestamp layout: 2006-01-02T15:04:05.000000Z07:00 (microseconds). */
export function hclogTimestamp(d: Date): string {
  const off = -d.getTimezoneOffset();
  const zone =
    off === 0
      ? "Z"
      : `${off > 0 ? "+" : "-"}${pad(Math.floor(Math.abs(off) / 60), 2)}:${pad(Math.abs(off) % 60, 2)}`;
  const local = new Date(d.getTime() + off * 60_000);
  return (
    `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1, 2)}-${pad(local.getUTCDate(), 2)}` +
    `T${pad(local.getUTCHours(), 2)}:${pad(local.getUTCMinutes(), 2)}:${pad(local.getUTCSeconds(), 2)}` +
    `.${pad(local.getUTCMilliseconds(), 3)}000${zone}`
  );
}

/** One hclog JSON line (without newline). Field keys starting with "@" are dropped. */
export function formatHclogLine(
  level: Level,
  message: string,
  fields: Record<string, unknown> = {},
  logger = "",
  time: Date = new Date(),
): string {
  const rec: Record<string, unknown> = {
    "@level": level,
    "@message": message,
    "@timestamp": hclogTimestamp(time),
  };
  if (logger) rec["@module"] = logger;
  for (const [k, v] of Object.entries(fields)) {
    if (!k.startsWith("@")) rec[k] = v instanceof Error ? v.message : v;
  }
  try {
    return JSON.stringify(rec);
  } catch {
    return JSON.stringify({ "@level": level, "@message": message, "@timestamp": rec["@timestamp"] });
  }
}

/**
 * Splits a byte stream into lines, capping each at `maxLine` bytes (go-plugin reads
 * stderr with a 64 KiB buffer). Longer lines are emitted in pieces.
 */
export class LineSplitter {
  private buffer = "";
  private readonly decoder = new StringDecoder("utf8");
  private readonly maxLine: number;
  private readonly onLine: (line: string) => void;
  constructor(onLine: (line: string) => void, maxLine = 64 * 1024) {
    this.onLine = onLine;
    this.maxLine = maxLine;
  }
  push(chunk: string | Buffer): void {
    this.buffer += typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    for (;;) {
      const nl = this.buffer.indexOf("\n");
      if (nl < 0) break;
      this.onLine(this.buffer.slice(0, nl));
      this.buffer = this.buffer.slice(nl + 1);
    }
    while (this.buffer.length > this.maxLine) {
      this.onLine(this.buffer.slice(0, this.maxLine));
      this.buffer = this.buffer.slice(this.maxLine);
    }
  }
  /** Emits a final unterminated line, if any. */
  flush(): void {
    this.buffer += this.decoder.end();
    if (this.buffer !== "") {
      this.onLine(this.buffer);
      this.buffer = "";
    }
  }
}
