// A tool call's arguments as one line of a transcript, the way Claude Code shows
// `Read(calc.js)`: the argument that says what the call is about (a path, a command, a
// pattern) by its value alone, the others as `name: value`, each value on one line and
// the whole cut to a width. `complete` says whether the line shows everything, so a
// renderer knows when to keep the full arguments one fold away.
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** Arguments that name what a call is about, most telling first. */
const SUBJECT_KEYS = ["command", "path", "file_path", "pattern", "query", "url", "name", "to"];

/** Characters of the summary a transcript line shows at most. */
export const SUMMARY_WIDTH = 100;

function valueText(v: JsonValue): string {
  if (typeof v === "string") return v;
  return JSON.stringify(v) ?? "";
}

/** One line: newlines and runs of white space shown as one space. */
const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

export function argumentSummary(args: JsonObject | undefined): { line: string; complete: boolean } {
  const entries = Object.entries(args ?? {}).filter(([, v]) => v !== null && v !== undefined && v !== "");
  if (entries.length === 0) return { line: "", complete: true };
  const subject = SUBJECT_KEYS.find((k) => typeof args?.[k] === "string" && args[k] !== "");
  const parts = entries.map(([k, v]) =>
    k === subject ? oneLine(valueText(v)) : `${k}: ${oneLine(valueText(v))}`,
  );
  // The subject first: it is what the reader scans for.
  if (subject)
    parts.unshift(
      ...parts.splice(
        entries.findIndex(([k]) => k === subject),
        1,
      ),
    );
  const whole = parts.join(", ");
  const lossless = entries.every(([, v]) => typeof v !== "string" || !/[\n\r\t]/.test(v));
  if (whole.length <= SUMMARY_WIDTH) return { line: whole, complete: lossless };
  return { line: `${whole.slice(0, SUMMARY_WIDTH - 1).trimEnd()}…`, complete: false };
}
