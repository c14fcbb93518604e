// Diagnostics are plain data: nothing in this package throws on bad input.

import type { Range } from "./range.ts";

export type Severity = "error" | "warning";

/**
 * A problem found while parsing, evaluating or decoding. `code` is a stable,
 * machine-readable id (e.g. "missing-newline", "unknown-variable") so callers
 * and tests can classify a diagnostic without matching its wording.
 */
export interface Diagnostic {
  severity: Severity;
  code: string;
  summary: string;
  detail: string;
  /** The source text the problem is about. */
  subject: Range;
}

export function errorDiag(code: string, summary: string, detail: string, subject: Range): Diagnostic {
  return { severity: "error", code, summary, detail, subject };
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}

/** `file:line:col: summary: detail` (the detail part is left out when empty). */
export function formatDiagnostic(d: Diagnostic): string {
  const { filename, start } = d.subject;
  const where = `${filename}:${start.line}:${start.column}`;
  return d.detail === "" ? `${where}: ${d.summary}` : `${where}: ${d.summary}: ${d.detail}`;
}

/** One formatted diagnostic per line. */
export function formatDiagnostics(diagnostics: readonly Diagnostic[]): string {
  return diagnostics.map(formatDiagnostic).join("\n");
}
