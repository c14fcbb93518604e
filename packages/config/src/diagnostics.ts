// Configuration diagnostics: every problem is positioned (file:line:col), classified
// by a stable category, and carries a summary and a detail. Nothing here ever holds
// a resolved secret: callers only put source text, names and types into messages.

import type { Diagnostic as HclDiagnostic, Range } from "@pluggableharness/hcl";

export type DiagnosticCategory =
  /** The file is not valid HCL. */
  | "syntax"
  /** A top-level (or nested) block type that is not part of the schema. */
  | "unknown_block"
  /** An attribute that is not part of the schema. */
  | "unknown_attribute"
  /** A required attribute or block is missing. */
  | "missing_attribute"
  /** A second block or entry where only one may exist. */
  | "duplicate"
  /** A value of the wrong type. */
  | "type"
  /** A value of the right type outside the allowed set or range. */
  | "invalid_value"
  /** An expression form that is not allowed here (functions, variables, ...). */
  | "unsupported_expression"
  /** A sensitive attribute written as anything but exactly env("NAME"). */
  | "secret_literal"
  /** env("NAME") names a variable that is not set. */
  | "env_unset"
  /** Two policy rules that can match the same call with the same specificity. */
  | "policy_conflict"
  /** A policy rule that matches exactly the calls of another of equal specificity: it can never decide. */
  | "policy_shadowed"
  /** A policy rule with an empty match (a warning). */
  | "policy_empty_match"
  /** A malformed version constraint, or no version satisfying one. */
  | "version_constraint"
  /** A source address that is malformed or cannot be resolved today. */
  | "source_address"
  /** A reference to a provider that is not declared (or not loaded). */
  | "unknown_provider"
  /** A tool pattern naming a tool its loaded provider does not advertise. */
  | "unknown_tool"
  /** A model id its loaded provider does not advertise (a warning). */
  | "unknown_model"
  /** A generation parameter the profile's model refuses (a warning, or an error under strict_params). */
  | "unsupported_parameter"
  /** A malformed "<provider>.<tool>" pattern. */
  | "tool_pattern"
  /** A hook point that does not exist, is not subscribable, or is not supported. */
  | "hook_point"
  /** A hook mode that does not exist or is not allowed at its point. */
  | "hook_mode"
  /** A plugin's ConfigSchema that is itself invalid (e.g. a bad default_json). */
  | "schema"
  /** A lock file this kernel cannot read (version, shape). */
  | "lock_file"
  /** A lock entry that disagrees with what was resolved, or an installed copy that no longer matches it. */
  | "lock_mismatch"
  /** A provider from a git forge could not be listed, downloaded or installed. */
  | "provider_install"
  /** A file that exists but is not read (a warning). */
  | "ignored_file"
  /** A file that could not be read at all. */
  | "io"
  /** Zero configuration, and no vendor credential in the environment. */
  | "no_model_provider"
  /** A provider's own Configure rejected (or warned about) its block. */
  | "provider_configure"
  /** A provider describes tools or models the kernel's rules reject. */
  | "provider_description"
  /** A profile with no model a loaded provider offers: no session can start with it. */
  | "no_usable_model"
  /** Two tools of one profile that would reach the model under the same name. */
  | "tool_name_collision";

export type DiagnosticSeverity = "error" | "warning";

export interface ConfigDiagnostic {
  severity: DiagnosticSeverity;
  category: DiagnosticCategory;
  summary: string;
  detail: string;
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based, in grapheme clusters. */
  column: number;
  /** The whole source span, when known. */
  range?: Range;
}

/** `file:line:col: error[category]: summary: detail` */
export function formatDiagnostic(d: ConfigDiagnostic): string {
  const head = `${d.file}:${d.line}:${d.column}: ${d.severity}[${d.category}]: ${d.summary}`;
  return d.detail === "" ? head : `${head}: ${d.detail}`;
}

export function formatDiagnostics(ds: readonly ConfigDiagnostic[]): string {
  return ds.map(formatDiagnostic).join("\n");
}

export function hasErrors(ds: readonly ConfigDiagnostic[]): boolean {
  return ds.some((d) => d.severity === "error");
}

export function errorsOf(ds: readonly ConfigDiagnostic[]): ConfigDiagnostic[] {
  return ds.filter((d) => d.severity === "error");
}

export function diagAt(
  severity: DiagnosticSeverity,
  category: DiagnosticCategory,
  summary: string,
  detail: string,
  range: Range,
): ConfigDiagnostic {
  return {
    severity,
    category,
    summary,
    detail,
    file: range.filename,
    line: range.start.line,
    column: range.start.column,
    range,
  };
}

export function errorAt(category: DiagnosticCategory, summary: string, detail: string, range: Range) {
  return diagAt("error", category, summary, detail, range);
}

export function warningAt(category: DiagnosticCategory, summary: string, detail: string, range: Range) {
  return diagAt("warning", category, summary, detail, range);
}

/** A diagnostic about a whole file (line 1, column 1). */
export function fileDiag(
  severity: DiagnosticSeverity,
  category: DiagnosticCategory,
  file: string,
  summary: string,
  detail: string,
): ConfigDiagnostic {
  return { severity, category, summary, detail, file, line: 1, column: 1 };
}

const EVAL_CATEGORY: Record<string, DiagnosticCategory> = {
  "env-unset": "env_unset",
  "unknown-function": "unsupported_expression",
  "unknown-variable": "unsupported_expression",
  "wrong-argument-count": "unsupported_expression",
  "invalid-argument": "unsupported_expression",
};

/**
 * Classifies a diagnostic of the HCL package: everything the parser reports is
 * "syntax"; evaluation problems map by code, defaulting to "type".
 */
export function fromHcl(d: HclDiagnostic, phase: "parse" | "eval"): ConfigDiagnostic {
  const category = phase === "parse" ? "syntax" : (EVAL_CATEGORY[d.code] ?? "type");
  return diagAt(d.severity, category, d.summary, d.detail, d.subject);
}

/** Thrown by the convenience entry points when a configuration has errors. */
export class ConfigError extends Error {
  readonly diagnostics: readonly ConfigDiagnostic[];

  constructor(diagnostics: readonly ConfigDiagnostic[], what = "configuration") {
    const errors = errorsOf(diagnostics);
    super(`Invalid ${what} (${errors.length} error(s)):\n${formatDiagnostics(errors)}`);
    this.name = "ConfigError";
    this.diagnostics = diagnostics;
  }
}
