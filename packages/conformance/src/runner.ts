// The conformance runner: launch the plugin, find which categories it serves, run each
// category's checks and fold them into one report with an exit code
// (0: every check passed, 1: violations, 2: the plugin could not be launched or checked).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import type {
  PluginDescription,
  PluginIsolation,
  PluginLogRecord,
  PluginTransportHost,
} from "@pluggableharness/runtime";
import type { RecordingKernel } from "./kernel.ts";
import { launchPlugin } from "./launch.ts";

export type CheckStatus = "pass" | "fail" | "warn" | "skip";

export interface CheckResult {
  /** Stable id, e.g. "tool.invoke.read_file.stream". */
  id: string;
  status: CheckStatus;
  reason: string;
}

/** A call the tool checks make, in order; `${workdir}` in strings is replaced. */
export interface SampleCall {
  tool: string;
  arguments: JsonObject;
  /** What the stream must end in: "result", "error" or an error category name. */
  expect?: string;
  /** Cancel the call once its first event arrived (or after cancelAfterMs). */
  cancel?: boolean;
  cancelAfterMs?: number;
}

export interface ConformanceOptions {
  /** Plugin executable (a .ts/.js file runs on Node, anything else is executed). */
  executable: string;
  /** Values for Configure (the decoded agent.hcl block); `${workdir}` in strings is replaced. */
  config?: JsonObject;
  /** Model id for model-provider checks. */
  model?: string;
  /** Tool calls to make; resources are only invoked through samples. */
  samples?: readonly SampleCall[];
  /** call_context.working_directory for calls; a fresh temporary directory by default. */
  workingDirectory?: string;
  /** Extra literal environment variables for the plugin process. */
  env?: Readonly<Record<string, string>>;
  /** Run it as a process (default) or in a worker thread, as the kernel would. */
  isolation?: PluginIsolation;
  /** Called with each result as it is decided. */
  onResult?: (result: CheckResult) => void;
}

export interface ConformanceReport {
  executable: string;
  /** The transport the plugin ran on. */
  isolation: PluginIsolation;
  categories: string[];
  results: CheckResult[];
  exitCode: 0 | 1 | 2;
  /** Why the plugin could not be checked (exit code 2). */
  error?: string;
}

/** What every category's checks receive. */
export interface CheckContext {
  readonly host: PluginTransportHost;
  readonly kernel: RecordingKernel;
  readonly description: PluginDescription;
  readonly options: ConformanceOptions;
  readonly config: JsonObject;
  readonly samples: readonly SampleCall[];
  readonly workingDirectory: string;
  /** Everything the plugin logged so far (stderr, stdio, runtime records). */
  readonly logs: readonly PluginLogRecord[];
  record(id: string, status: CheckStatus, reason: string): void;
}

/** A category's checks; registered in CATEGORY_CHECKS. */
export type CategoryChecks = (ctx: CheckContext) => Promise<void>;

/** The placeholder for the working directory in configuration and sample strings. */
export const WORKDIR_TOKEN = "$" + "{workdir}";

export function substitute<T extends JsonValue | undefined>(value: T, workdir: string): T {
  if (typeof value === "string") return value.split(WORKDIR_TOKEN).join(workdir) as T;
  if (Array.isArray(value)) return value.map((v) => substitute(v, workdir)) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, workdir)])) as T;
  }
  return value;
}

export async function runWith(
  options: ConformanceOptions,
  categoryChecks: Readonly<Record<string, CategoryChecks>>,
  /** Checks for declarations any category may make (slash commands), run after the categories. */
  crossChecks: readonly CategoryChecks[] = [],
): Promise<ConformanceReport> {
  const results: CheckResult[] = [];
  const record = (id: string, status: CheckStatus, reason: string) => {
    const r = { id, status, reason };
    results.push(r);
    options.onResult?.(r);
  };
  const ownDir = options.workingDirectory ? undefined : mkdtempSync(join(tmpdir(), "ph-conform-"));
  const workingDirectory = options.workingDirectory ?? ownDir!;
  const logs: PluginLogRecord[] = [];
  const plugin = launchPlugin({
    executable: options.executable,
    name: "conformance",
    ...(options.env ? { env: options.env } : {}),
    ...(options.isolation ? { isolation: options.isolation } : {}),
    logSink: (r) => logs.push(r),
  });
  const report = (exitCode: 0 | 1 | 2, categories: string[], error?: string): ConformanceReport => ({
    executable: options.executable,
    isolation: plugin.host.isolation,
    categories,
    results,
    exitCode,
    ...(error ? { error } : {}),
  });
  try {
    let description: PluginDescription;
    try {
      description = await plugin.host.describe();
    } catch (err) {
      record("launch", "fail", (err as Error).message);
      return report(2, [], `could not launch ${options.executable}: ${(err as Error).message}`);
    }
    record(
      "launch",
      "pass",
      `serves ${description.categories.join(", ") || "no known category"} (${plugin.host.isolation === "worker" ? "in a worker thread" : "as a process"})`,
    );
    const checked = description.categories.filter((c) => categoryChecks[c]);
    if (checked.length === 0) {
      return report(
        2,
        description.categories,
        `no conformance checks exist for ${description.categories.join(", ") || "a plugin serving no category"}`,
      );
    }
    const ctx: CheckContext = {
      host: plugin.host,
      kernel: plugin.kernel,
      description,
      options,
      config: substitute(options.config ?? {}, workingDirectory),
      samples: (options.samples ?? []).map((s) => ({
        ...s,
        arguments: substitute(s.arguments, workingDirectory),
      })),
      workingDirectory,
      logs,
      record,
    };
    for (const category of checked) {
      try {
        await categoryChecks[category]!(ctx);
      } catch (err) {
        record(`${category}.runner`, "fail", `checks aborted: ${(err as Error).message}`);
        return report(
          2,
          description.categories,
          `${category} checks could not complete: ${(err as Error).message}`,
        );
      }
    }
    for (const check of crossChecks) {
      try {
        await check(ctx);
      } catch (err) {
        record("cross.runner", "fail", `checks aborted: ${(err as Error).message}`);
        return report(2, description.categories, `checks could not complete: ${(err as Error).message}`);
      }
    }
    return report(results.some((r) => r.status === "fail") ? 1 : 0, description.categories);
  } finally {
    await plugin.close().catch(() => {});
    if (ownDir) rmSync(ownDir, { recursive: true, force: true });
  }
}

const MARK: Record<CheckStatus, string> = { pass: "PASS", fail: "FAIL", warn: "WARN", skip: "SKIP" };

export function formatResult(r: CheckResult): string {
  return `${MARK[r.status]} ${r.id}${r.reason ? ` - ${r.reason}` : ""}`;
}

/**
 * The report as lines: one per check (unless `summaryOnly`, for callers that printed
 * them as they came), then the tally and the overall outcome.
 */
export function formatReport(report: ConformanceReport, summaryOnly = false): string {
  const count = (s: CheckStatus) => report.results.filter((r) => r.status === s).length;
  const lines = summaryOnly ? [] : report.results.map(formatResult);
  lines.push(
    `conformance: ${count("pass") + count("warn")} passed, ${count("fail")} failed, ${count("skip")} skipped`,
  );
  if (report.error) lines.push(`error: ${report.error}`);
  lines.push(
    report.exitCode === 0
      ? "result: conformant"
      : report.exitCode === 1
        ? "result: violations found"
        : "result: could not check",
  );
  return lines.join("\n");
}
