// Describe, GetSchema and Configure checks.
import { create, equals, type JsonObject } from "@bufbuild/protobuf";
import {
  concurrencyModeOf,
  ToolSchemaError,
  toJsonSchema,
  translateSchema,
  type ValidatedTool,
  type ValidatedToolset,
  validateToolSchemas,
} from "@pluggableharness/kernel/domain";
import { PluginCategory } from "@pluggableharness/protocol/common";
import { DiagnosticSeverity } from "@pluggableharness/protocol/config";
import type { Schema } from "@pluggableharness/protocol/schema";
import {
  type GetSchemaResponse,
  GetSchemaResponseSchema,
  ToolService,
} from "@pluggableharness/protocol/tool";
import { checkIdentity } from "../common/checks.ts";
import type { CheckContext } from "../runner.ts";

/** GetSchema answers this fast on a healthy local plugin (it must not touch the network). */
const SCHEMA_BUDGET_MS = 1_000;

export async function checkDescribe(ctx: CheckContext): Promise<void> {
  checkIdentity(ctx, "tool", (await ctx.host.client(ToolService).describe({})).producer, PluginCategory.TOOL);
}

/** Operations validated one by one; an invalid one is used as declared. */
function lenientToolset(response: GetSchemaResponse): ValidatedToolset {
  const tools = new Map<string, ValidatedTool>();
  for (const raw of response.tools) {
    if (tools.has(raw.name)) continue;
    try {
      const one = validateToolSchemas("conformance", create(GetSchemaResponseSchema, { tools: [raw] }));
      tools.set(raw.name, one.tools.get(raw.name)!);
    } catch {
      const json = (schema: Schema | undefined) =>
        schema ? toJsonSchema(translateSchema(schema).schema) : {};
      tools.set(raw.name, {
        provider: "conformance",
        schema: raw,
        concurrency: concurrencyModeOf(raw),
        inputJsonSchema: json(raw.inputSchema),
        outputJsonSchema: json(raw.outputSchema),
      });
    }
  }
  return { provider: "conformance", tools, slashCommands: [], warnings: [] };
}

/**
 * `configured`: the second look at a provider whose operations come from its configuration
 * (operations_from_config), after Configure; its results are recorded as tool.schema.configured.*.
 */
export async function checkSchema(
  ctx: CheckContext,
  configured = false,
): Promise<{ response: GetSchemaResponse; toolset?: ValidatedToolset }> {
  const id = (name: string) => (configured ? `tool.schema.configured.${name}` : `tool.schema.${name}`);
  const client = ctx.host.client(ToolService);
  const t0 = Date.now();
  const response = await client.getSchema({});
  const first = Date.now() - t0;
  const t1 = Date.now();
  const again = await client.getSchema({});
  const second = Date.now() - t1;
  const stable = equals(GetSchemaResponseSchema, response, again);
  const slow = Math.max(first, second) > SCHEMA_BUDGET_MS;
  ctx.record(
    id("cheap"),
    stable && !slow ? "pass" : "fail",
    !stable
      ? "two GetSchema calls returned different answers"
      : slow
        ? `GetSchema took ${Math.max(first, second)} ms (budget ${SCHEMA_BUDGET_MS} ms)`
        : `stable across calls, ${first} ms / ${second} ms`,
  );

  let toolset: ValidatedToolset;
  try {
    toolset = validateToolSchemas("conformance", response);
    const warnings = toolset.warnings.map((w) => `${w.message} [${w.rule}]`);
    ctx.record(
      id("valid"),
      warnings.length ? "warn" : "pass",
      warnings.length
        ? warnings.join("; ")
        : `${response.tools.length} operations: ${response.tools.map((t) => t.name).join(", ")}`,
    );
  } catch (err) {
    if (!(err instanceof ToolSchemaError)) throw err;
    ctx.record(id("valid"), "fail", err.violations.map((v) => `${v.message} [${v.rule}]`).join("; "));
    // Streams are still judged, each operation against its own declaration.
    toolset = lenientToolset(response);
  }
  // Before Configure, a provider whose operations come from its configuration has none yet.
  if (response.tools.length === 0 && !(response.operationsFromConfig && !configured))
    ctx.record(id("operations"), "fail", "GetSchema declares no operation");

  const names = new Set(response.tools.map((t) => t.name));
  const unknownPreview = response.previewSupported.filter((n) => !names.has(n));
  ctx.record(
    id("preview-supported"),
    unknownPreview.length ? "fail" : "pass",
    unknownPreview.length
      ? `preview_supported names unknown operations: ${unknownPreview.join(", ")}`
      : `${response.previewSupported.length} operations advertise Preview`,
  );

  const attrs = response.configSchema?.attributes ?? [];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const a of attrs) {
    if (!a.name) problems.push("an attribute without a name");
    if (seen.has(a.name)) problems.push(`attribute ${a.name} declared twice`);
    seen.add(a.name);
    if (a.sensitive && a.defaultJson !== undefined)
      problems.push(`sensitive attribute ${a.name} has a default`);
    if (a.defaultJson !== undefined) {
      try {
        JSON.parse(a.defaultJson);
      } catch {
        problems.push(`attribute ${a.name} has a default that is not JSON`);
      }
    }
  }
  ctx.record(
    id("config-schema"),
    problems.length ? "fail" : "pass",
    problems.length ? problems.join("; ") : `${attrs.length} attributes`,
  );
  return { response, toolset };
}

export async function checkConfigure(ctx: CheckContext, response: GetSchemaResponse): Promise<boolean> {
  const client = ctx.host.client(ToolService);
  const attrs = response.configSchema?.attributes ?? [];
  const required = attrs.filter((a) => a.required).map((a) => a.name);
  const errorsOf = (diags: { severity: number; summary: string }[]) =>
    diags.filter((d) => d.severity === DiagnosticSeverity.ERROR);
  if (required.length > 0) {
    const res = await client.configure({ config: {} });
    const errs = errorsOf(res.result?.diagnostics ?? []);
    ctx.record(
      "tool.configure.rejects-missing-required",
      errs.length > 0 ? "pass" : "fail",
      errs.length > 0
        ? `an empty block is rejected: ${errs[0]!.summary}`
        : `an empty block was accepted although ${required.join(", ")} ${required.length === 1 ? "is" : "are"} required`,
    );
  } else {
    ctx.record("tool.configure.rejects-missing-required", "skip", "no required attributes");
  }
  const res = await client.configure({ config: ctx.config as JsonObject });
  const diags = res.result?.diagnostics ?? [];
  const errs = errorsOf(diags);
  const secrets = attrs
    .filter((a) => a.sensitive)
    .map((a) => ctx.config[a.name])
    .filter((v): v is string => typeof v === "string" && v.length >= 4);
  const leaked = diags.some((d) => secrets.some((s) => `${d.summary} ${d.detail}`.includes(s)));
  ctx.record(
    "tool.configure.accepts",
    errs.length === 0 && !leaked ? "pass" : "fail",
    leaked
      ? "a diagnostic quotes a sensitive value"
      : errs.length
        ? `the given configuration was rejected: ${errs.map((e) => e.summary).join("; ")}`
        : `${diags.length} diagnostics, none an error`,
  );
  return errs.length === 0;
}
