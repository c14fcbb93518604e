// The kernel's log: its own records and everything plugins send through the Log
// callback or write to stderr, attributed, in one sink. Six levels, as the kernel
// callback contract defines them; FATAL is a severity label, never a shutdown request.

export type KernelLogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal";

export const LOG_LEVEL_ORDER: Readonly<Record<KernelLogLevel, number>> = {
  trace: 0,
  debug: 1,
  info: 2,
  warn: 3,
  error: 4,
  fatal: 5,
};

export interface KernelLogRecord {
  readonly time: Date;
  readonly level: KernelLogLevel;
  /** "kernel" for the kernel's own records, "plugin" for anything a plugin produced. */
  readonly source: "kernel" | "plugin";
  /** Dotted component name, e.g. "loop.model" or a plugin's own logger name. */
  readonly logger: string;
  readonly message: string;
  /** The plugin's declared name, for plugin records. */
  readonly plugin?: string;
  /** Which launch of the plugin wrote it. */
  readonly instance?: number;
  readonly sessionId?: string;
  readonly fields?: Readonly<Record<string, unknown>>;
}

export type KernelLogSink = (record: KernelLogRecord) => void;

/** A named writer into the sink; records below `minLevel` are dropped. */
export class KernelLogger {
  readonly #sink: KernelLogSink;
  readonly #name: string;
  readonly #minLevel: KernelLogLevel;
  readonly #min: number;

  constructor(sink: KernelLogSink, name = "kernel", minLevel: KernelLogLevel = "trace") {
    this.#sink = sink;
    this.#name = name;
    this.#minLevel = minLevel;
    this.#min = LOG_LEVEL_ORDER[minLevel];
  }

  child(name: string): KernelLogger {
    return new KernelLogger(this.#sink, `${this.#name}.${name}`, this.#minLevel);
  }

  /** Forwards a record produced elsewhere (a plugin), unchanged apart from the level filter. */
  forward(record: KernelLogRecord): void {
    if (LOG_LEVEL_ORDER[record.level] < this.#min) return;
    try {
      this.#sink(record);
    } catch {
      // a broken sink must not break the loop
    }
  }

  log(level: KernelLogLevel, message: string, fields?: Record<string, unknown>, sessionId?: string): void {
    this.forward({
      time: new Date(),
      level,
      source: "kernel",
      logger: this.#name,
      message,
      ...(sessionId ? { sessionId } : {}),
      ...(fields ? { fields } : {}),
    });
  }

  debug(message: string, fields?: Record<string, unknown>, sessionId?: string): void {
    this.log("debug", message, fields, sessionId);
  }
  info(message: string, fields?: Record<string, unknown>, sessionId?: string): void {
    this.log("info", message, fields, sessionId);
  }
  warn(message: string, fields?: Record<string, unknown>, sessionId?: string): void {
    this.log("warn", message, fields, sessionId);
  }
  error(message: string, fields?: Record<string, unknown>, sessionId?: string): void {
    this.log("error", message, fields, sessionId);
  }
}

export const discardLog: KernelLogSink = () => {};
