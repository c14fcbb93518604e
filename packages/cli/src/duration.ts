// Durations on the command line: "90" (seconds), "90s", "15m", "2h", "7d", "1h30m".

import { EXIT } from "./exit-codes.ts";
import { CliError } from "./io.ts";

const UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

/** Seconds in `text`; throws a usage error naming `flag` when it is not a duration. */
export function parseDuration(text: string, flag: string): number {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== t) {
    throw new CliError(`${flag}: "${text}" is not a duration (e.g. 90, 90s, 15m, 2h, 7d)`, EXIT.USAGE);
  }
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]!]!, 0);
}

export function parsePositiveNumber(text: string, flag: string, integer = false): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new CliError(`${flag}: "${text}" is not a positive ${integer ? "integer" : "number"}`, EXIT.USAGE);
  }
  return n;
}
