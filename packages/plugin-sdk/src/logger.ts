// Plugin-side logging: hclog JSON lines on stderr, which every go-plugin host (and our
// runtime) reads and attributes to the plugin.
import { writeSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { formatHclogLine, LEVELS, type Level } from "@pluggableharness/goplugin";

let workerSink: ((line: string) => void) | undefined;

/**
 * Where stderr log lines go in a worker thread, which shares the kernel's file descriptor
 * 2: serve() points this at the kernel's port (a synchronous post, so a line logged just
 * before a crash still arrives). Until then a worker writes to its own process.stderr,
 * which the kernel also captures.
 */
export function setWorkerLogSink(sink: ((line: string) => void) | undefined): void {
  workerSink = sink;
}

function writeLine(fd: number, line: string): void {
  if (fd === 2 && !isMainThread) {
    if (workerSink) workerSink(line);
    else process.stderr.write(`${line}\n`);
    return;
  }
  writeSync(fd, `${line}\n`);
}

export interface Logger {
  readonly name: string;
  trace(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A severity label only; it never exits. */
  fatal(message: string, fields?: Record<string, unknown>): void;
  /** A sub-logger, e.g. logger.named("retry") logs as "<name>.retry". */
  named(sub: string): Logger;
}

/** A Logger named `name` whose every level goes through `write`; `named` makes its sub-loggers. */
export function loggerOver(
  name: string,
  write: (level: Level, message: string, fields?: Record<string, unknown>) => void,
  named: (sub: string) => Logger,
): Logger {
  return {
    name,
    trace: (m, f) => write("trace", m, f),
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    fatal: (m, f) => write("fatal", m, f),
    named,
  };
}

/** Writes synchronously to fd 2 so lines survive a crash right after logging. */
export function createLogger(name = "", minLevel: Level = "trace", fd = 2): Logger {
  const min = LEVELS.indexOf(minLevel);
  const write = (level: Level, message: string, fields?: Record<string, unknown>) => {
    if (LEVELS.indexOf(level) < min) return;
    try {
      writeLine(fd, formatHclogLine(level, message, fields, name));
    } catch {
      // stderr closed: nowhere left to log
    }
  };
  return loggerOver(name, write, (sub) => createLogger(name ? `${name}.${sub}` : sub, minLevel, fd));
}
