// What a launched plugin writes, captured once for every transport: each line goes to the
// kernel's log sink attributed to the plugin and its launch, and the last stderr lines are
// kept so launch failures and crash reports can quote them.
import type { Readable } from "node:stream";
import { type Level, LineSplitter, parseLogLine } from "@pluggableharness/goplugin";
import type { PluginLogRecord } from "./plugin-types.ts";

const TAIL_LINES = 20;
const TAIL_LINE_CHARS = 500;

export class LogCapture {
  /** The plugin's last stderr lines (and the runtime's notes about it), oldest first. */
  readonly tail: string[] = [];
  readonly #plugin: string;
  readonly #instance: number;
  readonly #sink: ((record: PluginLogRecord) => void) | undefined;

  constructor(plugin: string, instance: number, sink: ((record: PluginLogRecord) => void) | undefined) {
    this.#plugin = plugin;
    this.#instance = instance;
    this.#sink = sink;
  }

  /** One line the plugin wrote; `level` applies to a line that does not name its own. */
  line(source: "stderr" | "stdout" | "stdio", line: string, level: Level): void {
    if (source === "stderr") this.keep(line);
    if (this.#sink) this.#emit(() => ({ ...parseLogLine(line, level), source }));
  }

  /** Captures every line of one of the plugin's output streams. */
  watch(stream: Readable, source: "stderr" | "stdout", level: Level): void {
    const lines = new LineSplitter((l) => this.line(source, l, level));
    stream.on("data", (c: Buffer) => lines.push(c));
    stream.on("end", () => lines.flush());
  }

  /** A note of the runtime's own about the plugin; `quoted` also keeps it in the tail. */
  note(message: string, level: Level, quoted: boolean): void {
    if (quoted) this.keep(message);
    this.#emit(() => ({
      level,
      logger: "runtime",
      message,
      fields: {},
      time: new Date(),
      structured: false,
      source: "runtime",
    }));
  }

  /** Adds a line to the tail only. */
  keep(line: string): void {
    this.tail.push(line.length > TAIL_LINE_CHARS ? `${line.slice(0, TAIL_LINE_CHARS)}…` : line);
    if (this.tail.length > TAIL_LINES) this.tail.shift();
  }

  #emit(build: () => Omit<PluginLogRecord, "plugin" | "instance">): void {
    if (!this.#sink) return;
    try {
      this.#sink({ ...build(), plugin: this.#plugin, instance: this.#instance });
    } catch {
      // a failing sink must not take the plugin down
    }
  }
}
